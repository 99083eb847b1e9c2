"""The one place spans and log records become traces: ``TraceCollector``.

``read_traces`` (one pass and two), ``to_eval_trace`` and the batch pass's tasks all collect the
same way: a ``TraceFacts`` per open trace, a trace over ``max_spans_per_trace`` reported once
and marked partial, log records kept with their trace until it is built and then joined to
its spans (``convert.logjoin``), what cannot be joined reported, traces grouped into
conversations by one rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tooltrail.convert.build import build_eval_trace
from tooltrail.convert.facts import TraceFacts
from tooltrail.convert.logjoin import add_log, join_logs
from tooltrail.model import EvalTrace
from tooltrail.otlp.decode.logs import LogRecord
from tooltrail.otlp.decode.span import Diagnostic, Span, SpanHead

if TYPE_CHECKING:
    from tooltrail.otlp.decode.limits import Limits

#: Spans one trace may hold when no ``Limits`` say otherwise.
DEFAULT_MAX_SPANS = 1_000_000


class TraceCollector:
    """Open traces by id. ``add`` spans (or ``SpanHead``) and ``add_log`` log records in any
    order; ``build`` the ``EvalTrace`` of a trace or of a conversation's traces."""

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
        self.open: dict[str, TraceFacts] = {}

    def new_trace(self, trace_id: str) -> TraceFacts:
        """An empty ``TraceFacts`` collected the way this collector collects."""
        return TraceFacts(
            trace_id, max_spans=self.max_spans, read_usage=self.usage, read_content=self.content
        )

    def add(self, span: Span | SpanHead) -> TraceFacts:
        """Record ``span`` in its trace; the trace's first span over the limit is reported.

        ``add_to``'s body is written out here: this runs for every span read, and the two
        calls it saved were about 1% of ``read_traces`` (callgrind, protobuf)."""
        trace_id = span.trace_id
        facts = self.open.get(trace_id)
        if facts is None:
            facts = self.open[trace_id] = self.new_trace(trace_id)
        dropped = facts.dropped
        if not facts.add(span) and dropped == 0 and facts.dropped:
            self.report(span.origin, _over_limit(trace_id, self.max_spans))
        return facts

    def add_to(self, facts: TraceFacts, span: Span | SpanHead) -> None:
        """``add`` for a caller that already holds ``span``'s open trace (``open[trace_id]``)."""
        dropped = facts.dropped
        if not facts.add(span) and dropped == 0 and facts.dropped:
            self.report(span.origin, _over_limit(span.trace_id, self.max_spans))

    def add_log(self, record: LogRecord) -> TraceFacts | None:
        """Keep a log record's content for its trace; ``None`` when it carries none (prompts,
        plain logs) and its trace is not open, or when its trace is not ``wanted``."""
        if self.wanted is not None and record.trace_id not in self.wanted:
            return None
        facts = self.open.get(record.trace_id)
        if facts is not None:
            add_log(facts, record)
            return facts
        facts = self.new_trace(record.trace_id)
        if not add_log(facts, record):
            return None
        self.open[record.trace_id] = facts
        return facts

    def build(
        self, traces: list[TraceFacts], diagnostics: list[Diagnostic] | None = None
    ) -> EvalTrace:
        """The ``EvalTrace`` of ``traces`` (one, or a conversation's), log content joined and
        what could not be joined reported (to ``diagnostics`` when given: a batch merge task
        drops its reading problems, reported by the chunk pass, but not these)."""
        for trace in traces:
            if trace.log_events:
                for origin, message in join_logs(trace):
                    self.report(origin, message, diagnostics)
        return build_eval_trace(traces)

    def take_all(self) -> list[TraceFacts]:
        """Every open trace that has spans, in order of first arrival; the log content of the
        others is reported (``without_spans``). Nothing stays open."""
        traces = []
        for trace in self.open.values():
            if trace.parents:
                traces.append(trace)
            else:
                self.without_spans(trace)
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


def conversations(traces: Iterable[TraceFacts]) -> list[list[TraceFacts]]:
    """``traces`` grouped by conversation id, each trace without one alone; groups in order of
    their first trace, traces in the order given."""
    grouped: dict[str, list[TraceFacts]] = {}
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
