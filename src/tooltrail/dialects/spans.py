"""What the other spans of a trace say: agent and model spans, the calls a model asked for,
the final reply, conversation ids, agent names. Their attribute names are rows of
``rules.json`` (``agents``, ``models``, ``conversations``, ``events``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from tooltrail.dialects import messages, rules
from tooltrail.dialects.messages import ModelCall
from tooltrail.dialects.reprs import repr_field
from tooltrail.dialects.tools import SpanLike
from tooltrail.dialects.values import (
    PLACEHOLDERS,
    args_from,
    double_json,
    ident,
    json_value,
    message_text,
    text,
)

#: ``rules.json`` ``agents``: where an agent's name is, and the name of the agent it invokes.
_AGENT_NAME_KEYS = rules.keys("agents", "name", encodings={"text"})
_INVOKED = ("agents", "invoked_name")
_TL_AGENT = rules.row(*_INVOKED, "traceloop", encoding="text")
_TL_KIND, (_TL_AGENT_KIND,), _TL_AGENT_NAME = (
    _TL_AGENT["when"],
    _TL_AGENT["values"],
    _TL_AGENT["key"],
)
_INVOKE_PREFIX = rules.at(*_INVOKED, "genai", "prefix")
_NAMED_BY_SPAN = rules.at(*_INVOKED, "span_name")
_MLFLOW_KIND, _OI_KIND = _NAMED_BY_SPAN["when"]
_AGENT_KINDS = tuple(_NAMED_BY_SPAN["values"])


def agent_name(span: SpanLike, *, invoked: bool = False) -> str | None:
    """The agent a span runs in (``gen_ai.agent.name``, Vercel ``ai.telemetry.functionId``,
    OpenInference ``agent.name``); with ``invoked=True`` (an agent span) also the agent it
    invokes, named by Traceloop ``traceloop.entity.name``, ``invoke_agent {name}``, or the
    span name of MLflow and OpenInference agent spans."""
    attrs = span.attributes
    if attrs is not None:  # (an empty mapping has none of them: see ``roles.classify``)
        for key in _AGENT_NAME_KEYS:
            name = attrs.get(key)
            if isinstance(name, str) and name not in PLACEHOLDERS:  # ``text``, inline
                return name
    if not invoked:
        return None
    if attrs is not None and attrs.get(_TL_KIND) == _TL_AGENT_KIND:
        return text(attrs.get(_TL_AGENT_NAME))
    span_name = span.name
    if span_name.startswith(_INVOKE_PREFIX):
        return text(span_name[len(_INVOKE_PREFIX) :].strip())
    if attrs is not None and (
        attrs.get(_MLFLOW_KIND) in _AGENT_KINDS or attrs.get(_OI_KIND) in _AGENT_KINDS
    ):
        return text(span_name)
    return None


#: Span or resource attributes that carry a conversation (session) id, in order of trust
#: (``rules.json`` ``conversations.ids``); MLflow's is JSON-encoded once more.
_CONVERSATION = tuple(
    (row["key"], row["encoding"] == "json_twice")
    for row in rules.rows("conversations", "ids", encodings={"id", "json_twice"})
)
CONVERSATION_KEYS = tuple(key for key, _ in _CONVERSATION)

#: Where an offline test set names the case a trace belongs to (span or resource attribute).
CASE_ID_KEY = rules.key("conversations", "case_id", encoding="text")


def conversation_id(attrs: Mapping[str, Any]) -> str | None:
    """The conversation (session) id among ``attrs``, if any (looked up key by key: see
    ``roles.classify``)."""
    if attrs is None:  # (an empty mapping has none of them: see ``roles.classify``)
        return None
    for key, twice in _CONVERSATION:
        value = attrs.get(key)
        if value is not None:
            found = ident(double_json(value)) if twice else ident(value)
            if found:
                return found
    return None


# --- the calls a model asked for -------------------------------------------------------------


_M = ("models",)
_GENAI_OUTPUT = rules.key(*_M, "genai_output", encoding="messages")
_GENAI_SOURCE = rules.source(*_M, "genai_output", encoding="messages")
_VERCEL_CALLS = rules.key(*_M, "vercel_calls", encoding="json")
_VERCEL_SOURCE = rules.source(*_M, "vercel_calls", encoding="json")
_VERCEL_FIELDS = rules.row(*_M, "vercel_calls", encoding="json")["fields"]
#: A listed call's members: its name, id, and arguments (``input``, else v4's ``args``).
_VERCEL_NAME, _VERCEL_ID = _VERCEL_FIELDS["name"], _VERCEL_FIELDS["call_id"]
_VERCEL_INPUT, _VERCEL_ARGS = _VERCEL_FIELDS["args"]
_OI_MARKER = rules.row(*_M, "openinference_marker", encoding="text")
_OI_MARKER_KEY, _OI_LLM = _OI_MARKER["key"], _OI_MARKER["value"]
_OI_CALLS = rules.row(*_M, "openinference_calls", encoding="flat_list")
_OI_PREFIX, _OI_CALL, _OI_SOURCE = _OI_CALLS["prefix"], _OI_CALLS["infix"], _OI_CALLS["source"]
_OI_FIELDS = _OI_CALLS["fields"]
_OI_NAME, _OI_ARGS, _OI_ID = _OI_FIELDS["name"], _OI_FIELDS["args"], _OI_FIELDS["call_id"]
_VERCEL_REPLY = rules.key(*_M, "vercel_reply", encoding="text")
_OI_REPLY = rules.key(*_M, "openinference_reply", encoding="text")
_DETAILS = rules.at("events", "details")
_DETAILS_OUTPUT = rules.key("events", "details_output", encoding="messages")
_CHOICE = rules.at("events", "choice")


def model_calls(span: SpanLike) -> list[ModelCall]:
    """Tool calls listed by a model span: GenAI ``gen_ai.output.messages`` parts of type
    ``tool_call`` (attribute or inference-details event), Vercel ``ai.response.toolCalls``,
    OpenInference ``llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.*``,
    Google ADK ``gcp.vertex.agent.llm_response`` ``function_call`` parts; then the response
    records of ``rules.json`` ``messages.response`` (LiteLLM's raw response, OpenInference's
    ``output.value``), which also complete the ids and arguments of calls listed before."""
    attrs = span.attributes
    raw = attrs.get(_GENAI_OUTPUT)
    if raw is not None:
        return genai_output(raw)[0]
    raw = attrs.get(_VERCEL_CALLS)
    if raw is not None:
        return _vercel_calls(raw)
    if ADK_RESPONSE in attrs:
        return _adk_response(attrs.get(ADK_RESPONSE))[0]
    calls: list[ModelCall] = []
    if attrs.get(_OI_MARKER_KEY) == _OI_LLM:
        calls = _openinference_calls(attrs)
    else:
        for event in span.events or ():
            if event.name == _DETAILS:
                raw = (event.attributes or {}).get(_DETAILS_OUTPUT)
                if raw is not None:
                    return genai_output(raw)[0]
    recorded = _response_record(attrs)
    if recorded is None:
        return calls or messages.joined_calls(attrs) or []
    return _completed(calls, recorded[0]) if calls else recorded[0]


def model_output(span: SpanLike) -> tuple[list[ModelCall], str | None]:
    """``(model_calls(span), model_reply(span))``, reading the output messages once."""
    attrs = span.attributes
    raw = attrs.get(_GENAI_OUTPUT)
    if raw is not None:
        return genai_output(raw)
    if ADK_RESPONSE in attrs:  # ADK's ``call_llm`` span: its own record of the response
        calls, reply = _adk_response(attrs.get(ADK_RESPONSE))
        return calls, reply if reply is not None else _event_reply(span)
    return model_calls(span), model_reply(span)


#: Keys of the response records read after a model's own (``messages.response``): tested
#: with ``in`` first, since most model spans have none of them; then the prefixes of the
#: flattened ones, looked for in one pass over the keys.
_RESPONSE_KEYS = tuple((key, source) for key, flat, source in messages.RESPONSE_ROWS if not flat)
_RESPONSE_PREFIXES = tuple((key, source) for key, flat, source in messages.RESPONSE_ROWS if flat)
_FIRST_LETTERS = frozenset(prefix[0] for prefix, _ in _RESPONSE_PREFIXES)


def _response_record(attrs: Mapping[str, Any]) -> tuple[list[ModelCall], str | None] | None:
    """The calls and text of the first ``messages.response`` record ``attrs`` has that holds
    messages, or ``None``."""
    for key, source in _RESPONSE_KEYS:
        if key in attrs:
            listed = messages.read(attrs.get(key))
            if listed:
                return messages.output_of(listed, source)
    for prefix, source in _RESPONSE_PREFIXES:
        if any(key[:1] in _FIRST_LETTERS and key.startswith(prefix) for key in attrs):
            listed = messages.read(messages.unflatten(attrs, prefix))
            if listed:
                return messages.output_of(listed, source)
    return None


def _completed(calls: list[ModelCall], other: list[ModelCall]) -> list[ModelCall]:
    """``calls`` with the ids and arguments they lack taken from ``other``, a second record of
    the same response (the same names in the same order); otherwise ``calls`` as they are.
    (OpenInference flattens a response's calls without ids that its ``output.value`` keeps.)"""
    if len(other) != len(calls) or any(
        a.name != b.name for a, b in zip(calls, other, strict=False)
    ):
        return calls
    for call, twin in zip(calls, other, strict=False):
        if call.call_id is None:
            call.call_id = twin.call_id
        if call.args is None:
            call.args = twin.args
    return calls


#: Google ADK's ``call_llm`` span: the model's response as JSON (``LlmResponse``), ``{}`` (or
#: absent) when content capture is off.
ADK_RESPONSE = rules.key("models", "adk_response", encoding="json")
_ADK_SOURCE = rules.source("models", "adk_response", encoding="json")


def _adk_response(raw: Any) -> tuple[list[ModelCall], str | None]:
    """The ``function_call`` parts (in the model's order) and the text parts (joined; parts
    marked ``thought`` are reasoning, not text) of an ADK ``LlmResponse``."""
    calls: list[ModelCall] = []
    response = json_value(raw) if isinstance(raw, str) and raw[:1] == "{" else raw
    if not isinstance(response, dict):
        return calls, None
    content = response.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list):
        return calls, None
    texts: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        function_call = part.get("function_call")
        if isinstance(function_call, dict):
            name = text(function_call.get("name"))
            if name is not None:
                raw_args = function_call.get("args")  # absent: a call without arguments
                args = args_from(raw_args) if raw_args is not None else {}
                calls.append(
                    ModelCall(name, ident(function_call.get("id")), args, len(calls), _ADK_SOURCE)
                )
            continue
        content_text = part.get("text")
        if isinstance(content_text, str) and content_text not in PLACEHOLDERS:
            if not part.get("thought"):
                texts.append(content_text)
    return calls, "".join(texts) if texts else None


