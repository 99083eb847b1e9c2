"""What GenAI log records say: the model's reply and the tool calls it asked for.

Current GenAI instrumentations (OpenAI v2, google-genai, the newer semantic conventions) write
message content as OTLP log records rather than span attributes. The OpenTelemetry Events API
makes such a record the same thing as a span event of the span it was emitted in, so a record
is read here as a ``SpanEvent``: its name from ``eventName`` (or the older ``event.name`` /
``otel.event.name`` attributes), its attributes those of the record plus the members of its
body. The span readers of ``dialects.spans`` then read it like any span event.

Read for content: ``gen_ai.choice`` (the model's response: text and OpenAI-style
``message.tool_calls``) and ``gen_ai.client.inference.operation.details``
(``gen_ai.output.messages``). Prompt records (system, user, assistant and tool messages) are
history the model was sent: an assistant message there echoes an earlier response, whose
calls its own ``gen_ai.choice`` already gave, so they are not read for calls. When a trace is
read with content, user and tool messages (``PROMPT_EVENTS``) give the user's input and
tools' results (``dialects.content``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tooltrail.dialects import rules
from tooltrail.dialects.spans import ModelCall, genai_output
from tooltrail.dialects.values import (
    PLACEHOLDERS,
    args_from,
    ident,
    json_value,
    text,
)
from tooltrail.otlp.decode.span import SpanEvent

#: Where a log record's event name may stand, newest first.
EVENT_NAME_KEYS = rules.keys("events", "log_event_name", encodings={"text"})
CHOICE = rules.at("events", "choice")
DETAILS = rules.at("events", "details")
_DETAILS_OUTPUT = rules.key("events", "details_output", encoding="messages")
#: Records whose content ``content_of`` reads.
CONTENT_EVENTS = frozenset({CHOICE, DETAILS})
USER_MESSAGE = rules.at("events", "user_message")
TOOL_MESSAGE = rules.at("events", "tool_message")
#: Prompt records read too when a trace is read with content (``dialects.content``): what the
#: user said, and a tool's result sent back to the model (matched to its call by id).
PROMPT_EVENTS = frozenset({USER_MESSAGE, TOOL_MESSAGE})
#: Content an instrumentation recorded without the text (capture off, or elided).
ELIDED = frozenset(rules.strings("values", "elided"))


def event_name(name: str, attributes: Mapping[str, Any]) -> str:
    """A log record's event name: its own field, else the older attributes."""
    if name:
        return name
    for key in EVENT_NAME_KEYS:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def as_span_event(
    name: str, time_ns: int, attributes: Mapping[str, Any], body: Any, *, content: bool = False
) -> SpanEvent | None:
    """The span event a log record stands for, or ``None`` when it carries no content that
    ``content_of`` reads (prompts, evaluation results, plain logs); with ``content``, the
    user's and tools' prompt records (``PROMPT_EVENTS``) too."""
    name = event_name(name, attributes)
    if name not in CONTENT_EVENTS and not (content and name in PROMPT_EVENTS):
        return None
    merged = dict(attributes)
    members = body if isinstance(body, Mapping) else _object_text(body)
    if members is not None:
        for key, value in members.items():
            merged.setdefault(key, value)
    elif body is not None:
        merged.setdefault("body", body)
    return SpanEvent(name=name, time_ns=time_ns, attributes=merged)


def _object_text(body: Any) -> Mapping[str, Any] | None:
    """A body that is the JSON text of an object, as that object. A record made by a logging
    bridge (Python's ``logging`` through OpenTelemetry's ``LoggingHandler``, as Semantic Kernel
    sends its GenAI events) has the formatted message as its body, always a string: an
    instrumentation that logs ``json.dumps`` of the event's body gives its members as text."""
    if not isinstance(body, str) or not body.startswith("{"):
        return None
    parsed = json_value(body)
    return parsed if isinstance(parsed, Mapping) else None


def content_of(events: Sequence[SpanEvent]) -> tuple[list[ModelCall], str | None]:
    """The calls a model asked for and its reply text, from the content events of one model
    call (in time order): what its ``gen_ai.choice`` records and operation details say."""
    calls: list[ModelCall] = []
    reply: str | None = None
    for event in events:
        attrs = event.attributes
        if event.name == DETAILS:
            raw = attrs.get(_DETAILS_OUTPUT)
            if raw is not None:
                found, said = genai_output(raw)
                calls.extend(found)
                reply = _said(said) or reply
        elif event.name == CHOICE:
            message = json_value(attrs.get("message"))
            if isinstance(message, Mapping):
                calls.extend(_openai_calls(message.get("tool_calls"), len(calls), CHOICE))
                reply = _said(message.get("content")) or reply
            else:
                reply = _said(attrs.get("content")) or reply
    for position, call in enumerate(calls):
        call.position = position
    return calls, reply


def _said(value: Any) -> str | None:
    """Reply text, unless it is a placeholder for content that was not captured."""
    if isinstance(value, list):  # content blocks
        value = "".join(
            b["text"] for b in value if isinstance(b, dict) and isinstance(b.get("text"), str)
        )
    found = text(value) if isinstance(value, str) else None
    if found is None or found.strip() in ELIDED:
        return None
    return found


def _openai_calls(raw: Any, first: int, event: str) -> list[ModelCall]:
    """OpenAI chat ``tool_calls``: ``[{"id", "type": "function", "function": {"name",
    "arguments"}}]`` (a list, or JSON text of one)."""
    items = json_value(raw)
    if not isinstance(items, list):
        return []
    calls: list[ModelCall] = []
    for item in items:
        item = json_value(item)
        if not isinstance(item, Mapping):
            continue
        function = json_value(item.get("function"))
        if not isinstance(function, Mapping):
            continue
        name = function.get("name")
        if not isinstance(name, str) or name in PLACEHOLDERS:
            continue
        arguments = function.get("arguments")
        args = None if arguments is None or arguments in ELIDED else args_from(arguments)
        calls.append(
            ModelCall(
                name=name,
                call_id=ident(item.get("id")),
                args=args,
                position=first + len(calls),
                source=f"model:{event}",
            )
        )
    return calls
