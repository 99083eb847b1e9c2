"""The trajectory an agent took: spans, tool calls, traces. Nothing here knows about OTLP.

These are the hot-path types every check reads, so they are plain slotted dataclasses.
An ``EvalTrace`` can be built by hand (span list first, as agentic-evals does) or by
``tooltrail.convert.to_eval_trace`` from OpenTelemetry spans.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import orjson

Status = Literal["ok", "error", "unset"]

# orjson turns integers wider than 64 bits into floats; such texts go through the stdlib parser.
_LONG_DIGITS = re.compile(rb"\d{19}")
_WIDE_DIGITS = 19
#: ``bytes.translate`` deletes these: a text of fewer digits than ``_WIDE_DIGITS`` in all holds
#: no run of them, which one C pass tells (the expression tries every position: 7k of a live
#: tool span's 31k instructions for reading its call went there, callgrind).
_DIGITS = b"0123456789"

#: Attribute of a hand-built ``EvalSpan`` that holds the call's arguments (dict or JSON string).
TOOL_ARGS = "tool_args"
#: Optional attributes of a hand-built ``EvalSpan``.
TOOL_CALL_ID = "tool_call_id"
TOOL_STATUS = "tool_status"
TOOL_ERROR = "tool_error"
TOOL_RESULT = "tool_result"


def parse_args(value: Any) -> dict[str, Any] | None:
    """Arguments as a dict, or ``None`` when they were not captured or are not a JSON object.

    A JSON string is parsed; a dict is returned as is. Anything else (a list, a number, a
    string that is not a JSON object, ``None``) means "no arguments", never silently ``{}``.
    """
    if isinstance(value, dict):
        return value
    if isinstance(value, (str, bytes)):
        if not value:
            return None
        raw = value.encode() if isinstance(value, str) else value
        try:
            if (
                len(raw) - len(raw.translate(None, _DIGITS)) >= _WIDE_DIGITS
                and _LONG_DIGITS.search(raw) is not None
            ):
                raise orjson.JSONDecodeError("wide integer", "", 0)
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            try:  # NaN/Infinity literals and integers beyond 64 bits, which orjson refuses
                parsed = json.loads(value)
            except (ValueError, RecursionError):
                return None
        return parsed if isinstance(parsed, dict) else None
    return None


@dataclass(slots=True)
class ToolCall:
    """One tool call the agent made, in trajectory order."""

    name: str
    #: The call's arguments; ``None`` when the trace did not capture them (distinct from ``{}``).
    args: dict[str, Any] | None = None
    call_id: str | None = None
    span_id: str | None = None
    parent_span_id: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    status: Status = "unset"
    error: str | None = None
    #: 1-based turn of the conversation the call belongs to.
    turn: int = 1
    agent: str | None = None
    #: Which dialect reader (and attribute) the call was read from,
    #: e.g. ``"genai:gen_ai.tool.call.arguments"``.
    source: str = "manual"
    #: What the tool returned (text, or the value its JSON text holds); ``None`` when the trace
    #: does not record it, or when it was not read (``read_traces(..., content=True)`` reads
    #: it). A failure's text is in ``error``.
    result: Any = None


@dataclass(slots=True)
class Turn:
    """One user exchange of a trajectory: what the user said and what the agent replied.

    Either is ``None`` when the trace does not record it (content capture off), never a
    guess. Filled by the converter only when asked to read content (``content=True``)."""

    #: 1-based, as ``ToolCall.turn``.
    number: int
    #: The user's message that started the turn.
    input: str | None = None
    #: The agent's last text of the turn.
    reply: str | None = None
    #: The span the turn is (its workflow or top-level agent span), when there is one.
    span_id: str | None = None


@dataclass(slots=True)
class AgentSpan:
    """One agent's run in a trajectory: an agent span (GenAI ``invoke_agent``, OpenInference
    ``AGENT``, ...) as the converter read it. The handoffs between agents are worked out from
    these and the calls (``EvalTrace.handoffs``; docs/convert.md, "Handoffs")."""

    span_id: str
    #: The agent's name as recorded (``ToolCall.agent`` of the calls it makes); ``None`` when
    #: the span names none.
    name: str | None = None
    #: The nearest agent span above it: the agent that started it (a sub-agent, an agent run
    #: as a tool); ``None`` for an agent a workflow or the user started.
    parent_span_id: str | None = None
    #: The tool span it runs under, below ``parent_span_id`` (an agent run as a tool: ADK's
    #: ``AgentTool``), else ``None``.
    tool_span_id: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    #: 1-based turn, as ``ToolCall.turn``.
    turn: int = 1


@dataclass(slots=True)
class Handoff:
    """Control passing from one agent to another: a transfer, a handoff, a delegation, an agent
    run as a tool or a sub-agent started inside another agent (docs/convert.md, "Handoffs").

    ``position`` places it among the calls: ``tool_calls[:position]`` came before it. ``call``
    is the index of the call that made it (a ``transfer_to_agent`` call), when one did."""

    source: str | None
    target: str | None
    #: ``transfer`` (ADK ``transfer_to_agent``), ``handoff`` (a ``transfer_to_<agent>`` tool:
    #: OpenAI Agents, AutoGen, LangGraph swarm; the semconv handoff attributes), ``delegation``
    #: (CrewAI's coworker tools), ``agent_tool`` (an agent run as a tool), ``sub_agent`` (an
    #: agent span started inside another agent's span).
    kind: str
    position: int
    call: int | None = None
    turn: int = 1
    #: The span that shows it: the call's, else the target's agent span.
    span_id: str | None = None
    #: Where it was read: ``tool:NAME``, ``attribute:KEY``, ``agent_span``.
    via: str = ""


@dataclass(slots=True)
class EvalSpan:
    """A span of the trajectory. It is a tool call when ``tool_name`` is set.

    ``attributes["tool_args"]`` holds the call's arguments (a dict, or a JSON string).
    """

    tool_name: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    span_id: str | None = None
    parent_span_id: str | None = None
    start_ns: int = 0
    end_ns: int = 0
    status: Status = "unset"


#: ``EvalTrace.metadata`` of a trace that records no run (``convert.runs``): why not.
NOT_A_RUN = "not_a_run"


@dataclass(slots=True)
class EvalTrace:
    """One trajectory: a trace (or, grouped by conversation, several turns of one conversation).

    ``tool_calls`` is derived from ``spans`` (in list order) unless given explicitly, as the
    OTLP converter does. ``metadata`` carries ``turn_count``, ``service.name``,
    ``conversation_id``, ``root_span_id`` and similar facts about the trace.
    """

    #: ``""`` for a trace built by hand without one (agentic-evals' ``EvalTrace()``).
    trace_id: str = ""
    spans: list[EvalSpan] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The agent's final reply, when the trace carries it.
    output: str | None = None
    tool_calls: list[ToolCall] = None  # type: ignore[assignment]
    #: Evaluation results found attached to this trace in the input (earlier verdicts).
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    #: Whether the trace was flushed before it was known to be complete.
    partial: bool = False
    #: The turns with their inputs and replies, in order; empty unless the trace was read
    #: with ``content=True``.
    turns: list[Turn] = field(default_factory=list)
    #: Why the tool calls cannot be judged, when the recording shows calls whose content was
    #: not captured (see docs/convert.md, "Content not captured"); checks that read calls
    #: then give an error score instead of a verdict. ``None`` for a trace that records them.
    content_missing: str | None = None
    #: The agent spans, in start order (docs/convert.md, "Agent"); empty for a trace with none
    #: and for a trace built by hand without them.
    agent_spans: list[AgentSpan] = field(default_factory=list)
    #: The handoffs between agents, in trajectory order (docs/convert.md, "Handoffs"); the
    #: converter finds them, a trace built by hand lists its own.
    handoffs: list[Handoff] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.tool_calls is None:
            self.tool_calls = tool_calls_from_spans(self.spans)

    @property
    def total_latency_ms(self) -> float:
        """Wall time from the first span's start to the last span's end, in milliseconds."""
        latency = self.metadata.get("total_latency_ms")
        if isinstance(latency, (int, float)) and not isinstance(latency, bool):
            return float(latency)
        starts = [s.start_ns for s in self.spans if s.start_ns]
        ends = [s.end_ns for s in self.spans if s.end_ns]
        if not starts or not ends:
            return 0.0
        return (max(ends) - min(starts)) / 1e6

    @property
    def records_a_run(self) -> bool:
        """False for a trace that only creates an agent (``convert.runs``): it has no turn,
        and no policy of a suite selects it."""
        return NOT_A_RUN not in self.metadata

    @property
    def turn_count(self) -> int | None:
        """``metadata["turn_count"]`` when it is a positive int (a bool is not a count)."""
        n = self.metadata.get("turn_count")
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            return n
        return None


#: One converted call as its ``EvalSpan`` will show it: the ``ToolCall``'s fields in their order,
#: then the name of the span that carries it. The converter keeps these (a tuple costs a
#: fraction of a span with its attribute dict) and ``EvalTrace.spans`` is made of them on
#: first read: the checks read ``tool_calls``, hardly ever ``spans``.
CallRow = tuple[
    str, dict[str, Any] | None, str | None, str | None, str | None, int, int, Status,
    str | None, int, str | None, str, Any, str,
]  # fmt: skip


class _CallRows:
    """What ``EvalTrace.spans`` holds until it is first read (see ``deferred_spans``)."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[CallRow]) -> None:
        self.rows = rows