def genai_output(raw: Any) -> tuple[list[ModelCall], str | None]:
    """The tool calls (parts of type ``tool_call`` with a name) and the text (parts of type
    ``text``, or a message's plain ``content`` string, joined) of GenAI output messages. One
    pass over the parts, without a list of them: every model span of a dump comes through
    here."""
    calls: list[ModelCall] = []
    texts: list[str] = []
    if isinstance(raw, str) and raw[:1] == "[":  # ``json_value`` of JSON text, inline
        try:
            messages = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return calls, None
    else:
        messages = json_value(raw)
    if not isinstance(messages, list):
        return calls, None
    for message in messages:
        if not isinstance(message, dict):
            continue
        parts = message.get("parts")
        if not isinstance(parts, list):  # the message's text as a plain ``content`` string
            content = message.get("content")
            if isinstance(content, str) and content not in PLACEHOLDERS:
                texts.append(content)
            continue
        for part in parts:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "tool_call":
                name = part.get("name")
                if isinstance(name, str) and name not in PLACEHOLDERS:  # ``text``, inline
                    # a request the model made without arguments lists none: ``{}``
                    raw_args = part.get("arguments")
                    args = args_from(raw_args) if raw_args is not None else {}
                    call_id = part.get("id")
                    if not isinstance(call_id, str) or call_id in PLACEHOLDERS:
                        call_id = ident(call_id)  # ``ident``, inline for the common case
                    calls.append(ModelCall(name, call_id, args, len(calls), _GENAI_SOURCE))
            elif kind == "text":
                content = part.get("content")
                if isinstance(content, str) and content not in PLACEHOLDERS:
                    texts.append(content)
    return calls, "".join(texts) if texts else None


