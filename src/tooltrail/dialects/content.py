"""What a trace says the user asked and what a tool returned: content for judges.

Read only when a check needs content (``read_traces(..., content=True)``), the way
``dialects.usage`` is read only for budgets: these attributes are the largest of a trace.
A value the trace does not record is ``None``, never a guess; placeholders of content that
was not captured (``<REDACTED>``, ``<elided>``, ADK's ``"{}"`` pair) are not values.

A tool's result, per convention (CONVENTIONS.md):
- GenAI ``gen_ai.tool.call.result`` (Pydantic AI, ADK 2.x, MLflow, Strands with the latest
  semantic conventions), else a ``tool_call_response`` part of the tool span's
  inference-details event (``gen_ai.output.messages``);
- ADK legacy ``gcp.vertex.agent.tool_response``; Pydantic AI v2 ``tool_response``;
- Vercel ``ai.toolCall.result`` (one v5 revision: ``ai.toolCall.output``);
- OpenInference and Traceloop ``output.value`` / ``traceloop.entity.output``;
- MLflow ``mlflow.spanOutputs`` (JSON-encoded twice); LangSmith ``gen_ai.completion``;
- Strands (default conventions): the tool span's ``gen_ai.choice`` event, ``message``.
A call whose span records no result (or that has no span: a client-side tool) takes it from a
later model request's messages (GenAI ``tool_call_response`` parts, Vercel ``tool-result``
parts, Anthropic ``tool_result`` blocks, OpenAI-style ``role: tool`` messages, also flattened
by OpenInference and Traceloop), or from a ``gen_ai.tool.message`` event or log record, by
call id. JSON text becomes the value it holds; a list
of content blocks (``[{"text": ...}]``, as MCP and Strands return) becomes its text, itself
parsed when it is JSON.

The user's input is the text of the last user message a span was given: GenAI
``gen_ai.input.messages`` (attribute, or inference-details event), ``gen_ai.user.message``
events, Pydantic AI ``pydantic_ai.all_messages``, Vercel ``ai.prompt`` / ``ai.prompt.messages``,
OpenInference ``llm.input_messages.*`` and ``input.value``, Traceloop
``traceloop.entity.input``, MLflow ``mlflow.spanInputs``, LangSmith ``gen_ai.prompt``, and
``gen_ai.user.message`` log records joined to the span. A user
message without text (a tool's answer sent back in a user message) is not an input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooltrail.dialects import rules
from tooltrail.dialects.logs import TOOL_MESSAGE, USER_MESSAGE
from tooltrail.dialects.tools import SpanLike
from tooltrail.dialects.values import PLACEHOLDERS, double_json, ident, json_value

#: Bound on the nesting walked to find messages inside a framework's input object.
_MAX_DEPTH = 6
_USER_ROLES = ("user", "human")
_DETAILS = rules.at("events", "details")
_DETAILS_INPUT = rules.key("events", "details_input", encoding="messages")
_DETAILS_OUTPUT = rules.key("events", "details_output", encoding="messages")
_CHOICE = rules.at("events", "choice")

# --- tool results ---------------------------------------------------------------------------

#: Attributes of a tool span that hold its result, in order (each convention sets one):
#: ``rules.json`` ``content.tool_result`` as (key, JSON-encoded twice, answers once present,
#: the key whose ``"{}"`` with this one's means "not captured").
_RESULT_ROWS: tuple[tuple[str, bool, bool, str | None], ...] = tuple(
    (
        row["key"],
        row["encoding"] == "json_twice",
        row.get("answers") == "present",
        row.get("not_captured_pair"),
    )
    for row in rules.rows("content", "tool_result", encodings={"content_blocks", "json_twice"})
)


def tool_result(span: SpanLike) -> Any:
    """What the tool of ``span`` returned, or ``None`` when the span does not record it."""
    attrs = span.attributes
    if attrs is None:
        return None
    for key, twice, decides, pair in _RESULT_ROWS:
        if key in attrs:
            raw = attrs.get(key)
            if pair is not None and raw == "{}" and attrs.get(pair) == "{}":
                return None  # ADK legacy with content capture off writes this pair
            found = result_value(double_json(raw) if twice else raw)
            if found is not None or decides:
                return found
    return _event_result(span)


def _event_result(span: SpanLike) -> Any:
    """A result a tool span records in an event: a ``tool_call_response`` part of its
    inference-details output messages, or (Strands) the message of its ``gen_ai.choice``."""
    for event in reversed(span.events or ()):
        ev_attrs = event.attributes or {}
        if event.name == _DETAILS:
            messages = json_value(ev_attrs.get(_DETAILS_OUTPUT))
            for message in messages if isinstance(messages, list) else ():
                parts = message.get("parts") if isinstance(message, dict) else None
                for part in parts if isinstance(parts, list) else ():
                    if isinstance(part, dict) and part.get("type") == "tool_call_response":
                        found = result_value(part.get("response"))
                        if found is not None:
                            return found
        elif event.name == _CHOICE and "message" in ev_attrs:
            return result_value(ev_attrs.get("message"))
    return None


def model_content(span: SpanLike) -> tuple[str | None, dict[str, Any]]:
    """What a model span was sent: the user's text (``user_input``) and the tool results, by
    call id (``tool_results``), its input messages parsed once. The results complete a call
    whose own span records none, or that has no span (a client-side tool)."""
    attrs = span.attributes
    raw = attrs.get(_REQUEST_KEY) if attrs is not None else None
    if raw is None:
        for event in span.events or ():
            if event.name == _DETAILS:
                raw = (event.attributes or {}).get(_DETAILS_INPUT)
                if raw is not None:
                    break
    if raw is None and attrs is not None:
        for key in _HISTORY_KEYS:
            if key in attrs:
                raw = attrs.get(key)
                break
    messages = json_value(raw) if raw is not None else None
    found: dict[str, Any] = {}
    if isinstance(messages, list):
        _message_results(messages, found)
    elif attrs is not None:
        for prefix, role, call_id, content in _FLAT_MESSAGES:
            if prefix + "0" + role in attrs:
                _flat_results(attrs, (prefix, role, call_id, content), found)
                break
    if raw is None:  # the GenAI event convention: one event per message
        for event in span.events or ():
            if event.name == TOOL_MESSAGE:
                pair = tool_message(event.attributes or {})
                if pair is not None:
                    found.setdefault(*pair)
    said = _last_user_text(messages) if isinstance(messages, list) else None
    return (said if said is not None else user_input(span)), found


#: A model request's messages (``rules.json`` ``content.request_messages``): GenAI
#: ``gen_ai.input.messages`` (else the same in an inference-details event), then the
#: attributes that hold them when it is absent (Vercel ``ai.prompt.messages``, LangSmith
#: ``gen_ai.prompt``).
_REQUEST_KEY, *_HISTORY = rules.keys("content", "request_messages", encodings={"messages"})
_HISTORY_KEYS = tuple(_HISTORY)
#: Flattened messages, ``{prefix}{i}{field}``: (prefix, role, tool call id, content) fields of
#: OpenInference ``llm.input_messages`` and Traceloop's legacy ``gen_ai.prompt``
#: (``content.flat_messages``).
_FLAT_MESSAGES = tuple(
    (row["prefix"], row["fields"]["role"], row["fields"]["call_id"], row["fields"]["content"])
    for row in rules.rows("content", "flat_messages", encodings={"flat_list"})
)
#: Parts that carry a tool's result (``_message_results``): GenAI ``tool_call_response``
#: (``id``, ``response``), Vercel ``tool-result`` (``toolCallId``, ``output`` / v4 ``result``),
#: Anthropic ``tool_result`` (``tool_use_id``, ``content``).


def _message_results(messages: list[Any], found: dict[str, Any]) -> None:
    """Tool results in a list of chat messages, by call id: result parts of any message, and
    OpenAI-style ``role: tool`` messages (``tool_call_id``, ``content``). Every model request
    of a run repeats the history before it: the GenAI shape goes first."""
    for message in messages:
        if message.__class__ is not dict:
            continue
        parts = message.get("parts")
        if parts is None:
            if message.get("role") == "tool" and "tool_call_id" in message:
                call_id = ident(message.get("tool_call_id"))
                value = result_value(message.get("content"))
                if call_id is not None and value is not None:
                    found.setdefault(call_id, value)
                continue
            parts = message.get("content")
        if parts.__class__ is not list:
            continue
        for part in parts:
            kind = part.get("type") if part.__class__ is dict else None
            if kind == "tool_call_response":
                call_id, raw = part.get("id"), part.get("response")
            elif kind == "tool-result":
                call_id, raw = part.get(_VERCEL_ID), part.get("output", part.get("result"))
                if isinstance(raw, dict) and raw.get("type") in _VERCEL_OUTPUT:
                    raw = raw.get("value")  # Vercel v5: {"type": "json" | "text", "value"}
            elif kind == "tool_result":
                call_id, raw = part.get("tool_use_id", part.get("id")), part.get("content")
            else:
                continue
            call_id = ident(call_id)
            if call_id is None or call_id in found:  # the first one seen wins
                continue
            value = result_value(raw)
            if value is not None:
                found[call_id] = value


_VERCEL_OUTPUT = ("json", "text", "error-text", "error-json")
#: A Vercel tool result's call id: the member naming a listed call's (``models.vercel_calls``).
_VERCEL_ID = rules.at("models", "vercel_calls", "fields", "call_id")


def _flat_results(
    attrs: Mapping[str, Any], fields: tuple[str, str, str, str], found: dict[str, Any]
) -> None:
    """Tool results of flattened ``role: tool`` messages (``{prefix}{i}{field}``)."""
    prefix, role_field, id_field, content_field = fields
    for index in range(10_000):
        role = attrs.get(f"{prefix}{index}{role_field}")
        if role is None:
            break
        if role != "tool":
            continue
        call_id = ident(attrs.get(f"{prefix}{index}{id_field}"))
        value = result_value(attrs.get(f"{prefix}{index}{content_field}"))
        if call_id is not None and value is not None:
            found.setdefault(call_id, value)


def tool_message(attrs: Mapping[str, Any]) -> tuple[str, Any] | None:
    """``(call id, result)`` of a ``gen_ai.tool.message`` record (``id``, ``content``)."""
    call_id = ident(attrs.get("id", attrs.get("tool_call_id")))
    value = result_value(attrs.get("content"))
    return (call_id, value) if call_id is not None and value is not None else None


def user_message(attrs: Mapping[str, Any]) -> str | None:
    """The text of a ``gen_ai.user.message`` record (``content``)."""
    return _text_of(json_value(attrs.get("content")))


def result_value(raw: Any) -> Any:
    """A recorded result as a value: JSON text parsed, content blocks joined into their text
    (parsed again when that is JSON), placeholders ``None``."""
    if isinstance(raw, bytes):
        return None
    if isinstance(raw, str) and raw.strip() in PLACEHOLDERS:
        return None
    value = json_value(raw)
    if isinstance(value, list) and value and all(_is_text_block(b) for b in value):
        joined = "".join(block["text"] for block in value)
        value = json_value(joined) if joined not in PLACEHOLDERS else None
    if isinstance(value, str) and value.strip() in PLACEHOLDERS:
        return None
    return value


def _is_text_block(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and isinstance(block.get("text"), str)
        and block.get("type", "text") == "text"
    )


# --- the user's input -----------------------------------------------------------------------

#: Attributes holding the messages (or call inputs) a span was given, in order of trust
#: (``rules.json`` ``content.user_input``): (key, JSON-encoded twice). Then OpenInference's
#: flattened input messages (the first of ``content.flat_messages``).
_INPUT_ROWS = tuple(
    (row["key"], row["encoding"] == "json_twice")
    for row in rules.rows("content", "user_input", encodings={"messages", "json_twice"})
)
_OI_INPUT, _OI_ROLE, _, _OI_CONTENT = _FLAT_MESSAGES[0]


def user_input(span: SpanLike) -> str | None:
    """The text of the last user message ``span`` records, or ``None``."""
    attrs = span.attributes
    if attrs is None:
        return None
    for key, twice in _INPUT_ROWS:
        if key in attrs:
            raw = attrs.get(key)
            found = input_text(double_json(raw) if twice else raw)
            if found is not None:
                return found
    if _OI_INPUT + "0" + _OI_ROLE in attrs:
        found = _openinference_input(attrs)
        if found is not None:
            return found
    return _event_input(span)


def _event_input(span: SpanLike) -> str | None:
    """The last user text of a span's events: ``gen_ai.user.message`` (``content``), or the
    input messages of an inference-details event."""
    for event in reversed(span.events or ()):
        ev_attrs = event.attributes or {}
        if event.name == USER_MESSAGE:
            found = _text_of(json_value(ev_attrs.get("content")))
            if found is not None:
                return found
        elif event.name == _DETAILS and _DETAILS_INPUT in ev_attrs:
            found = _last_user_text(json_value(ev_attrs.get(_DETAILS_INPUT)))
            if found is not None:
                return found
    return None


def _openinference_input(attrs: Mapping[str, Any]) -> str | None:
    """OpenInference ``llm.input_messages.{i}.message.{role,content}``: the last user one."""
    found: str | None = None
    index = 0
    while index < 10_000:
        role = attrs.get(f"{_OI_INPUT}{index}{_OI_ROLE}")
        if role is None:
            break
        if role in _USER_ROLES:
            content = attrs.get(f"{_OI_INPUT}{index}{_OI_CONTENT}")
            if isinstance(content, str) and content not in PLACEHOLDERS:
                found = content
        index += 1
    return found


def input_text(raw: Any, depth: int = 0) -> str | None:
    """The user's text in a recorded input: the last user message of a list of messages
    (found under ``messages``, or in a Python call's ``args``/``kwargs``); a prompt string
    (``prompt``, ``input``, ``query``, ``question``, or the call's one string argument)."""
    value = json_value(raw)
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, str):
        return value if value.strip() not in PLACEHOLDERS else None
    if isinstance(value, list):
        if any(isinstance(m, dict) and "role" in m for m in value):
            return _last_user_text(value)
        strings = [v for v in value if isinstance(v, (str, list, dict))]
        for item in reversed(strings):  # a call's positional arguments
            if isinstance(item, (list, dict)):
                found = input_text(item, depth + 1)
                if found is not None:
                    return found
        texts = [v for v in strings if isinstance(v, str)]
        return input_text(texts[0], depth + 1) if len(texts) == 1 else None
    if isinstance(value, dict):
        for key in ("messages", "prompt", "input", "inputs", "query", "question", "kwargs"):
            if key in value:
                found = input_text(value[key], depth + 1)
                if found is not None:
                    return found
        if "args" in value:
            return input_text(value["args"], depth + 1)
    return None


def _last_user_text(messages: Any) -> str | None:
    if not isinstance(messages, list):
        return None
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") in _USER_ROLES:
            found = _text_of(message.get("parts", message.get("content")))
            if found is not None:
                return found
    return None


def _text_of(content: Any) -> str | None:
    """The text of a message's content: a string, or parts / blocks with text (GenAI
    ``{"type": "text", "content"}``, OpenAI and Vercel ``{"type": "text", "text"}``, Strands
    ``{"text"}``)."""
    if isinstance(content, str):
        return content if content.strip() not in PLACEHOLDERS else None
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for part in content:
        if not isinstance(part, dict) or part.get("type", "text") != "text":
            continue
        piece = part.get("content", part.get("text"))
        if isinstance(piece, str) and piece.strip() not in PLACEHOLDERS:
            texts.append(piece)
    return "".join(texts) if texts else None
