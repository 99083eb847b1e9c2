"""``InlineEvaluator``: the trace sink that scores each complete trace against a suite.

It runs on the trace buffer's worker thread, never on the application's. Each trace is
converted exactly as ``tooltrail eval`` converts a file (``to_eval_trace``), the suite's
``cases_for(trace)`` picks the policies (and the case a ``tooltrail.case_id`` names), and
every result goes to the ``on_result`` callbacks and, optionally, a JSON-lines results file.
Nothing an evaluation does can raise into the agent: failures are counted and logged (never
with argument values). A suite with judge checks is evaluated off the delivery thread, in a
bounded ``JudgeQueue`` (``pipeline.judge_queue``), so model calls never hold span intake.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from contextlib import ExitStack
from contextvars import Context, copy_context
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import orjson

from tooltrail.checks import default_registry
from tooltrail.judge.active import active_judge
from tooltrail.judge.spend import SpendAccount, use_spend_account
from tooltrail.model import EvalTrace
from tooltrail.pipeline.buffer import DROPPED, LATE, CompletedTrace, TraceSink, is_local_root
from tooltrail.pipeline.judge_queue import (
    DEFAULT_DRAIN_TIMEOUT_S,
    DEFAULT_JUDGE_QUEUE,
    JudgeQueue,
    workers_of,
)
from tooltrail.pipeline.observer import EvaluationObserver, ResultLines
from tooltrail.pipeline.revisions import (
    DEFAULT_MAX_REVISIONS,
    DEFAULT_REVISION_WINDOW_S,
    LIVE_MAX_KEPT_SPANS,
    Judged,
    RevisionStore,
)
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.pipeline.trace_items import SdkItems, TraceItems
from tooltrail.pipeline.verdicts import (
    ERROR_VERDICT,
    NO_VERDICT,
    PARTIAL_VERDICT,
    TraceVerdict,
    trace_verdict,
)
from tooltrail.redact import Redaction
from tooltrail.results import CaseResult
from tooltrail.sampling import (
    DEFAULT_TEST_TRAFFIC,
    SampledRun,
    Sampler,
    TestTraffic,
    annotate_trace,
    is_test_traffic,
)
from tooltrail.score import (
    CasePlans,
    RunJudge,
    asks_judge,
    evaluate_cases,
    judging,
    reads_content,
    reads_usage,
    run_judge_settings,
)
from tooltrail.suite import TestCase, TestSuite

_log = logging.getLogger(__name__)

ResultCallback = Callable[[EvalTrace, list[CaseResult]], None]
#: A judgment: the trace and its results (its results line is written already).
_Outcome = tuple[EvalTrace, list[CaseResult]]
#: ``reason`` of the line naming late data that could not revise a verdict.
UNJUDGED = "late_unjudged"
#: Same switch as the evaluation events: explanations may quote argument values.
ENV_EXPLANATIONS = "TOOLTRAIL_EVALUATION_EXPLANATIONS"


def result_line(
    trace: CompletedTrace,
    eval_trace: EvalTrace,
    results: list[CaseResult],
    *,
    explanations: bool = False,
    revision: int = 0,
    changed: dict[str, Any] | None = None,
    sampled_out: list[str] | None = None,
    test_traffic: bool = False,
) -> bytes:
    """One line of a results file: the trace's verdicts, explanations only when enabled
    (they can quote argument values). Shared by the inline evaluator and ``tooltrail serve``.

    ``verdict`` is ``pass``, ``fail`` or, for a trace handed on before it was known to be
    complete, ``partial``: a piece's missing calls prove nothing, so ``passed`` is then
    ``null`` (the scores are still there to read). ``revision``: 0 for a trace's first
    verdict, 1, 2, ... for each revision (``reason: "late"``, with what ``changed``).
    ``sampled_out``: the ``case/check`` names sampling left out (``tooltrail.sampling``; only
    when some were), ``test_traffic``: the trace is marked as a test run (only then)."""
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
        "revision": revision,
        "partial": trace.partial,
        "reason": trace.reason,
        "verdict": verdict_of(trace.partial, results),
        "passed": None if trace.partial else all(r.passed for r in results),
        "results": rows,
    }
    if changed is not None:
        line["changed"] = changed
    if sampled_out:
        line["sampled_out"] = sampled_out
    if test_traffic:
        line["test_traffic"] = True
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


def score_map(results: list[CaseResult]) -> dict[str, bool]:
    """``case_id/score name`` -> passed, of every score that was not skipped."""
    return {
        f"{result.case_id}/{score.name}": score.passed
        for result in results
        for score in result.scores
        if not getattr(score, "skipped", False)
    }


def changes(
    prior: Judged,
    verdict: str,
    calls: int,
    before: list[CaseResult],
    after: list[CaseResult],
) -> dict[str, Any]:
    """What a revision changed: ``verdict`` and ``calls`` as ``[old, new]``, and ``scores``
    whose outcome differs (``null``: the score was not there)."""
    old, new = score_map(before), score_map(after)
    changed_scores = {
        name: [old.get(name), new.get(name)]
        for name in dict.fromkeys([*old, *new])
        if old.get(name) != new.get(name)
    }
    return {
        "verdict": [prior.verdict, verdict],
        "calls": [prior.calls, calls],
        "scores": changed_scores,
    }


def unjudged_line(trace_id_hex: str, why: str, late_spans: int, late_log_records: int) -> bytes:
    """The one line naming a trace whose late data could not revise its verdict: ``why`` is
    ``revision_limit``, ``window_passed`` or ``not_kept`` (let go to stay within the memory
    cap, given up by the buffer, or never judged); the counts are those of the first such
    piece (later ones are counted only)."""
    line = {
        "time_unix_nano": time.time_ns(),
        "trace_id": trace_id_hex,
        "case_id": None,
        "revision": None,
        "partial": True,
        "reason": UNJUDGED,
        "verdict": None,
        "passed": None,
        "results": [],
        "why": why,
        "late_spans": late_spans,
        "late_log_records": late_log_records,
    }
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


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
        "revision": None,
        "partial": True,
        "reason": trace.reason,
        "verdict": "partial",
        "passed": None,
        "results": [],
        "spans_dropped": trace.dropped_spans,
    }
    return orjson.dumps(line, option=orjson.OPT_APPEND_NEWLINE)


def _explanations_default() -> bool:
    raw = os.environ.get(ENV_EXPLANATIONS, "").strip().lower()
    return raw in ("1", "true", "yes", "on")


class InlineEvaluator:
    """Scores complete traces against ``suite`` (a ``TestSuite`` or the path of a suite file).

    ``on_result``: one callback or several, each called ``(eval_trace, results)`` for every
    trace at least one case applies to, and again for each revision of it (then
    ``eval_trace.metadata["revision"]`` is set, see below). ``results_path``: append one JSON
    line per such trace. ``explanations``: keep score explanations in the results file (they
    may quote argument values); default ``TOOLTRAIL_EVALUATION_EXPLANATIONS``, else off.
    ``skip_partial``: do not score traces handed on partial (their missing calls would fail
    checks); such a piece is kept, and judged with a later piece that completes it.
    ``redaction``: the rules explanations are redacted with (default ``Redaction()``).

    A verdict can be revised: what was judged of a trace is kept ``revision_window_s`` after
    its first verdict (at most ``max_kept_spans`` spans, all traces together), and a piece
    that comes later (spans ending after the trace was handed on, reason ``late``) is merged
    with it, de-duplicated by span id, and judged again: a results line with ``revision``
    1, 2, ... (at most ``max_revisions``) and what ``changed``. Late data that can no longer
    revise is counted and named in one ``late_unjudged`` line per trace. A trace the buffer
    gave up gets one ``dropped`` line (``export_dropped``). Set ``max_revisions=0`` for one
    verdict per trace.

    When a check of the suite asks a judge model, traces are judged in a ``JudgeQueue`` of
    ``judge_queue`` places (and at most ``judge_queue_spans`` spans waiting, when given) served
    by as many threads as the judge's ``concurrency``. The run's
    judge is built from the suite's ``judge:`` block with ``judge_overrides`` over it (the keys
    of ``tooltrail.score.OVERRIDE_KEYS``; ``tooltrail.score.run_judge``) when they name a model or
    no judge is installed where the evaluator is built; else the installed one
    (``judge.use_judge``) is used. ``judge_drain_s`` bounds how long ``shutdown`` waits for
    the queue; the judge built here is closed then.

    In production (``docs/serve.md``, "Production"): a check with ``sample:`` judges its share
    of the traces (``tooltrail.sampling``; counted per check, ``sampling_stats``); ``traffic``
    says which traces are test runs (scored fully, outside sampling and ``spend``, or skipped);
    ``spend`` is the account the judge checks spend from (``pipeline.spend_window``: a budget
    per hour or day); ``forward_to`` are sinks that get each piece once it is judged, its
    verdict on its root span (``pipeline.verdicts``), flushed and shut down after the queue.

    What the traces are made of is ``items`` (``pipeline.trace_items``): the agent's SDK spans
    unless given (``tooltrail serve`` gives ``serve.received_items.ReceivedItems``). A host
    with counters of its own passes an ``observer`` (``pipeline.observer``), told of each
    count, and may send the results lines to ``results`` instead of ``results_path`` (closed
    at ``shutdown``, after the callbacks).
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
        revision_window_s: float = DEFAULT_REVISION_WINDOW_S,
        max_revisions: int = DEFAULT_MAX_REVISIONS,
        max_kept_spans: int = LIVE_MAX_KEPT_SPANS,
        judge_overrides: Mapping[str, Any] | None = None,
        judge_queue: int = DEFAULT_JUDGE_QUEUE,
        judge_queue_spans: int | None = None,
        judge_drain_s: float = DEFAULT_DRAIN_TIMEOUT_S,
        traffic: TestTraffic = DEFAULT_TEST_TRAFFIC,
        spend: SpendAccount | None = None,
        forward_to: Iterable[TraceSink] = (),
        items: TraceItems[Any, Any] | None = None,
        observer: EvaluationObserver | None = None,
        results: ResultLines | None = None,
    ) -> None:
        if results is not None and results_path is not None:
            raise ValueError("give results_path or results, not both")
        self.suite = suite if isinstance(suite, TestSuite) else TestSuite.load(Path(suite))
        (registry or default_registry()).check(self.suite)
        if on_result is None:
            self.callbacks: list[ResultCallback] = []
        elif callable(on_result):
            self.callbacks = [on_result]
        else:
            self.callbacks = list(on_result)
        self.registry = registry
        #: Each case compiled once for every trace this evaluator judges (the suite is fixed).
        self.plans = CasePlans(registry)
        #: The rules score explanations are redacted with (``tooltrail.redact``).
        self.redaction = redaction
        #: Whether traces are converted with what they used (a budget of the suite reads it).
        self.usage = reads_usage(self.suite.cases, registry)
        #: Whether traces are converted with their content (a check of the suite reads it).
        self.content = reads_content(self.suite.cases, registry)
        self.explanations = _explanations_default() if explanations is None else explanations
        self.skip_partial = skip_partial
        #: How the items of a trace are read and kept (``pipeline.trace_items``).
        self.items: TraceItems[Any, Any] = SdkItems() if items is None else items
        # Bound once: each is called per trace, ``_key`` per item of a late piece.
        self._to_trace = self.items.convert
        self._pack = self.items.pack
        self._unpack = self.items.unpack
        self._unique = self.items.unique
        self._key = self.items.key
        self._sizes = self.items.sizes
        self._late_records = self.items.late_records
        #: Told of every count and of each judged trace (``None``: nobody is).
        self._observer = observer
        self._counted = observer.counted if observer is not None else None
        self.results_path = os.fspath(results_path) if results_path is not None else None
        self._file: IO[bytes] | None = None
        self._file_lock = threading.Lock()
        if self.results_path is not None:
            directory = os.path.dirname(self.results_path)
            if directory:
                os.makedirs(directory, exist_ok=True)
            self._file = open(self.results_path, "ab")  # noqa: SIM115 - closed in shutdown
        #: The host's results lines (``results``), else this evaluator's own file.
        self._results = results
        self._write_line = results.append if results is not None else self._write_file
        #: ``results.flush``; a ``ResultLines`` of before ``flush`` existed writes at once.
        self._flush_results = getattr(results, "flush", None)
        self._warn = ThrottledWarning(_log)
        self.revisions = RevisionStore(
            window_s=revision_window_s,
            max_revisions=max_revisions,
            max_items=max_kept_spans,
            on_release=self.items.release,
        )
        self._store_lock = threading.Lock()
        self.traces_evaluated = 0
        self.results_count = 0
        self.errors = 0
        self.traces_dropped = 0
        #: Pieces of traces judged already (each merged and judged again, or named unjudged).
        self.late_pieces = 0
        #: Revision lines written, and those whose verdict differs from the one before.
        self.traces_revised = 0
        self.verdicts_changed = 0
        #: Late spans that could not revise a verdict (each trace named in one line).
        self.late_spans_unjudged = 0
        #: Spans of late pieces already judged (an exporter's retry): nothing to revise.
        self.spans_duplicate = 0
        #: The same for log records (always 0 in-process: SDK spans are no log records):
        #: late ones that could not revise, late ones, and repeated ones left out.
        self.log_records_unjudged = 0
        self.log_records_late = 0
        self.log_records_duplicate = 0
        self._count_lock = threading.Lock()
        #: Which traces are test runs, and which checks judge a sample (``tooltrail.sampling``).
        self.traffic = traffic
        self.sampler = Sampler(self.suite.cases, traffic)
        #: Per sampled check (``case/check``): first verdicts it judged, and sampled out.
        self.sampled_in = {check.key: 0 for check in self.sampler.checks}
        self.sampled_out = {check.key: 0 for check in self.sampler.checks}
        #: Traces marked as test runs (first verdicts), and of them those left out (``skip``).
        self.traces_test = 0
        self.traces_test_skipped = 0
        #: The account judge checks spend from (``None``: only the judge's own budget).
        self.spend = spend
        #: Sinks that get each piece once judged, its verdict on its root (``pipeline.verdicts``).
        self.forward_to: list[TraceSink] = list(forward_to)
        #: Where traces wait for a judge model (``None``: the suite asks none).
        self.judge_queue: JudgeQueue | None = None
        self.judge_drain_s = judge_drain_s
        #: The judge built for this evaluator (``tooltrail.score.RunJudge``), for its totals.
        self.run_judge: RunJudge | None = None
        self._judging = ExitStack()
        if asks_judge(self.suite.cases, registry):
            context = self._judge_context(judge_overrides)
            if spend is not None:
                context.run(self._judging.enter_context, use_spend_account(spend))
            self.judge_queue = JudgeQueue(
                self._judge_worker_trace,
                context=context,
                workers=workers_of(context.run(active_judge)),
                max_queued=judge_queue,
                max_spans=judge_queue_spans,
            )

    def _judge_context(self, overrides: Mapping[str, Any] | None) -> Context:
        """A copy of this context with the run's judge installed in it (for the queue's
        workers); raises ``JudgeConfigError`` for bad settings, before any trace is read."""
        context = copy_context()
        settings = run_judge_settings(self.suite, overrides, self.registry)
        if settings is not None and (
            settings.model is not None or context.run(active_judge) is None
        ):
            self.run_judge = context.run(self._judging.enter_context, judging(settings))
        return context

    def add_callback(self, callback: ResultCallback) -> None:
        """Also send results to ``callback``."""
        self.callbacks.append(callback)

    def export_trace(self, trace: CompletedTrace) -> None:
        """Score one complete trace, or revise the verdict of its trace; never raises. With
        judge checks, the trace is queued for a judge worker and this returns at once."""
        if self.judge_queue is not None:
            self.judge_queue.submit(trace)
        else:
            self._evaluate_now(trace)

    def idle(self) -> None:
        """The trace buffer has nothing more ready (``TraceSink.idle``): the results lines
        held are written now."""
        self.flush_lines()

    def flush_lines(self) -> None:
        """Write the results lines ``results`` holds (``ResultLines.flush``); never raises (a
        failed write counts as an error, as a failed line does). ``serve`` calls it after
        reading its counters, so a reader that sees a trace counted finds its line."""
        if self._flush_results is None:
            return
        try:
            self._flush_results()
        except OSError as exc:
            self._line_failed(exc)

    def _judge_worker_trace(self, trace: CompletedTrace) -> None:
        """One trace on a judge worker, its results line written at once (judged traces come
        one by one, seconds apart: nothing to batch, and the buffer's ``idle`` came before)."""
        self._evaluate_now(trace)
        self.flush_lines()

    def _evaluate_now(self, trace: CompletedTrace) -> None:
        later = trace.continued or trace.reason == LATE
        if trace.partial and self.skip_partial and not later:
            # Not judged, but kept: a later piece that completes the trace is judged with it.
            piece = Judged(
                kept=self._pack(trace.spans),
                size=len(trace.spans),
                partial=True,
                judged_at=time.monotonic(),
            )
            with self._store_lock:
                self.revisions.keep(trace.trace_id, piece)
            self._hand_on(trace, PARTIAL_VERDICT)
            return
        try:
            outcome = self._revise(trace) if later else self._first(trace)
        except Exception as exc:  # noqa: BLE001 - an evaluation error never reaches the agent
            self._count(errors=1)
            if self._observer is not None:
                self._observer.failed()
            self._warn.warn(
                "evaluate", "tooltrail: could not evaluate a trace (%s)", type(exc).__name__
            )
            self._hand_on(trace, ERROR_VERDICT)
            return
        if outcome is None:
            self._hand_on(trace, NO_VERDICT)
            return
        eval_trace, results = outcome
        if self.forward_to:  # (the verdict's words cost 3% of serve's evaluation: only if read)
            self._hand_on(trace, trace_verdict(eval_trace, results))
        for callback in self.callbacks:
            try:
                callback(eval_trace, results)
            except Exception as exc:  # noqa: BLE001
                self._count(errors=1)
                self._warn.warn(
                    f"callback:{id(callback)}",
                    "tooltrail: result callback %s failed (%s)",
                    getattr(callback, "__qualname__", type(callback).__name__),
                    type(exc).__name__,
                )

    def _hand_on(self, trace: CompletedTrace, verdict: TraceVerdict) -> None:
        """The judged piece to every ``forward_to`` sink, with its verdict; never raises."""
        if not self.forward_to:
            return
        piece = replace(trace, verdict=verdict)
        for sink in self.forward_to:
            try:
                sink.export_trace(piece)
            except Exception as exc:  # noqa: BLE001
                self._count(errors=1)
                self._warn.warn(
                    f"forward:{id(sink)}",
                    "tooltrail: %s could not take a judged trace (%s)",
                    type(sink).__name__,
                    type(exc).__name__,
                )

    def export_dropped(self, trace: CompletedTrace) -> None:
        """A trace the buffer gave up: one ``dropped`` line in the results file."""
        self._count(traces_dropped=1)
        with self._store_lock:  # named by this line: its later spans are counted only
            self.revisions.name_once(trace.trace_id, DROPPED)
        self._write_line(dropped_line(trace))
        if self._observer is not None:
            self._observer.dropped()

    # -- judging -----------------------------------------------------------------------------

    def _first(self, trace: CompletedTrace) -> _Outcome | None:
        items = self._unique(trace.spans)
        if len(items) != len(trace.spans):  # repeated log records (a retried logs export)
            self._count(log_records_duplicate=len(trace.spans) - len(items))
        return self._judge(trace, items, trace.partial, None)

    def _revise(self, trace: CompletedTrace) -> _Outcome | None:
        """Merge a later piece with what was judged of its trace and judge it again."""
        self._count(late_pieces=1)
        records = self._late_records(trace.spans)
        if records:
            self._count(log_records_late=records)
        if trace.given_up:  # the buffer's notice names the trace (``export_dropped``)
            spans, records = self._sizes(trace.spans)
            self._count(late_spans_unjudged=spans, log_records_unjudged=records)
            return None
        with self._store_lock:
            found = self.revisions.find(trace.trace_id)
        if isinstance(found, str):
            self._unjudged(trace, found)
            return None
        items = self._unpack(found.kept, trace.trace_id)
        key_of = self._key
        keys = found.keys
        if keys is None:
            keys = found.keys = {key_of(item) for item in items}
        new: list[Any] = []
        duplicates: list[Any] = []
        for item in trace.spans:
            key = key_of(item)
            if key in keys:
                duplicates.append(item)
            else:
                keys.add(key)
                new.append(item)
        if duplicates:  # an exporter's retry: nothing to revise
            spans, records = self._sizes(duplicates)
            self._count(spans_duplicate=spans, log_records_duplicate=records)
        if not new:
            return None
        # A late piece the buffer found complete that holds the root completes a trace that
        # was judged without it (handed on at max_age, or evicted).
        partial = found.partial and not (trace.reason == LATE and any(map(is_local_root, new)))
        return self._judge(trace, items + new, partial, found)

    def _judge(
        self, trace: CompletedTrace, items: list[Any], partial: bool, prior: Judged | None
    ) -> _Outcome | None:
        """Judge ``items`` (a whole trace so far); keep them for a revision; the results line."""
        eval_trace = self._to_trace(trace, items, partial, self.usage, self.content)
        cases = self.suite.cases_for(eval_trace) if eval_trace is not None else []
        test = eval_trace is not None and bool(cases) and is_test_traffic(eval_trace, self.traffic)
        skip = test and self.traffic.mode == "skip"
        run: SampledRun | None = None
        results: list[CaseResult] = []
        if cases and eval_trace is not None and not skip:
            results, run = self._evaluate(cases, eval_trace, test)
        kept = self._pack(items) if self.revisions.enabled else None
        if prior is None:
            judged = Judged(kept=kept, size=len(items), partial=partial, judged_at=time.monotonic())
        else:
            judged = prior  # the same entry, judged once more
            judged.kept, judged.size, judged.partial = kept, len(items), partial
            judged.rejudged += 1
        first_conversion = eval_trace is not None and not judged.converted
        judged.converted = judged.converted or first_conversion
        if not cases or eval_trace is None or skip:
            with self._store_lock:
                self.revisions.keep(trace.trace_id, judged)
            if eval_trace is not None and first_conversion:
                if skip:  # a test run left out: counted, no line (``TestTraffic.mode``)
                    self._count(traces_test=1, traces_test_skipped=1)
                if self._observer is not None:
                    self._observer.judged(trace.partial, bool(cases))
            return None
        first_verdict = judged.revision < 0
        verdict = verdict_of(partial, results)
        calls = len(eval_trace.tool_calls)
        revision = judged.revision + 1
        changed = None
        if revision > 0:
            eval_trace.metadata["revision"] = revision
            if judged.revision >= 0:
                eval_trace.metadata["supersedes_revision"] = judged.revision
                before = self._results_before(trace, items[: judged.judged_items], judged)
                changed = changes(judged, verdict, calls, before, results)
        verdict_changed = judged.verdict != verdict
        judged.revision, judged.verdict, judged.calls, judged.judged_items = (
            revision,
            verdict,
            calls,
            len(items),
        )
        with self._store_lock:
            self.revisions.keep(trace.trace_id, judged)
        piece = trace
        if prior is not None:
            piece = CompletedTrace(trace.trace_id, [], partial=partial, reason=LATE)
        line = result_line(
            piece,
            eval_trace,
            results,
            explanations=self.explanations,
            revision=revision,
            changed=changed,
            sampled_out=[check.key for check in run.sampled_out] if run is not None else None,
            test_traffic=test,
        )
        # The line first, then the counts: a reader of the counters that sees the trace
        # evaluated (or revised) finds its line in the results file (when ``results`` holds
        # lines, once it flushes them: ``serve`` flushes after reading its counters).
        try:
            self._write_line(line)
        except OSError as exc:  # the trace was judged: a sink error, not an evaluation error
            self._line_failed(exc)
        # One locked update per trace, its results with it.
        if revision > 0:
            self._count(
                traces_revised=1,
                verdicts_changed=int(verdict_changed),
                results_count=len(results),
            )
        else:
            self._count(traces_evaluated=1, results_count=len(results))
        if first_verdict:
            self._count_sampling(run, test)
            # Before ``judged``: a reader that sees a trace evaluated sees its cases too.
            if self._observer is not None:
                self._observer.first_verdict(results)
        if first_conversion and self._observer is not None:
            self._observer.judged(trace.partial, True)
        return eval_trace, results

    def _results_before(
        self, trace: CompletedTrace, items: list[Any], judged: Judged
    ) -> list[CaseResult]:
        """The results of the revision a new one supersedes, judged again from the ``items``
        it was judged on: only the items are kept, so what a judged trace holds stays small."""
        partial = judged.verdict == "partial"
        eval_trace = self._to_trace(trace, items, partial, self.usage, self.content)
        if eval_trace is None:
            return []
        cases = self.suite.cases_for(eval_trace)
        if not cases:
            return []
        test = is_test_traffic(eval_trace, self.traffic)
        if test and self.traffic.mode == "skip":
            return []
        return self._evaluate(cases, eval_trace, test)[0]

    def _evaluate(
        self, cases: list[TestCase], eval_trace: EvalTrace, test: bool
    ) -> tuple[list[CaseResult], SampledRun | None]:
        """``cases`` on ``eval_trace``, without the checks sampling leaves out (each a skipped
        score saying so), a test run's judge checks outside the spend account."""
        run = self.sampler.decide(cases, eval_trace, test) if self.sampler.active else None
        chosen = run.cases if run is not None else cases
        with ExitStack() as outside:
            if test and self.spend is not None:
                outside.enter_context(use_spend_account(None))
            results = (
                evaluate_cases(chosen, eval_trace, redaction=self.redaction, plans=self.plans)
                if chosen
                else []
            )
        if run is not None:
            results = self.sampler.finish(run, results, eval_trace)
        if test or (run is not None and (run.out or run.sampled_in)):
            annotate_trace(eval_trace, run if run is not None else SampledRun([], test=test))
        return results, run

    def _count_sampling(self, run: SampledRun | None, test: bool) -> None:
        """The sampled checks of a first verdict, per check; a test run's trace."""
        if test:
            self._count(traces_test=1)
        if run is None or not (run.sampled_in or run.out):
            return
        with self._count_lock:
            for check in run.sampled_in:
                self.sampled_in[check.key] = self.sampled_in.get(check.key, 0) + 1
            for check in run.sampled_out:
                self.sampled_out[check.key] = self.sampled_out.get(check.key, 0) + 1

    def sampling_stats(self) -> dict[str, Any]:
        """Per sampled check (``case/check``): its rate and how many first verdicts it judged and
        sampled out; traces marked as test runs, and those left out (``skip``)."""
        with self._count_lock:
            checks = {
                check.key: {
                    "rate": check.sample.rate,
                    "by": check.sample.by,
                    "judged": self.sampled_in.get(check.key, 0),
                    "sampled_out": self.sampled_out.get(check.key, 0),
                }
                for check in self.sampler.checks
            }
            return {
                "sampling": checks,
                "traces_test": self.traces_test,
                "traces_test_skipped": self.traces_test_skipped,
            }

    def _unjudged(self, trace: CompletedTrace, why: str) -> None:
        """Late data that cannot revise: counted, and its trace named in one line."""
        spans, records = self._sizes(trace.spans)
        with self._store_lock:
            first = self.revisions.name_once(trace.trace_id, why)
        if first:
            self._write_line(unjudged_line(trace.trace_id_hex, why, spans, records))
        # After the line: who sees the spans counted finds the trace named.
        self._count(late_spans_unjudged=spans, log_records_unjudged=records)
        self._warn.warn(
            "late-unjudged",
            "tooltrail: late spans of judged traces could not revise the verdict (%s; "
            "counter late_spans_unjudged, a late_unjudged results line names each trace)",
            why,
        )

    # -- counts and results lines ------------------------------------------------------------

    def _count(self, **deltas: int) -> None:
        # Judge workers count from several threads at once.
        with self._count_lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name, 0) + delta)
        if self._counted is not None:  # after: the host's counters follow this evaluator's
            self._counted(deltas)

    def judge_stats(self) -> dict[str, Any]:
        """The judge queue's counters (``judge_queue_*``) and, for a judge built here, what it
        cost (``judge_calls``, ``judge_cached``, ``judge_skipped``, ``judge_errors``,
        ``judge_input_tokens``, ``judge_output_tokens``, ``judge_cost_usd``); empty when the
        suite asks no judge."""
        if self.judge_queue is None:
            return {}
        stats: dict[str, Any] = dict(self.judge_queue.stats())
        if self.run_judge is not None:
            totals = self.run_judge.totals()
            for name in ("calls", "cached", "skipped", "errors", "input_tokens", "output_tokens"):
                stats[f"judge_{name}"] = getattr(totals, name)
            stats["judge_cost_usd"] = round(totals.cost_usd, 6)
        return stats

    def _line_failed(self, exc: OSError) -> None:
        self._count(errors=1)
        self._warn.warn(
            "results-line", "tooltrail: could not write a results line (%s)", type(exc).__name__
        )

    def _write_file(self, data: bytes) -> None:
        """A results line to this evaluator's own file (``results_path``), if it has one."""
        if self._file is None:
            return
        with self._file_lock:
            if self._file is not None:
                self._file.write(data)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        ok = True
        if self.judge_queue is not None:  # what is queued is judged first, within the time
            ok = self.judge_queue.drain(timeout_millis / 1000)
        self.flush_lines()
        with self._file_lock:
            if self._file is not None:
                self._file.flush()
        for callback in [*self.callbacks, *self.forward_to]:
            flush = getattr(callback, "force_flush", None)
            if callable(flush):
                try:
                    ok = flush(timeout_millis) is not False and ok
                except Exception:  # noqa: BLE001
                    ok = False
        return ok

    def shutdown(self) -> None:
        if self.judge_queue is not None:
            self.judge_queue.shutdown(self.judge_drain_s)
            self.judge_queue.context.run(self._judging.close)
        with self._file_lock:
            if self._file is not None:
                self._file.close()
                self._file = None
        for callback in [*self.callbacks, *self.forward_to]:
            stop = getattr(callback, "shutdown", None)
            if callable(stop):
                try:
                    stop()
                except Exception:  # noqa: BLE001
                    self._count(errors=1)
        if self._results is not None:
            try:
                self._results.close()
            except OSError as exc:
                self._line_failed(exc)