def _vercel_calls(raw: Any) -> list[ModelCall]:
    items = json_value(raw)
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        return []
    calls: list[ModelCall] = []
    for item in items:
        item = json_value(item)  # the attribute may also be a list of JSON strings
        if not isinstance(item, dict):
            continue
        name = text(item.get(_VERCEL_NAME))
        if name is None:
            continue
        args = args_from(item.get(_VERCEL_INPUT, item.get(_VERCEL_ARGS)))
        calls.append(ModelCall(name, ident(item.get(_VERCEL_ID)), args, len(calls), _VERCEL_SOURCE))
    return calls


def _openinference_calls(attrs: Mapping[str, Any]) -> list[ModelCall]:
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(_OI_PREFIX) or _OI_CALL not in key:
            continue
        head, _, tail = key[len(_OI_PREFIX) :].partition(_OI_CALL)
        index, _, field = tail.partition(".")
        if not head.isdigit() or not index.isdigit():
            continue
        found.setdefault((int(head), int(index)), {})[field] = value
    calls: list[ModelCall] = []
    for _, fields in sorted(found.items()):
        name = text(fields.get(_OI_NAME))
        if name is None:
            continue
        args = args_from(fields.get(_OI_ARGS), literal=True)
        calls.append(ModelCall(name, ident(fields.get(_OI_ID)), args, len(calls), _OI_SOURCE))
    return calls


