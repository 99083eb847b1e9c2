"""The compact facts of one trace that conversion needs, collected span by span.

Raw spans are not kept: a ``TraceFacts`` holds every span's parent link (to walk ancestry),
and full facts only for tool, agent, model and root spans. That is what lets ``read_traces``
hold every open trace of a large dump without holding its spans.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tooltrail import dialects
from tooltrail.dialects import (
    ROLE_AGENT,
    ROLE_EXCLUDED,
    ROLE_MODEL,
    ROLE_OTHER,
    ROLE_TOOL,
    DialectCall,
    ModelCall,
)
from tooltrail.dialects.content import model_content, tool_result, user_input
from tooltrail.dialects.final import final_text
from tooltrail.dialects.spans import handoff_names
from tooltrail.dialects.usage import ModelUsage, model_usage
from tooltrail.otlp.decode.span import STATUS_ERROR, Span, SpanEvent, SpanHead

#: Roles whose spans are not given the user's input themselves (a model span's is read with
#: what else it was sent: ``model_content``).
_NOT_ASKED = (ROLE_TOOL, ROLE_EXCLUDED, ROLE_MODEL)

#: Longest string attribute copied into ``metadata["attributes"]`` (``core/src/facts.rs``
#: has the same number: the differential test keeps them equal).
MAX_LABEL_CHARS = 1024


@dataclass(slots=True)
class SpanFact:
    """What conversion keeps of a tool, agent, model or root span. ``TraceFacts.add`` builds it
    by position (its first seven fields) for every kept span; ``tests/convert/test_convert.py`` pins
    the field order: change both together."""

    span_id: str
    parent_id: str
    role: int
    name: str
    start_ns: int
    end_ns: int
    status_code: int = 0
    error: str | None = None
    call: DialectCall | None = None
    agent: str | None = None
    reply: str | None = None
    #: The calls a model span asked for (a shared empty tuple on every other span).
    model_calls: Sequence[ModelCall] = ()
    #: Scalar label attributes (root and agent spans only), for ``metadata["attributes"]``.
    labels: dict[str, Any] | None = None
    #: (input tokens, output tokens, model) a model span records, when its trace reads usage.
    usage: ModelUsage | None = None
    #: What a tool span's tool returned, when its trace reads content.
    result: Any = None
    #: The user's text an agent, workflow or model span was given, when its trace reads content.
    input: str | None = None
    #: The reply a built-in final-answer tool gave (``dialects.final``): on the model span
    #: that asked for it, or on the tool span that ran it (``ROLE_EXCLUDED``).
    final: str | None = None
    #: The instrumentation scope of a model span that asked for calls.
    scope: str = ""
    #: A model span that lists no call but whose finish reason says it asked for tools
    #: (``dialects.asked_for_tools``): content capture was off.
    asked_unlisted: bool = False


@dataclass(slots=True)
class FactSpan:
    """A span the compiled core read into what the converter keeps of it: the ``SpanHead``
    fields, the ready ``SpanFact`` and the trace notes ``TraceFacts.add`` takes from the
    span. Handed out instead of a ``Span`` only by the core's engine in the facts mode
    (``convert.engine``), for the spans its port of the dialect rules covers; the core builds
    it by position (its field order is checked when the core's reader is made)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    status_code: int
    #: Resource attributes, shared by every span of one ResourceSpans.
    resource: Mapping[str, Any]
    scope_name: str
    origin: str
    fact: SpanFact
    #: Whether the trace notes this span's conversation and case ids (agent, other and root
    #: spans, as ``TraceFacts.add`` does).
    noted: bool
    conversation: str | None
    case_id: str | None


@dataclass(slots=True)
class TraceFacts:
    """Everything conversion needs from the spans of one trace, in any arrival order.

    ``add`` each span (duplicates by span id keep the first copy); ``merge`` another
    ``TraceFacts`` of the same trace id (spans read elsewhere, e.g. another file).
    """

    trace_id: str
    max_spans: int = 1_000_000
    #: span id -> parent span id ("" for a root), for every span seen.
    parents: dict[str, str] = field(default_factory=dict)
    facts: dict[str, SpanFact] = field(default_factory=dict)
    resource: Mapping[str, Any] = field(default_factory=dict)
    start_ns: int = 0
    end_ns: int = 0
    #: (start_ns, span_id) of every span with error status.
    error_spans: list[tuple[int, str]] = field(default_factory=list)
    #: (start_ns, is_not_root, id) of the earliest span naming a conversation.
    conversation: tuple[int, int, str] | None = None
    case_id: str | None = None
    #: Spans refused because the trace reached ``max_spans``.
    dropped: int = 0
    #: Content of log records to join to their spans when the trace is built:
    #: (span id, or "" when the record names none; the record as a span event; its origin).
    log_events: list[tuple[str, SpanEvent, str]] | None = None
    #: Whether to note what the trace used (model calls, tokens, turn latencies) for budget
    #: checks: off unless a suite has such a budget (see ``tooltrail.dialects.usage``).
    read_usage: bool = False
    #: Whether to read content for judges (tool results, the user's input of each turn):
    #: off unless a check needs it (see ``tooltrail.dialects.content``).
    read_content: bool = False
    #: Tool results the model was sent (input messages, tool message log records), by call
    #: id, when the trace reads content: they complete calls whose span records no result.
    tool_responses: dict[str, Any] | None = None
    #: (source, target) the semconv handoff attributes of a tool span name, by its span id
    #: (``dialects.spans.handoff_names``; the core's facts mode hands such spans over whole).
    named_handoffs: dict[str, tuple[str | None, str | None]] | None = None

    @property
    def span_count(self) -> int:
        return len(self.parents)

    def add(self, span: Span | SpanHead | FactSpan) -> bool:
        """Record ``span``. False when it was not recorded (a duplicate, or over the limit).

        A ``SpanHead`` (a span a reader with ``dialects.INTEREST`` did not decode) is recorded
        as what it is: a span with a parent that is neither a tool, agent nor model call. A
        ``FactSpan`` (the compiled core's reading in the facts mode) brings its ``SpanFact``
        ready: only the trace's bookkeeping is done here."""
        span_id = span.span_id
        parents = self.parents
        if span_id in parents:
            return False
        if len(parents) >= self.max_spans:
            self.dropped += 1
            return False
        parent_id = span.parent_span_id or ""
        parents[span_id] = parent_id
        if not parent_id or not self.resource:
            self.resource = span.resource or self.resource
        start, end = span.start_ns, span.end_ns
        if start and (not self.start_ns or start < self.start_ns):
            self.start_ns = start
        if end > self.end_ns:
            self.end_ns = end
        status = span.status_code
        if status == STATUS_ERROR:
            self.error_spans.append((start, span_id))
        if isinstance(span, SpanHead):  # no subclasses: the same as a class test
            return True
        if isinstance(span, FactSpan):  # read by the compiled core: only the bookkeeping
            fact = span.fact
            if not self.read_usage:
                fact.usage = None
            if span.noted:
                self._note_conversation(span.conversation, start, parent_id)
                if self.case_id is None:
                    self.case_id = span.case_id
            self.facts[span_id] = fact
            return True
        role, call = dialects.classify(span)
        if role == ROLE_OTHER and parent_id:
            return True
        # what is kept of the span, here rather than in a method of its own: most spans of an
        # agent trace come this far
        fact = SpanFact(span_id, parent_id, role, span.name, start, end, status)
        attrs = span.attributes
        if role == ROLE_TOOL:
            fact.call = call
            fact.agent = dialects.agent_name(span)
            names = handoff_names(attrs)
            if names is not None:  # (nearly never: ``named_handoffs`` stays ``None``)
                self.note_handoff(span_id, names)
            if status == STATUS_ERROR or (call is not None and call.failure):
                fact.error = (
                    dialects.exception_message(span)
                    or span.status_message
                    or (call.failure if call is not None else None)
                    or "error"
                )
            if self.read_content:
                fact.result = tool_result(span)
        elif role == ROLE_AGENT:
            fact.agent = dialects.agent_name(span, invoked=True)
            fact.reply = dialects.agent_reply(span)
        elif role == ROLE_MODEL:
            calls, fact.reply = dialects.model_output(span)
            if calls:  # else the shared empty tuple: one object fewer to keep
                fact.model_calls = calls
                fact.scope = span.scope_name  # (a request for a final-answer tool: ``calls``)
            elif fact.reply is None and fact.final is None and dialects.asked_for_tools(attrs):
                fact.asked_unlisted = True  # a response with neither text nor calls recorded
            if self.read_usage:
                fact.usage = model_usage(attrs)
            if self.read_content:
                fact.input, responses = model_content(span)
                self.note_responses(responses)
        elif role == ROLE_EXCLUDED:  # kept only so the model's request for it is accounted for
            fact.call = call
            if call is not None and call.excluded == "final":
                fact.final = final_text(call.args) or ""
        else:
            fact.reply = dialects.agent_reply(span)
        if self.read_content and role not in _NOT_ASKED:  # agent, workflow and root spans
            fact.input = user_input(span)
        if role in (ROLE_AGENT, ROLE_OTHER) or not parent_id:
            fact.labels = _labels(attrs)
            self._note_ids(span, attrs, parent_id)
        self.facts[span_id] = fact
        return True

    def note_handoff(self, span_id: str, names: tuple[str | None, str | None]) -> None:
        """Keep what a tool span's semconv handoff attributes name (``named_handoffs``)."""
        if self.named_handoffs is None:
            self.named_handoffs = {}
        self.named_handoffs.setdefault(span_id, names)

    def note_responses(self, responses: Mapping[str, Any]) -> None:
        """Keep tool results sent to a model, by call id (the first one seen wins)."""
        if not responses:
            return
        if self.tool_responses is None:
            self.tool_responses = {}
        for call_id, value in responses.items():
            self.tool_responses.setdefault(call_id, value)

    def _note_ids(self, span: Span, attrs: Any, parent_id: str) -> None:
        self._note_conversation(dialects.conversation_id(attrs), span.start_ns, parent_id)
        if self.case_id is None:
            case = attrs.get(dialects.CASE_ID_KEY) if dialects.CASE_ID_KEY in attrs else None
            case = case or span.resource.get(dialects.CASE_ID_KEY)
            if isinstance(case, str) and case:
                self.case_id = case

    def _note_conversation(self, conv: str | None, start: int, parent_id: str) -> None:
        """Keep ``conv`` when it is the trace's earliest conversation id (a root's first)."""
        if conv is not None:
            key = (start, 1 if parent_id else 0, conv)
            if self.conversation is None or key[:2] < self.conversation[:2]:
                self.conversation = key

    def merge(self, other: TraceFacts) -> None:
        """Add the facts of ``other`` (same trace, read elsewhere); first copies win."""
        for span_id, parent_id in other.parents.items():
            if span_id in self.parents:
                continue
            if len(self.parents) >= self.max_spans:
                self.dropped += 1
                continue
            self.parents[span_id] = parent_id
            fact = other.facts.get(span_id)
            if fact is not None:
                self.facts[span_id] = fact
        self.dropped += other.dropped
        if other.tool_responses:
            self.note_responses(other.tool_responses)
        for span_id, names in (other.named_handoffs or {}).items():
            if span_id in other.facts and self.facts.get(span_id) is other.facts[span_id]:
                self.note_handoff(span_id, names)  # (of a span this merge kept)
        if other.start_ns and (not self.start_ns or other.start_ns < self.start_ns):
            self.start_ns = other.start_ns
        self.end_ns = max(self.end_ns, other.end_ns)
        known = {sid for _, sid in self.error_spans}
        self.error_spans.extend(e for e in other.error_spans if e[1] not in known)
        if other.conversation is not None and (
            self.conversation is None or other.conversation[:2] < self.conversation[:2]
        ):
            self.conversation = other.conversation
        self.case_id = self.case_id or other.case_id
        self.read_usage = self.read_usage or other.read_usage
        self.resource = self.resource or other.resource
        if other.log_events:
            self.log_events = (self.log_events or []) + other.log_events

    @property
    def conversation_id(self) -> str | None:
        return self.conversation[2] if self.conversation is not None else None


class TracePart(Protocol):
    """A run of consecutive spans of one trace that the compiled core read and keeps in Rust:
    handed out in place of their ``FactSpan`` and ``SpanHead`` objects, only by the core's
    engine reading in parts (``convert.engine``: for the converter's collector, which adds
    the part to the trace the core keeps). A reader of spans
    one by one takes ``fact_spans()`` instead; a part is taken once."""

    @property
    def trace_id(self) -> str: ...

    @property
    def count(self) -> int:
        """How many spans the part holds."""
        ...

    @property
    def origin(self) -> str:
        """Where its record is (``path:line`` or ``path@offset``)."""
        ...

    def fact_spans(self) -> list[FactSpan | SpanHead]:
        """The part's spans as the facts mode hands them out one by one."""
        ...


class CoreTrace(Protocol):
    """A trace the compiled core collects from ``TracePart``s (the core's, ``convert.engine``):
    ``TraceFacts.add``'s bookkeeping done in Rust, so no span it reads becomes a Python object.
    It answers what the collector and the batch pass ask a ``TraceFacts``; ``export`` gives the
    keyword arguments of the equal ``TraceFacts`` (``as_trace_facts``) for all else: a span the
    core did not read, log content, a build the core's builder declines."""

    @property
    def trace_id(self) -> str: ...
    @property
    def span_count(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def conversation_id(self) -> str | None: ...
    @property
    def case_id(self) -> str | None: ...
    @property
    def log_events(self) -> None: ...

    def add(self, part: TracePart) -> None: ...

    def export(self) -> dict[str, Any]: ...


#: An open trace of ``convert.collect.TraceCollector``: kept by Python, or by the core.
OpenTrace = TraceFacts | CoreTrace


def as_trace_facts(trace: OpenTrace) -> TraceFacts:
    """``trace`` as a ``TraceFacts`` (a ``CoreTrace`` exported; the core's stays as it was)."""
    if isinstance(trace, TraceFacts):
        return trace
    return TraceFacts(**trace.export())


def _labels(attrs: Any) -> dict[str, Any]:
    """Scalar attributes that label a span (no content, arguments or long text). Content keys
    are skipped before their values are read, so big messages are never decoded here."""
    labels: dict[str, Any] = {}
    if attrs is None:
        return labels
    for key in dialects.label_keys(attrs):
        value = attrs.get(key)
        if isinstance(value, str):
            if len(value) > MAX_LABEL_CHARS:
                continue
        elif not isinstance(value, (bool, int, float)):
            continue
        labels[key] = value
    return labels