def eval_span_of_row(row: CallRow) -> EvalSpan:
    """The ``EvalSpan`` that carries a converted call (docs/convert.md lists its attributes)."""
    name, args, call_id, span_id, parent, start, end, status, error, turn, agent, source = row[:12]
    attributes: dict[str, Any] = {TOOL_STATUS: status, "turn": turn, "source": source}
    if args is not None:
        attributes[TOOL_ARGS] = args
    if call_id is not None:
        attributes[TOOL_CALL_ID] = call_id
    if error is not None:
        attributes[TOOL_ERROR] = error
    if row[12] is not None:
        attributes[TOOL_RESULT] = row[12]
    if agent is not None:
        attributes["agent"] = agent
    return EvalSpan(name, attributes, row[13], span_id, parent, start, end, status)


class _SpansOnRead:
    """``EvalTrace.spans``: the dataclass's own slot, except that rows put there by
    ``deferred_spans`` become the ``EvalSpan`` list on first read, and stay that list. Every
    reader goes through here (attribute access, ``==``, ``repr``, pickling,
    ``dataclasses.replace`` and ``asdict``), so each sees the list the converter used to make
    eagerly, with the values of the calls as they were converted. (Two threads reading it
    first at the same time each make an equal list; the last one made stays.)"""

    def __init__(self, slot: Any) -> None:
        self.slot = slot

    def __get__(self, trace: EvalTrace | None, owner: type | None = None) -> Any:
        if trace is None:
            return self
        value = self.slot.__get__(trace, owner)
        if value.__class__ is _CallRows:
            value = [eval_span_of_row(row) for row in value.rows]
            self.slot.__set__(trace, value)
        return value

    def __set__(self, trace: EvalTrace, value: Any) -> None:
        self.slot.__set__(trace, value)