#: Finish reasons of a model response that asked for tools: OpenAI ``tool_calls`` (and the
#: older ``function_call``), Anthropic ``tool_use``, Vercel ``tool-calls``, Traceloop
#: ``tool_call``; compared lower-cased (``rules.json`` ``models.asked_for_tools``).
_TOOL_FINISH = frozenset(rules.strings("models", "asked_for_tools"))
_FINISH_KEYS = rules.keys("models", "finish_reasons", encodings={"text", "text_list"})


def asked_for_tools(attrs: Mapping[str, Any] | None) -> bool:
    """Whether a model span's finish reason says the response asked for tools (GenAI
    ``gen_ai.response.finish_reasons``, a list; Vercel ``ai.response.finishReason``). Read
    for model spans that list no call: with content capture off, this is all that shows a
    call was asked for."""
    if attrs is None:
        return False
    for key in _FINISH_KEYS:
        if key in attrs:
            reasons = attrs.get(key)
            if isinstance(reasons, str):
                reasons = (reasons,)
            if isinstance(reasons, (list, tuple)):
                for reason in reasons:
                    if isinstance(reason, str) and reason.lower() in _TOOL_FINISH:
                        return True
    return False


# --- the final reply ---------------------------------------------------------------------


#: ``rules.json`` ``agents.reply``: (key, JSON-encoded twice, answers once present).
_AGENT_REPLY = tuple(
    (row["key"], row["encoding"] == "json_twice", row.get("answers") == "present")
    for row in rules.rows("agents", "reply", encodings={"reply", "json_twice"})
)


