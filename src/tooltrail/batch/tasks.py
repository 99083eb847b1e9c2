"""The two task functions every executor runs: evaluate one chunk, evaluate merged traces.

A chunk task reads its records, keeps compact per-trace facts (never the decoded spans),
groups traces (by trace, or by conversation), converts, matches cases, evaluates, and returns
per-group outcomes: verdicts, the trace ids the group holds and where its records lie. The
driver finds groups seen in more than one chunk and gives them to a merge task, which re-reads
only those records, keeps only those traces and evaluates each merged group once.

Both are module-level functions of picklable dataclasses, so a process pool and a Dask cluster
run them unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from tooltrail.batch.chunks import Chunk, Extent
from tooltrail.batch.compact import RowCompactor
from tooltrail.batch.matching import row_label, unmatched
from tooltrail.batch.outcomes import ChunkOutcome, GroupOutcome, Position
from tooltrail.checks import default_registry
from tooltrail.convert.collect import TraceCollector, conversations
from tooltrail.convert.decoded import Decoded
from tooltrail.convert.engine import SPANS, Decoding, Needs, decoding_for, engine, reading_path
from tooltrail.convert.facts import OpenTrace
from tooltrail.convert.transcripts import transcript_spans
from tooltrail.gc_pause import collect_young, gc_paused
from tooltrail.model import EvalTrace
from tooltrail.otlp import DEFAULT_LIMITS, Diagnostic, Limits
from tooltrail.otlp.read.ranges import read_range
from tooltrail.results import CaseResult
from tooltrail.sampling import Sampler, is_test_traffic
from tooltrail.score import (
    CasePlans,
    RunJudge,
    evaluate_cases,
    parallel_map,
    process_judging,
    suite_needs,
)
from tooltrail.settings import redaction_from_env
from tooltrail.suite import TestCase, TestSuite

if TYPE_CHECKING:
    from tooltrail.judge import JudgeSettings
    from tooltrail.redact import Redaction

Grouping = Literal["trace", "conversation"]


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """What every task needs besides its input; shipped with each task, so kept small."""

    suite: TestSuite
    group: Grouping = "trace"
    limits: Limits | None = None
    #: The run's judge (``None``: no judge check): each process builds one runner from it.
    judge: JudgeSettings | None = None


@dataclass(frozen=True, slots=True)
class ChunkTask:
    settings: EvalSettings
    chunk: Chunk


@dataclass(frozen=True, slots=True)
class MergeTask:
    """Traces seen in several chunks: read ``parts`` (chunks narrowed to those traces'
    records), keep only ``positions``' trace ids, evaluate."""

    settings: EvalSettings
    parts: tuple[Chunk, ...]
    #: trace id -> its first appearance in the chunk pass (orders the merged rows).
    positions: dict[str, Position]


def evaluate_chunk(task: ChunkTask) -> ChunkOutcome:
    """Evaluate every group of one chunk; groups that continue elsewhere are redone by a merge."""
    with gc_paused():
        outcome = _evaluate_chunk(task)
        collect_young()
        return outcome


def read_chunk(
    chunk: Chunk,
    limits: Limits | None,
    diagnostics: list[Diagnostic],
    decoding: Decoding = SPANS,
) -> Iterator[tuple[Extent, Sequence[Decoded]]]:
    """The records of ``chunk``, read by ``tooltrail.otlp`` and decoded by the engine as
    ``decoding`` says (the tasks': ``convert.engine.decoding_for`` the suite's needs): a plain
    span comes as a ``SpanHead``, as in ``read_traces``. A transcript's runs come as the
    spans they stand for (``convert.transcripts``), one record a run."""
    if chunk.transcript:
        return _transcript_records(chunk, limits, diagnostics)
    decoders = engine().decoders(decoding)
    return read_range(chunk, limits, diagnostics, decoding.interest, decoders)


def _transcript_records(
    chunk: Chunk, limits: Limits | None, diagnostics: list[Diagnostic]
) -> Iterator[tuple[Extent, Sequence[Decoded]]]:
    found = transcript_spans(
        chunk.path, limits or DEFAULT_LIMITS, diagnostics, first=chunk.start, last=chunk.end
    )
    for index, spans in found:
        yield Extent(index, index + 1), spans


