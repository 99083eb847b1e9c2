"""What happens to a received trace once the buffer hands it on: dump, score, release.

Each stage is a trace sink of the live path (``export_trace(trace)``, ``force_flush``,
``shutdown``), called by the ``TraceBuffer`` in order on its worker thread. The spans in a
``CompletedTrace`` here are ``ReceivedSpan`` wrappers; each stage unwraps them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

from tooltrail.convert import to_eval_trace
from tooltrail.evaluate import CaseResult, evaluate_cases
from tooltrail.live.buffer import LATE, CompletedTrace
from tooltrail.live.inline import InlineEvaluator, result_line
from tooltrail.model import EvalTrace
from tooltrail.otlp import OtlpFileWriter, Span
from tooltrail.serve.counters import ReceiverCounters


def spans_of(trace: CompletedTrace) -> list[Span]:
    """The decoded spans inside the buffer's ``ReceivedSpan`` wrappers."""
    return [received.span for received in trace.spans]  # type: ignore[attr-defined]


class ResultsFile:
    """The JSON-lines results file, one line per evaluated trace, in the live inline
    evaluator's line format. Each line is one ``write`` to a file opened for appending, so
    several processes can share the file without interleaving their lines."""

    def __init__(self, path: str | os.PathLike[str], *, explanations: bool = False) -> None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.explanations = explanations
        self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def write(
        self, trace: CompletedTrace, eval_trace: EvalTrace, results: list[CaseResult]
    ) -> None:
        data = result_line(trace, eval_trace, results, explanations=self.explanations)
        with self._lock:
            if self._fd is not None:
                os.write(self._fd, data)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


class ReceivedTraceEvaluator(InlineEvaluator):
    """The live inline evaluator, fed decoded OTLP spans instead of SDK spans.

    Pieces that arrive after their trace was already evaluated (``late``) are not scored again:
    a verdict on a handful of stragglers would only be noise. They are still dumped and
    forwarded, and counted.
    """

    def __init__(
        self,
        suite: Any,
        counters: ReceiverCounters,
        *,
        results: ResultsFile | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(suite, **kwargs)
        self._counters = counters
        self._results = results
        self.add_callback(self._count)

    def evaluate(self, trace: CompletedTrace) -> tuple[EvalTrace, list[CaseResult]] | None:
        if trace.reason == LATE:
            self._counters.add(late_pieces=1)
            return None
        try:
            eval_trace = to_eval_trace(spans_of(trace))
            eval_trace.partial = eval_trace.partial or trace.partial
            cases = self.suite.cases_for(eval_trace)
            results = evaluate_cases(cases, eval_trace, registry=self.registry) if cases else []
        except Exception:
            self._counters.add(evaluation_errors=1, traces_evaluated=1)
            raise
        self._counters.add(
            traces_evaluated=1,
            traces_partial=1 if trace.partial else 0,
            traces_unmatched=0 if cases else 1,
        )
        if not cases:
            return None
        if self._results is not None:
            self._results.write(trace, eval_trace, results)
        return eval_trace, results

    def shutdown(self) -> None:
        super().shutdown()
        if self._results is not None:
            self._results.close()

    def _count(self, trace: EvalTrace, results: list[CaseResult]) -> None:
        passed = sum(1 for r in results if r.passed)
        self._counters.add(cases_passed=passed, cases_failed=len(results) - passed)


class DumpSink:
    """Writes each received trace as one OTLP request to a file in the collector's format."""

    def __init__(self, path: str | os.PathLike[str], *, format: str = "json") -> None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.writer = OtlpFileWriter(path, format=format)  # type: ignore[arg-type]

    def export_trace(self, trace: CompletedTrace) -> None:
        self.writer.write_spans(spans_of(trace))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.writer.flush()
        return True

    def shutdown(self) -> None:
        self.writer.close()


class ReleaseSink:
    """The last stage: tells the intake these spans are done, so it may take more."""

    def __init__(self, release: Callable[[int, int], None]) -> None:
        self._release = release

    def export_trace(self, trace: CompletedTrace) -> None:
        self._release(trace.trace_id, len(trace.spans))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None