def agent_reply(span: SpanLike) -> str | None:
    """The reply an agent span records: Pydantic AI ``final_result``, Vercel
    ``ai.response.text``, OpenInference ``output.value``, Traceloop ``traceloop.entity.output``,
    MLflow ``mlflow.spanOutputs``, GenAI output messages, Strands ``gen_ai.choice`` event."""
    attrs = span.attributes
    if attrs is None:
        return model_reply(span)
    for key, twice, decides in _AGENT_REPLY:
        if key in attrs:  # ``in`` first: most agent spans have none of these
            value = attrs.get(key)
            if value is not None or decides:
                return _reply_text(double_json(value) if twice else value)
    return model_reply(span)


def model_reply(span: SpanLike) -> str | None:
    """The text a model (or agent) span's output messages carry, if any."""
    attrs = span.attributes
    raw = attrs.get(_GENAI_OUTPUT)
    if raw is not None:
        return _genai_text(raw)
    if _VERCEL_REPLY in attrs:  # ``in`` first: keys of other conventions
        raw = attrs.get(_VERCEL_REPLY)
        if raw is not None:
            return raw if isinstance(raw, str) and raw else None
    if _OI_REPLY in attrs:
        content = attrs.get(_OI_REPLY)
        if isinstance(content, str) and content:
            return content
    if ADK_RESPONSE in attrs:
        reply = _adk_response(attrs.get(ADK_RESPONSE))[1]
        if reply is not None:
            return reply
    reply = _event_reply(span)
    if reply is None:
        recorded = _response_record(attrs)
        if recorded is not None:
            return recorded[1]
    return reply


def _event_reply(span: SpanLike) -> str | None:
    """The text of the span's last ``gen_ai.choice`` or inference-details event."""
    for event in reversed(span.events or ()):
        ev_attrs = event.attributes or {}
        if event.name == _CHOICE:
            return message_text(ev_attrs.get("message"))
        if event.name == _DETAILS:
            raw = ev_attrs.get(_DETAILS_OUTPUT)
            if raw is not None:
                return _genai_text(raw)
    return None


def _genai_text(raw: Any) -> str | None:
    return genai_output(raw)[1]


#: Keys under which frameworks wrap a final answer (LangChain ``{"outputs": {"output": ...}}``).
_REPLY_KEYS = rules.strings("agents", "reply_wrappers")
#: The start of an object's repr (``Name(`` or ``module.Name(``): output text so shaped that
#: ends in an ellipsis is a summary cut to length (LlamaIndex's workflow ``StopEvent(...``),
#: not the reply, which is then the last model response.
_REPR_START = re.compile(r"[A-Za-z_][\w.]*\(")
_CUT = ("...", "\u2026")


def _reply_text(value: Any) -> str | None:
    """An agent span's recorded output as the reply: JSON text parsed, a framework's result
    wrapper (JSON under ``_REPLY_KEYS``, or a repr: ``dialects.reprs``) unwrapped; an output
    that holds the run's messages (``{"messages": [...]}``) gives its last assistant text."""
    if isinstance(value, str):
        parsed = json_value(value)
        if isinstance(parsed, str):
            return _unwrap_reply(parsed)
        if parsed is value:
            return _unwrap_reply(value)
        return _unwrap_reply(parsed) or _said_last(parsed) or value
    if value is None:
        return None
    return _unwrap_reply(value) or _said_last(value) or str(value)


def _said_last(value: Any) -> str | None:
    """The text of the last assistant message a recorded output holds, if it holds any."""
    listed = messages.read(value)
    for message in reversed(listed):
        if message.role == messages.ASSISTANT and message.text is not None:
            return message.text
    return None