_SPANS_SLOT = EvalTrace.__dict__["spans"]
setattr(EvalTrace, "spans", _SpansOnRead(_SPANS_SLOT))  # noqa: B010 (mypy: a field)


def deferred_spans(rows: list[CallRow]) -> list[EvalSpan]:
    """``EvalTrace(spans=deferred_spans(rows))``: spans made of ``rows`` (one per call, in
    order) when first read. Until then the slot holds the rows, not a list: pass the result
    only to ``EvalTrace``, which reads it through ``_SpansOnRead``."""
    return cast("list[EvalSpan]", _CallRows(rows))


def tool_calls_from_spans(spans: list[EvalSpan]) -> list[ToolCall]:
    """The tool calls of hand-built spans, in list order."""
    calls: list[ToolCall] = []
    for span in spans:
        if not span.tool_name:
            continue
        attrs = span.attributes
        status = attrs.get(TOOL_STATUS, span.status)
        calls.append(
            ToolCall(
                name=span.tool_name,
                args=parse_args(attrs.get(TOOL_ARGS)),
                call_id=attrs.get(TOOL_CALL_ID),
                span_id=span.span_id,
                parent_span_id=span.parent_span_id,
                start_ns=span.start_ns,
                end_ns=span.end_ns,
                status=status if status in ("ok", "error", "unset") else "unset",
                error=attrs.get(TOOL_ERROR),
                turn=attrs.get("turn", 1) if isinstance(attrs.get("turn", 1), int) else 1,
                source="manual",
                result=attrs.get(TOOL_RESULT),
            )
        )
    return calls


def with_calls(trace: EvalTrace, calls: list[ToolCall], handoffs: list[Handoff]) -> EvalTrace:
    """A copy of ``trace`` whose ``tool_calls`` and ``handoffs`` are these (a check scoped to
    one agent's calls: ``checks.agent_scope``), every other field shared with ``trace``. Its
    ``spans`` are the trace's, not made here (they are made when first read)."""
    made: EvalTrace = EvalTrace.__new__(EvalTrace)
    for name in EvalTrace.__slots__:  # type: ignore[attr-defined]
        if name == "spans":
            _SPANS_SLOT.__set__(made, _SPANS_SLOT.__get__(trace, EvalTrace))
        elif name not in ("tool_calls", "handoffs"):
            setattr(made, name, getattr(trace, name))
    made.tool_calls = calls
    made.handoffs = handoffs
    return made
