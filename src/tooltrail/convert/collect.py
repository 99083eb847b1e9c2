"""The one place spans and log records become traces: ``TraceCollector``.

``read_traces`` (one pass and two), ``to_eval_trace`` and the batch pass's tasks all collect the
same way: a ``TraceFacts`` per open trace, a trace over ``max_spans_per_trace`` reported once
and marked partial, log records kept with their trace until it is built and then joined to
its spans (``convert.logjoin``), what cannot be joined reported, traces grouped into
conversations by one rule.

With the compiled core, readers decoding for the collector in the engine's parts mode hand out
runs of spans the core read and keeps (``TracePart``); a trace made only of those stays in the
core (``facts.CoreTrace``) until it is built there. Anything else for such a trace (a span the
core did not read, log content) first moves it into a ``TraceFacts`` (``as_trace_facts``):
the one way to be exact whatever arrives.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from tooltrail.convert.build import build_eval_trace
from tooltrail.convert.decoded import Decoded, is_log_record
from tooltrail.convert.engine import engine
from tooltrail.convert.facts import (
    CoreTrace,
    FactSpan,
    OpenTrace,
    TraceFacts,
    TracePart,
    as_trace_facts,
)
from tooltrail.convert.logjoin import join_logs, keep_log, log_event
from tooltrail.convert.runs import mark_if_not_a_run
from tooltrail.model import EvalTrace
from tooltrail.otlp.decode.log_records import LogRecord
from tooltrail.otlp.decode.span import Diagnostic, Span, SpanHead

if TYPE_CHECKING:
    from tooltrail.otlp.decode.limits import Limits

#: Spans one trace may hold when no ``Limits`` say otherwise.
DEFAULT_MAX_SPANS = 1_000_000


class TraceCollector:
    """Open traces by id. ``add`` spans (``Span``, ``SpanHead``, ``FactSpan``, or the core's
    ``TracePart``) and ``add_log`` log records in any order; ``build`` the ``EvalTrace`` of a
    trace or of a conversation's traces."""

    def __init__(
        self,
        limits: Limits | None = None,
        diagnostics: list[Diagnostic] | None = None,
        *,
        wanted: Iterable[str] | None = None,
        usage: bool = False,
        content: bool = False,
    ) -> None:
        self.max_spans = limits.max_spans_per_trace if limits is not None else DEFAULT_MAX_SPANS
        #: Note what each trace used (model calls, tokens, turn latencies): see ``TraceFacts``.
        self.usage = usage
        #: Read content for judges (tool results, each turn's input): see ``TraceFacts``.
        self.content = content
        self.diagnostics = diagnostics
        #: Only these traces are kept (a merge task's); every trace when ``None``.
        self.wanted = frozenset(wanted) if wanted is not None else None
        #: Open traces in order of first arrival: kept by Python, or by the core (parts only).
        self.open: dict[str, OpenTrace] = {}
        kinds = engine().parts()
        #: The core's classes of a part and of the trace it keeps (``None``: no parts come).
        self.part_class: type | None = None
        self.core_trace: Callable[[str, int, bool], CoreTrace] | None = None
        if kinds is not None:
            self.part_class, self.core_trace = kinds.part, kinds.trace

    def new_trace(self, trace_id: str) -> TraceFacts:
        """An empty ``TraceFacts`` collected the way this collector collects."""
        return TraceFacts(
            trace_id, max_spans=self.max_spans, read_usage=self.usage, read_content=self.content
        )

    def add(self, span: Span | SpanHead | FactSpan | TracePart) -> OpenTrace:
        """Record ``span`` (or a part) in its trace; the trace's first span over the limit is
        reported."""
        if span.__class__ is self.part_class:
            return self.add_part(span)  # type: ignore[arg-type]
        trace_id = span.trace_id
        facts = self.open.get(trace_id)
        if facts is None:
            facts = self.open[trace_id] = self.new_trace(trace_id)
        elif facts.__class__ is not TraceFacts:  # kept by the core until now
            facts = self.in_python(trace_id)
        self.add_to(facts, span)  # type: ignore[arg-type]
        return facts

    def add_to(self, facts: TraceFacts, span: Span | SpanHead | FactSpan) -> None:
        """``add`` for a caller that already holds ``span``'s open trace (``open[trace_id]``)."""
        dropped = facts.dropped
        if not facts.add(span) and dropped == 0 and facts.dropped:
            self.report(span.origin, _over_limit(span.trace_id, self.max_spans))

    def spans_in(self, item: Span | SpanHead | FactSpan | TracePart | LogRecord) -> int:
        """How many spans (or log records) ``item`` brings: a part of the core its run of
        spans, anything else one; what a census of the input counts."""
        return item.count if item.__class__ is self.part_class else 1  # type: ignore[union-attr]

    def add_part(self, part: TracePart) -> OpenTrace:
        """Add the core's run of spans to its trace: kept by the core while the trace holds
        only parts, else given span by span to its ``TraceFacts``."""
        trace_id = part.trace_id
        held = self.open.get(trace_id)
        if held is None:
            if self.content or self.core_trace is None:  # (parts come only without content)
                held = self.open[trace_id] = self.new_trace(trace_id)
            else:
                held = self.open[trace_id] = self.core_trace(trace_id, self.max_spans, self.usage)
        if isinstance(held, TraceFacts):
            for span in part.fact_spans():
                self.add_to(held, span)
            return held
        dropped = held.dropped
        held.add(part)
        if dropped == 0 and held.dropped:
            self.report(part.origin, _over_limit(trace_id, self.max_spans))
        return held

    def add_record(self, items: Sequence[Decoded]) -> tuple[list[str], int]:
        """Add one record's spans (or the core's parts) and log records, the spans of traces
        not ``wanted`` skipped: the ids of the traces the record brought something to (a log
        record's only when kept), in order, a run of one trace's spans once, and how many
        spans it added. The trace id is tested once per run of one trace's spans: the batch
        pass reads every record through this loop."""
        wanted = self.wanted
        last_id = ""
        skipped = False
        seen: list[str] = []
        added = 0
        add, spans_in = self.add, self.spans_in
        for item in items:
            trace_id = item.trace_id
            if is_log_record(item):  # content of a span, here or in another record
                if self.add_log(item) is not None:
                    seen.append(trace_id)
                last_id = ""
                continue
            if trace_id != last_id:  # one test for a run of spans of one trace
                last_id = trace_id
                skipped = wanted is not None and trace_id not in wanted
                if skipped:
                    continue
                if not seen or seen[-1] != trace_id:
                    seen.append(trace_id)
            elif skipped:
                continue
            added += spans_in(item)
            add(item)
        return seen, added

    def in_python(self, trace_id: str) -> TraceFacts:
        """The open trace ``trace_id`` as a ``TraceFacts`` from now on (exported by the core if
        it kept it); it keeps its place in ``open``."""
        facts = self.open[trace_id] = as_trace_facts(self.open[trace_id])
        return facts

    def add_log(self, record: LogRecord) -> OpenTrace | None:
        """Keep a log record's content for its trace; ``None`` when it carries none (prompts,
        plain logs) and its trace is not open, or when its trace is not ``wanted``."""
        trace_id = record.trace_id
        if self.wanted is not None and trace_id not in self.wanted:
            return None
        held = self.open.get(trace_id)
        event = log_event(record, self.content)
        if event is None:
            return held
        if held is None:
            held = self.open[trace_id] = self.new_trace(trace_id)
        facts = held if isinstance(held, TraceFacts) else self.in_python(trace_id)
        keep_log(facts, record, event)
        return facts

    def build(
        self, traces: Sequence[OpenTrace], diagnostics: list[Diagnostic] | None = None
    ) -> EvalTrace:
        """The ``EvalTrace`` of ``traces`` (one, or a conversation's), log content joined and
        what could not be joined reported (to ``diagnostics`` when given: a batch merge task
        drops its reading problems, reported by the chunk pass, but not these)."""
        for trace in traces:
            if isinstance(trace, TraceFacts) and trace.log_events:  # (a core's trace has none)
                for origin, message in join_logs(trace):
                    self.report(origin, message, diagnostics)
        built = build_eval_trace(traces)
        mark_if_not_a_run(built)
        return built

    def take_all(self) -> list[OpenTrace]:
        """Every open trace that has spans, in order of first arrival; the log content of the
        others is reported (``without_spans``). Nothing stays open."""
        traces: list[OpenTrace] = []
        for trace in self.open.values():
            if trace.span_count:
                traces.append(trace)
            else:  # (a trace the core keeps has spans)
                self.without_spans(as_trace_facts(trace))
        self.open.clear()
        return traces

    def without_spans(self, trace: TraceFacts) -> None:
        """Report the log content of a trace none of whose spans was read."""
        for _, event, origin in trace.log_events or ():
            self.report(
                origin,
                f"log record {event.name} of trace {trace.trace_id}: no span of that trace "
                "was read, so it is not joined and its content is not read",
            )
        trace.log_events = None

    def report(
        self, origin: str, message: str, diagnostics: list[Diagnostic] | None = None
    ) -> None:
        into = self.diagnostics if diagnostics is None else diagnostics
        if into is not None:
            path, line, offset = origin_parts(origin)
            into.append(Diagnostic(path, line, offset, message))


def conversations(traces: Iterable[OpenTrace]) -> list[list[OpenTrace]]:
    """``traces`` grouped by conversation id, each trace without one alone; groups in order of
    their first trace, traces in the order given."""
    grouped: dict[str, list[OpenTrace]] = {}
    for trace in traces:
        key = trace.conversation_id or "\0" + trace.trace_id
        grouped.setdefault(key, []).append(trace)
    return list(grouped.values())


def _over_limit(trace_id: str, max_spans: int) -> str:
    return (
        f"trace {trace_id} has more than {max_spans} spans (limits.max_spans_per_trace): "
        "the rest of it was dropped and the trace is marked partial"
    )


def origin_parts(origin: str) -> tuple[str, int | None, int | None]:
    """``"path:line"`` / ``"path@offset"`` -> (path, line, offset)."""
    head, sep, tail = origin.rpartition(":")
    if sep and tail.isdigit():
        return head, int(tail), None
    head, sep, tail = origin.rpartition("@")
    if sep and tail.isdigit():
        return head, None, int(tail)
    return origin, None, None