def _unwrap_reply(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, str):
        if value[-1:] == ")" and depth < 4:  # maybe a result object's repr
            found = repr_field(value, _REPLY_KEYS)
            if found is not None:
                return _unwrap_reply(found, depth + 1) or value
        if value.endswith(_CUT) and _REPR_START.match(value):
            return None  # a repr cut to length: what it wrapped is lost
        return value if value not in PLACEHOLDERS else None  # a marker is no reply
    if isinstance(value, dict) and depth < 4:
        for key in _REPLY_KEYS:
            if key in value:
                return _unwrap_reply(value[key], depth + 1)
    return message_text(value)


# --- errors and metadata -------------------------------------------------------------------


_EXCEPTION = rules.at("events", "exception_event")
_EXCEPTION_MESSAGE, _EXCEPTION_TYPE = rules.keys("events", "exception_text", encodings={"text"})


def exception_message(span: SpanLike) -> str | None:
    """The message of the span's last ``exception`` event (OpenTelemetry semantic conventions)."""
    for event in reversed(span.events or ()):
        if event.name == _EXCEPTION:
            attrs = event.attributes or {}
            message = text(attrs.get(_EXCEPTION_MESSAGE))
            return message or text(attrs.get(_EXCEPTION_TYPE))
    return None


#: Attributes that carry message content, tool arguments or results: kept out of
#: ``metadata["attributes"]`` (they may hold customer data and are large).
#: (``rules.json`` ``content.not_labels``.)
_CONTENT_KEYS = frozenset(rules.strings("content", "not_labels", "keys"))
_CONTENT_PREFIXES = rules.strings("content", "not_labels", "prefixes")


def label_keys(attrs: Iterable[str]) -> list[str]:
    """The keys of ``attrs`` (in their order) that may hold labels: ``is_content_attribute``
    over all of them in one comprehension (root and agent spans of every trace come here)."""
    return [k for k in attrs if k not in _CONTENT_KEYS and not k.startswith(_CONTENT_PREFIXES)]


def is_content_attribute(key: str) -> bool:
    """Whether ``key`` holds message content, arguments or results rather than a label."""
    return key in _CONTENT_KEYS or key.startswith(_CONTENT_PREFIXES)


#: ``rules.json`` ``agents.handoffs``: the proposed GenAI semconv handoff attributes of a tool
#: span, and the tools whose calls hand control to another agent (docs/convert.md, "Handoffs").
_HANDOFF = ("agents", "handoffs")
HANDOFF_SOURCE_KEY = rules.key(*_HANDOFF, "source", encoding="text")
HANDOFF_TARGET_KEY = rules.key(*_HANDOFF, "target", encoding="text")
#: tool name -> (the argument that names the target, the kind of handoff).
HANDOFF_TOOLS: dict[str, tuple[str, str]] = {
    row["name"]: (row["from"], row["kind"]) for row in rules.at(*_HANDOFF, "tools")
}
#: (name prefix, kind): a call of such a tool hands off to the agent its name ends with.
HANDOFF_PREFIXES: tuple[tuple[str, str], ...] = tuple(
    (row["prefix"], row["kind"]) for row in rules.at(*_HANDOFF, "tool_prefixes")
)
#: The prefixes of a framework's record of a handoff that has no arguments by design
#: (``"arguments": "none"``): such a call is not one whose content was not captured.
HANDOFF_RECORD_PREFIXES: tuple[str, ...] = tuple(
    row["prefix"] for row in rules.at(*_HANDOFF, "tool_prefixes") if row.get("arguments")
)


def handoff_names(attrs: Mapping[str, Any] | None) -> tuple[str | None, str | None] | None:
    """(source, target) a tool span names in the semconv handoff attributes, ``None`` when it
    names neither (nearly every span: two lookups)."""
    if not attrs:
        return None
    source = text(attrs.get(HANDOFF_SOURCE_KEY))
    target = text(attrs.get(HANDOFF_TARGET_KEY))
    if source is None and target is None:
        return None
    return source, target
