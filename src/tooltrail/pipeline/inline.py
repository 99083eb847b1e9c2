"""``InlineEvaluator``: the trace sink that scores each complete trace against a suite.

It runs on the trace buffer's worker thread, never on the application's. Each trace is
converted exactly as ``tooltrail eval`` converts a file (``to_eval_trace``), the suite's
``cases_for(trace)`` picks the policies (and the case a ``tooltrail.case_id`` names), and
every result goes to the ``on_result`` callbacks and, optionally, a JSON-lines results file.
Nothing an evaluation does can raise into the agent: failures are counted and logged (never
with argument values).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import orjson

from tooltrail.checks import default_registry
from tooltrail.convert import to_eval_trace
from tooltrail.evaluate import CaseResult, evaluate_cases, reads_usage
from tooltrail.model import EvalTrace
from tooltrail.pipeline.adapt import otlp_spans
from tooltrail.pipeline.buffer import LATE, CompletedTrace
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.redact import Redaction
from tooltrail.suite import TestSuite

_log = logging.getLogger(__name__)

ResultCallback = Callable[[EvalTrace, list[CaseResult]], None]
#: Same switch as the evaluation events: explanations may quote argument values.
ENV_EXPLANATIONS = "TOOLTRAIL_EVALUATION_EXPLANATIONS"


def result_line(
    trace: CompletedTrace,
    eval_trace: EvalTrace,
    results: list[CaseResult],
    *,
    explanations: bool = False,
) -> bytes:
    """One line of a results file: the trace's verdicts, explanations only when enabled
    (they can quote argument values). Shared by the inline evaluator and ``tooltrail serve``.

    ``verdict`` is ``pass``, ``fail`` or, for a trace handed on before it was known to be
    complete, ``partial``: a piece's missing calls prove nothing, so ``passed`` is then
    ``null`` (the scores are still there to read)."""
    rows = []
    for result in results:
        row = result.to_dict()
        if not explanations:
            for score in row["scores"]:
                score.pop("explanation", None)
        rows.append(row)
    line = {
        "time_unix_nano": time.time_ns(),
        "trace_id": trace.trace_id_hex,
        "case_id": eval_trace.metadata.get("case_id"),
        "partial": trace.partial,
        "reason": trace.reason,
        "verdict": verdict_of(trace.partial, results),
        "passed": None if trace.partial else all(r.passed for r in results),
        "results": rows,
    }
    return orjson.dumps(line) + b"\n"


def verdict_of(partial: bool, results: list[CaseResult]) -> str:
    """``partial`` for a piece of a trace, else ``pass`` or ``fail``."""
    if partial:
        return "partial"
    return "pass" if all(r.passed for r in results) else "fail"


def dropped_line(trace: CompletedTrace) -> bytes:
    """The results line of a trace the buffer gave up: named, partial, not evaluated (whether
    a case would have applied is unknown)."""
    line = {
        "time_unix_nano": time.time_ns(),
        "trace_id": trace.trace_id_hex,
        "case_id": None,
        "partial": True,
        "reason": trace.reason,
        "verdict": "partial",
        "passed": None,
        "results": [],
        "spans_dropped": trace.dropped_spans,
    }
    return orjson.dumps(line) + b"\n"


def _explanations_default() -> bool:
    raw = os.environ.get(ENV_EXPLANATIONS, "").strip().lower()
    return raw in ("1", "true", "yes", "on")


class InlineEvaluator:
    """Scores complete traces against ``suite`` (a ``TestSuite`` or the path of a suite file).

    ``on_result``: one callback or several, each called ``(eval_trace, results)`` for every
    trace at least one case applies to. ``results_path``: append one JSON line per such trace.
    ``explanations``: keep score explanations in the results file (they may quote argument
    values); default ``TOOLTRAIL_EVALUATION_EXPLANATIONS``, else off. ``skip_partial``: do not
    score traces handed on partial (their missing calls would fail checks). ``redaction``: the
    rules explanations are redacted with (default ``Redaction()``).

    One verdict per trace: a ``late`` piece (spans of a trace already handed on) is not
    scored again (counted in ``late_pieces``), and a trace the buffer gave up gets one
    ``dropped`` line in the results file (``export_dropped``).
    """

    def __init__(
        self,
        suite: TestSuite | str | os.PathLike[str],
        *,
        on_result: ResultCallback | Iterable[ResultCallback] | None = None,
        results_path: str | os.PathLike[str] | None = None,
        registry: Any = None,
        explanations: bool | None = None,
        skip_partial: bool = False,
        redaction: Redaction | None = None,
    ) -> None:
        self.suite = suite if isinstance(suite, TestSuite) else TestSuite.load(Path(suite))
        (registry or default_registry()).check(self.suite)
        if on_result is None:
            self.callbacks: list[ResultCallback] = []
        elif callable(on_result):
            self.callbacks = [on_result]
        else:
            self.callbacks = list(on_result)
        self.registry = registry
        #: The rules score explanations are redacted with (``tooltrail.redact``).
        self.redaction = redaction
        #: Whether traces are converted with what they used (a budget of the suite reads it).
        self.usage = reads_usage(self.suite.cases, registry)
        self.explanations = _explanations_default() if explanations is None else explanations
        self.skip_partial = skip_partial
        self.results_path = os.fspath(results_path) if results_path is not None else None
        self._file: IO[bytes] | None = None
        self._file_lock = threading.Lock()
        if self.results_path is not None:
            directory = os.path.dirname(self.results_path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            self._file = open(self.results_path, "ab")  # noqa: SIM115 - closed in shutdown
        self._warn = ThrottledWarning(_log)
        self.traces_evaluated = 0
        self.results_count = 0
        self.errors = 0
        self.late_pieces = 0
        self.traces_dropped = 0

    def add_callback(self, callback: ResultCallback) -> None:
        """Also send results to ``callback``."""
        self.callbacks.append(callback)

    def export_trace(self, trace: CompletedTrace) -> None:
        """Score one complete trace; never raises."""
        if trace.partial and self.skip_partial:
            return
        try:
            evaluated = self.evaluate(trace)
        except Exception as exc:  # noqa: BLE001 - an evaluation error never reaches the agent
            self.errors += 1
            self._warn.warn(
                "evaluate", "tooltrail: could not evaluate a trace (%s)", type(exc).__name__
            )
            return
        if evaluated is None:
            return
        eval_trace, results = evaluated
        self.traces_evaluated += 1
        self.results_count += len(results)
        if self._file is not None:
            self._write(eval_trace, trace, results)
        for callback in self.callbacks:
            try:
                callback(eval_trace, results)
            except Exception as exc:  # noqa: BLE001
                self.errors += 1
                self._warn.warn(
                    f"callback:{id(callback)}",
                    "tooltrail: result callback %s failed (%s)",
                    getattr(callback, "__qualname__", type(callback).__name__),
                    type(exc).__name__,
                )

    def export_dropped(self, trace: CompletedTrace) -> None:
        """A trace the buffer gave up: one ``dropped`` line in the results file."""
        self.traces_dropped += 1
        if self._file is None:
            return
        data = dropped_line(trace)
        with self._file_lock:
            if self._file is not None:
                self._file.write(data)

    def evaluate(self, trace: CompletedTrace) -> tuple[EvalTrace, list[CaseResult]] | None:
        """The trace as ``EvalTrace`` and its results, or ``None`` when no case applies (or
        when it is a ``late`` piece: its trace was judged already)."""
        if trace.reason == LATE:
            self.late_pieces += 1
            return None
        eval_trace = to_eval_trace(otlp_spans(trace.spans), usage=self.usage)
        eval_trace.partial = eval_trace.partial or trace.partial
        cases = self.suite.cases_for(eval_trace)
        if not cases:
            return None
        results = evaluate_cases(
            cases, eval_trace, registry=self.registry, redaction=self.redaction
        )
        return eval_trace, results

    def _write(
        self, eval_trace: EvalTrace, trace: CompletedTrace, results: list[CaseResult]
    ) -> None:
        data = result_line(trace, eval_trace, results, explanations=self.explanations)
        with self._file_lock:
            if self._file is not None:
                self._file.write(data)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        with self._file_lock:
            if self._file is not None:
                self._file.flush()
        ok = True
        for callback in self.callbacks:
            flush = getattr(callback, "force_flush", None)
            if callable(flush):
                try:
                    ok = flush(timeout_millis) is not False and ok
                except Exception:  # noqa: BLE001
                    ok = False
        return ok

    def shutdown(self) -> None:
        with self._file_lock:
            if self._file is not None:
                self._file.close()
                self._file = None
        for callback in self.callbacks:
            stop = getattr(callback, "shutdown", None)
            if callable(stop):
                try:
                    stop()
                except Exception:  # noqa: BLE001
                    self.errors += 1