def _evaluate_chunk(task: ChunkTask) -> ChunkOutcome:
    diagnostics: list[Diagnostic] = []
    traces = _TraceCollector(task.settings, diagnostics)
    for extent, spans in read_chunk(task.chunk, task.settings.limits, diagnostics, traces.decoding):
        try:
            traces.add_record(extent, spans)
        except Exception as exc:  # a record the converter chokes on must not lose the chunk
            diagnostics.append(_unreadable(task.chunk, extent, exc))
    ordinal = {trace_id: n for n, trace_id in enumerate(traces.facts)}
    index = task.chunk.index
    groups = _evaluate_groups(
        traces,
        task.settings,
        lambda ids: (index, min(ordinal[t] for t in ids)),
        diagnostics,
        task.chunk.path,
    )
    return ChunkOutcome(
        index,
        groups,
        diagnostics,
        traces.span_count,
        task.chunk.size,
        reading_path=reading_path(),
    )


def evaluate_merge(task: MergeTask) -> ChunkOutcome:
    """Evaluate the merged groups of ``task``. Read problems were reported by the chunk pass,
    so the re-read's diagnostics are dropped."""
    with gc_paused():
        outcome = _evaluate_merge(task)
        collect_young()
        return outcome


def _evaluate_merge(task: MergeTask) -> ChunkOutcome:
    ignored: list[Diagnostic] = []
    traces = _TraceCollector(task.settings, ignored, wanted=task.positions.keys())
    for part in task.parts:
        for extent, spans in read_chunk(part, task.settings.limits, ignored, traces.decoding):
            try:
                traces.add_record(extent, spans)
            except Exception:  # reported by the chunk pass
                continue
    positions = task.positions
    diagnostics: list[Diagnostic] = []
    groups = _evaluate_groups(
        traces,
        task.settings,
        lambda ids: min(positions[t] for t in ids),
        diagnostics,
        task.parts[0].path,
    )
    return ChunkOutcome(
        task.parts[0].index,
        groups,
        diagnostics,
        traces.span_count,
        0,
        merged=True,
        reading_path=reading_path(),
    )


class _TraceCollector:
    """The converter's ``TraceCollector`` (compact facts per trace, log records kept with
    their trace), and where each trace's records lie, in order of first appearance."""

    def __init__(
        self,
        settings: EvalSettings,
        diagnostics: list[Diagnostic],
        wanted: Iterable[str] | None = None,
    ) -> None:
        cases = settings.suite.cases
        #: What each trace used, only when a budget of the suite reads it; what was said and
        #: returned, only when a check of the suite reads it.
        suite = suite_needs(cases, default_registry())
        self.needs = Needs(usage=suite.usage, content=suite.content)
        self.decoding = decoding_for(self.needs)
        self.traces = TraceCollector(
            settings.limits or DEFAULT_LIMITS,
            diagnostics,
            wanted=wanted,
            usage=self.needs.usage,
            content=self.needs.content,
        )
        #: trace id -> its facts, in order of first appearance (the collector's open traces)
        self.facts = self.traces.open
        self.extents: dict[str, Extent] = {}
        self.span_count = 0

    def add_record(self, extent: Extent, spans: Sequence[Decoded]) -> None:
        """Collect one record's spans and log records, and note where each trace lies."""
        seen_here, added = self.traces.add_record(spans)
        self.span_count += added
        for trace_id in set(seen_here):
            known = self.extents.get(trace_id)
            self.extents[trace_id] = extent if known is None else known.union(extent)

    def groups(self, group: Grouping) -> list[list[OpenTrace]]:
        """Traces, or the traces of each conversation, in order of first appearance. A trace
        none of whose spans could be recorded (its records were skipped) is left out; one
        with only log content here is a group of its own, so that the driver merges it with
        its spans read in another chunk."""
        traces = [facts for facts in self.facts.values() if facts.span_count or facts.log_events]
        if group == "trace":
            return [[facts] for facts in traces]
        return conversations(traces)


def _evaluate_groups(
    traces: _TraceCollector,
    settings: EvalSettings,
    position_of: Callable[[tuple[str, ...]], Position],
    diagnostics: list[Diagnostic],
    where: str,
) -> list[GroupOutcome]:
    if settings.judge is not None:
        with process_judging(settings.judge) as run:
            return _evaluate_groups_with(traces, settings, position_of, diagnostics, where, run)
    return _evaluate_groups_with(traces, settings, position_of, diagnostics, where, None)


