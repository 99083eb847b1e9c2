"""Log records joined to the spans they belong to, before a trace is built.

A record names its span by span id; that is the join. A record with only a trace id belongs to
the one model span of that trace when there is exactly one (the GenAI message events describe a
model call); with several it could belong to any of them, and tooltrail does not guess: the
record stays unjoined and a diagnostic says so. A record naming a span that was not read (or
that is not a model or agent span) is reported the same way. Nothing is dropped in silence.

What a joined record adds fills only what the span's own attributes and events left empty: the
calls a model asked for and its reply text (``dialects.genai_logs.content_of``), and, when the trace
is read with content, the user's input and the tool results of the request it records
(``gen_ai.user.message``; an inference-details record's input messages). A tool message
record (content only) needs no span: its result joins the call with its call id when the
trace is built.
"""

from __future__ import annotations

from operator import attrgetter

from tooltrail.convert.facts import ROLE_AGENT, ROLE_MODEL, TraceFacts
from tooltrail.dialects.content import details_content, tool_message, user_message
from tooltrail.dialects.genai_logs import TOOL_MESSAGE, USER_MESSAGE, as_span_event, content_of
from tooltrail.otlp.decode.log_records import LogRecord
from tooltrail.otlp.decode.span import SpanEvent

_TIME = attrgetter("time_ns")


def add_log(trace: TraceFacts, record: LogRecord) -> bool:
    """Keep ``record``'s content on ``trace`` until it is built. False when the record carries
    nothing a trajectory reads (prompts, plain logs, evaluation results)."""
    event = log_event(record, trace.read_content)
    if event is None:
        return False
    keep_log(trace, record, event)
    return True


def log_event(record: LogRecord, content: bool) -> SpanEvent | None:
    """What of ``record`` a trace keeps, as a span event; ``None`` when it carries nothing."""
    return as_span_event(
        record.event_name, record.time_ns, record.attributes, record.body, content=content
    )


def keep_log(trace: TraceFacts, record: LogRecord, event: SpanEvent) -> None:
    """Keep ``event`` (``log_event`` of ``record``) on ``trace`` until it is built."""
    if trace.log_events is None:
        trace.log_events = []
    trace.log_events.append((record.span_id, event, record.origin))


def join_logs(trace: TraceFacts) -> list[tuple[str, str]]:
    """Join the log content kept on ``trace`` to its spans (once: the content is then gone
    from ``trace.log_events``). Returns ``(origin, message)`` for every record left unjoined."""
    pending = trace.log_events
    if not pending:
        return []
    trace.log_events = None
    problems: list[tuple[str, str]] = []
    by_span: dict[str, list[SpanEvent]] = {}
    models: list[str] | None = None
    wrapped: dict[str, str] | None = None
    for span_id, event, origin in _first_copies(pending):
        if event.name == TOOL_MESSAGE:  # matched to its call by id, wherever it was sent
            found = tool_message(event.attributes)
            if found is not None:
                trace.note_responses({found[0]: found[1]})
            continue
        if not span_id:
            if models is None:
                models = [f.span_id for f in trace.facts.values() if f.role == ROLE_MODEL]
            if len(models) != 1:
                problems.append((origin, _ownerless(trace.trace_id, event.name, len(models))))
                continue
            span_id = models[0]
        fact = trace.facts.get(span_id)
        if fact is None or fact.role not in (ROLE_MODEL, ROLE_AGENT):
            if wrapped is None:
                wrapped = _wrapped_models(trace)
            inner = wrapped.get(span_id)
            if inner is not None:  # a span around one model call: the record is that call's
                span_id, fact = inner, trace.facts[inner]
        if fact is None or fact.role not in (ROLE_MODEL, ROLE_AGENT):
            read = span_id in trace.parents
            problems.append((origin, _unowned(trace.trace_id, span_id, event.name, read)))
            continue
        by_span.setdefault(span_id, []).append(event)
    for span_id, events in by_span.items():
        events.sort(key=_TIME)
        calls, reply = content_of(events)
        fact = trace.facts[span_id]
        if fact.input is None:
            for event in reversed(events):
                if event.name == USER_MESSAGE:
                    fact.input = user_message(event.attributes)
                    if fact.input is not None:
                        break
        if trace.read_content:  # the request an inference-details record carries
            said, responses = details_content(events)
            if fact.input is None:
                fact.input = said
            trace.note_responses(responses)
        if calls and not fact.model_calls and fact.role == ROLE_MODEL:
            fact.model_calls = calls
        if reply and not fact.reply:
            fact.reply = reply
    return problems


def _wrapped_models(trace: TraceFacts) -> dict[str, str]:
    """Span id -> the one model span right below it, for the spans with exactly one model span
    among their children. An instrumentation may emit a model call's message events in the
    context of the span around it (OpenLLMetry's LangChain instrumentation, with content as
    events: LangGraph's ``execute_task model`` node span around ``ChatOpenAI.chat``)."""
    below: dict[str, list[str]] = {}
    for fact in trace.facts.values():
        if fact.role == ROLE_MODEL:
            parent = trace.parents.get(fact.span_id)
            if parent:
                below.setdefault(parent, []).append(fact.span_id)
    return {parent: models[0] for parent, models in below.items() if len(models) == 1}


def _first_copies(
    pending: list[tuple[str, SpanEvent, str]],
) -> list[tuple[str, SpanEvent, str]]:
    """``pending`` without the records equal to one before them (same span, event, time and
    attributes), as spans keep the first copy of a span id: a record sent twice (an exporter
    retrying a request that did arrive, a file given twice) is one record, not a second
    model response asking for the same calls again."""
    if len(pending) < 2:
        return pending
    seen: dict[tuple[str, str, int], list[SpanEvent]] = {}
    kept = []
    for item in pending:
        span_id, event, _ = item
        alike = seen.setdefault((span_id, event.name, event.time_ns), [])
        if any(other.attributes == event.attributes for other in alike):
            continue
        alike.append(event)
        kept.append(item)
    return kept


def _ownerless(trace_id: str, event: str, candidates: int) -> str:
    return (
        f"log record {event} of trace {trace_id} has no span id and "
        f"{candidates} model spans could own it: not joined, its content is not read"
    )


def _unowned(trace_id: str, span_id: str, event: str, read: bool) -> str:
    why = "is not a model or agent span" if read else "was not read"
    return (
        f"log record {event} names span {span_id} of trace {trace_id}, which {why}: "
        "not joined, its content is not read"
    )