def _evaluate_groups_with(
    traces: _TraceCollector,
    settings: EvalSettings,
    position_of: Callable[[tuple[str, ...]], Position],
    diagnostics: list[Diagnostic],
    where: str,
    run: RunJudge | None,
) -> list[GroupOutcome]:
    """Convert each group and evaluate it; with a judge, the conversions first and then the
    evaluations side by side (``score.parallel_map``), so judge requests overlap up to the
    runner's bound."""
    plans = CasePlans(default_registry())  # each case compiled once per task, not per trace
    redaction = redaction_from_env()  # explanations: the rules reports use
    compactor = RowCompactor()
    suite = settings.suite
    sampler = Sampler(suite.cases)  # checks with ``sample:``, as serve and live decide them
    outcomes: list[GroupOutcome] = []
    judged: list[tuple[GroupOutcome, list[TestCase], EvalTrace]] = []
    for members in traces.groups(settings.group):
        trace_ids = tuple(f.trace_id for f in members)
        key = members[0].trace_id
        if settings.group == "conversation":
            key = members[0].conversation_id or key
        extent: Extent | None = None
        for trace_id in trace_ids:
            part = traces.extents.get(trace_id)
            if part is not None:
                extent = part if extent is None else extent.union(part)
        outcome = GroupOutcome(key, trace_ids, position_of(trace_ids), extent)
        outcomes.append(outcome)
        if not any(facts.span_count for facts in members):
            continue  # log content whose spans are elsewhere: evaluated when merged with them
        try:
            trace = traces.traces.build(members, diagnostics)
        except Exception as exc:  # one broken trace must not lose the rest of the chunk
            diagnostics.append(
                Diagnostic(
                    where, None, None, f"trace {key}: not converted ({type(exc).__name__}: {exc})"
                )
            )
            continue
        cases = suite.cases_for(trace)
        if not cases:
            outcome.unmatched = unmatched(trace)
            continue
        if run is not None:  # judged side by side, a window of traces at a time
            judged.append((outcome, cases, trace))
            if len(judged) >= _JUDGED_WINDOW * run.concurrency:
                _judge_window(judged, run, plans, redaction, compactor, suite, sampler)
            continue
        results = _evaluated(cases, trace, sampler, redaction, plans)
        _label(results, cases, trace, suite, compactor)
        outcome.results = results
    if run is not None:
        _judge_window(judged, run, plans, redaction, compactor, suite, sampler)
    return outcomes


def _evaluated(
    cases: list[TestCase],
    trace: EvalTrace,
    sampler: Sampler,
    redaction: Redaction,
    plans: CasePlans,
) -> list[CaseResult]:
    """``cases`` evaluated on ``trace``; a check with ``sample:`` judges only the traces in its
    sample (``tooltrail.sampling``: the same traces as serve and live take, test traffic
    scored fully), the others giving it a skipped score that says why."""
    if not sampler.active:
        return evaluate_cases(cases, trace, redaction=redaction, plans=plans)
    decided = sampler.decide(cases, trace, is_test_traffic(trace))
    results = evaluate_cases(decided.cases, trace, redaction=redaction, plans=plans)
    return sampler.finish(decided, results, trace)


def _label(
    results: list[CaseResult],
    cases: list[TestCase],
    trace: EvalTrace,
    suite: TestSuite,
    compactor: RowCompactor,
) -> None:
    by_id = {case.id: case for case in cases}
    for result in results:
        result.label = row_label(by_id[result.case_id], trace, suite)
        compactor.row(result)


#: Converted traces held for side-by-side evaluation, per request the judge may have in flight.
_JUDGED_WINDOW = 4


def _judge_window(
    judged: list[tuple[GroupOutcome, list[TestCase], EvalTrace]],
    run: RunJudge,
    plans: CasePlans,
    redaction: Redaction,
    compactor: RowCompactor,
    suite: TestSuite,
    sampler: Sampler,
) -> None:
    """Evaluate the held traces on ``run.concurrency`` threads (``score.parallel_map``), so
    their judge requests overlap up to the runner's bound; then let them go."""
    every = parallel_map(
        lambda item: _evaluated(item[1], item[2], sampler, redaction, plans),
        judged,
        run.concurrency,
    )
    for (outcome, cases, trace), results in zip(judged, every, strict=True):
        _label(results, cases, trace, suite, compactor)
        outcome.results = results
    judged.clear()


def _unreadable(chunk: Chunk, extent: Extent, exc: Exception) -> Diagnostic:
    offset = extent.start if chunk.framing == "prefixed" else None
    return Diagnostic(
        chunk.path,
        extent.line,
        offset,
        f"record skipped: it could not be converted ({type(exc).__name__}: {exc})",
    )
