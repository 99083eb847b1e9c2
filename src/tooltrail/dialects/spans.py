"""What the other spans of a trace say: agent and model spans, the calls a model asked for,
the final reply, conversation ids, agent names. All attribute names live here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

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

_AGENT_NAME_KEYS = ("gen_ai.agent.name", "ai.telemetry.functionId", "agent.name")


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
    if attrs is not None and attrs.get("traceloop.span.kind") == "agent":
        return text(attrs.get("traceloop.entity.name"))
    span_name = span.name
    if span_name.startswith("invoke_agent "):
        return text(span_name[len("invoke_agent ") :].strip())
    if attrs is not None and (
        attrs.get("mlflow.spanType") in ('"AGENT"', "AGENT")
        or attrs.get("openinference.span.kind") == "AGENT"
    ):
        return text(span_name)
    return None


#: Span or resource attributes that carry a conversation (session) id, in order of trust.
CONVERSATION_KEYS = (
    "gen_ai.conversation.id",
    "session.id",
    "traceloop.association.properties.session_id",
    "ai.telemetry.metadata.conversation_id",
    "ai.telemetry.metadata.conversationId",
    "ai.telemetry.metadata.session_id",
    "ai.telemetry.metadata.sessionId",
    "langsmith.metadata.session_id",
    "langsmith.metadata.thread_id",
    "mlflow.trace.session",
)

#: Where an offline test set names the case a trace belongs to (span or resource attribute).
CASE_ID_KEY = "tooltrail.case_id"


def conversation_id(attrs: Mapping[str, Any]) -> str | None:
    """The conversation (session) id among ``attrs``, if any (looked up key by key: see
    ``roles.classify``)."""
    if attrs is None:  # (an empty mapping has none of them: see ``roles.classify``)
        return None
    for key in CONVERSATION_KEYS:
        value = attrs.get(key)
        if value is not None:
            found = ident(value) if key != "mlflow.trace.session" else ident(double_json(value))
            if found:
                return found
    return None


# --- the calls a model asked for -------------------------------------------------------------


@dataclass(slots=True)
class ModelCall:
    """A tool call as the model emitted it (in its response), in emission order."""

    name: str
    call_id: str | None
    args: dict[str, Any] | None
    #: Position in the model's response (0-based).
    position: int
    source: str


def model_calls(span: SpanLike) -> list[ModelCall]:
    """Tool calls listed by a model span: GenAI ``gen_ai.output.messages`` parts of type
    ``tool_call`` (attribute or inference-details event), Vercel ``ai.response.toolCalls``,
    OpenInference ``llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.*``,
    Google ADK ``gcp.vertex.agent.llm_response`` ``function_call`` parts."""
    attrs = span.attributes
    raw = attrs.get("gen_ai.output.messages")
    if raw is not None:
        return genai_output(raw)[0]
    raw = attrs.get("ai.response.toolCalls")
    if raw is not None:
        return _vercel_calls(raw)
    if ADK_RESPONSE in attrs:
        return _adk_response(attrs.get(ADK_RESPONSE))[0]
    if attrs.get("openinference.span.kind") == "LLM":
        return _openinference_calls(attrs)
    for event in span.events or ():
        if event.name == "gen_ai.client.inference.operation.details":
            raw = (event.attributes or {}).get("gen_ai.output.messages")
            if raw is not None:
                return genai_output(raw)[0]
    return []


def model_output(span: SpanLike) -> tuple[list[ModelCall], str | None]:
    """``(model_calls(span), model_reply(span))``, reading the output messages once."""
    attrs = span.attributes
    raw = attrs.get("gen_ai.output.messages")
    if raw is not None:
        return genai_output(raw)
    if ADK_RESPONSE in attrs:  # ADK's ``call_llm`` span: its own record of the response
        calls, reply = _adk_response(attrs.get(ADK_RESPONSE))
        return calls, reply if reply is not None else _event_reply(span)
    return model_calls(span), model_reply(span)


#: Google ADK's ``call_llm`` span: the model's response as JSON (``LlmResponse``), ``{}`` (or
#: absent) when content capture is off.
ADK_RESPONSE = "gcp.vertex.agent.llm_response"
_ADK_SOURCE = "model:" + ADK_RESPONSE


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


_GENAI_SOURCE = "model:gen_ai.output.messages"


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
        name = text(item.get("toolName"))
        if name is None:
            continue
        args = args_from(item.get("input", item.get("args")))
        calls.append(
            ModelCall(
                name, ident(item.get("toolCallId")), args, len(calls), "model:ai.response.toolCalls"
            )
        )
    return calls


_OI_PREFIX = "llm.output_messages."
_OI_CALL = ".message.tool_calls."


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
        name = text(fields.get("tool_call.function.name"))
        if name is None:
            continue
        args = args_from(fields.get("tool_call.function.arguments"), literal=True)
        calls.append(
            ModelCall(
                name,
                ident(fields.get("tool_call.id")),
                args,
                len(calls),
                "model:llm.output_messages",
            )
        )
    return calls


#: Finish reasons of a model response that asked for tools: OpenAI ``tool_calls`` (and the
#: older ``function_call``), Anthropic ``tool_use``, Vercel ``tool-calls``, Traceloop
#: ``tool_call``; compared lower-cased.
_TOOL_FINISH = frozenset(
    ("tool_calls", "tool_call", "tool-calls", "tool-call", "tool_use", "function_call")
)
_FINISH_KEYS = ("gen_ai.response.finish_reasons", "ai.response.finishReason")


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


_AGENT_REPLY_KEYS = ("final_result", "ai.response.text", "output.value", "traceloop.entity.output")


def agent_reply(span: SpanLike) -> str | None:
    """The reply an agent span records: Pydantic AI ``final_result``, Vercel
    ``ai.response.text``, OpenInference ``output.value``, Traceloop ``traceloop.entity.output``,
    MLflow ``mlflow.spanOutputs``, GenAI output messages, Strands ``gen_ai.choice`` event."""
    attrs = span.attributes
    if attrs is None:
        return model_reply(span)
    for key in _AGENT_REPLY_KEYS:
        if key in attrs:  # ``in`` first: most agent spans have none of these
            value = attrs.get(key)
            if value is not None:
                return _reply_text(value)
    if "mlflow.spanOutputs" in attrs:
        return _reply_text(double_json(attrs["mlflow.spanOutputs"]))
    return model_reply(span)


def model_reply(span: SpanLike) -> str | None:
    """The text a model (or agent) span's output messages carry, if any."""
    attrs = span.attributes
    raw = attrs.get("gen_ai.output.messages")
    if raw is not None:
        return _genai_text(raw)
    if "ai.response.text" in attrs:  # ``in`` first: keys of other conventions
        raw = attrs.get("ai.response.text")
        if raw is not None:
            return raw if isinstance(raw, str) and raw else None
    if "llm.output_messages.0.message.content" in attrs:
        content = attrs.get("llm.output_messages.0.message.content")
        if isinstance(content, str) and content:
            return content
    if ADK_RESPONSE in attrs:
        reply = _adk_response(attrs.get(ADK_RESPONSE))[1]
        if reply is not None:
            return reply
    return _event_reply(span)


def _event_reply(span: SpanLike) -> str | None:
    """The text of the span's last ``gen_ai.choice`` or inference-details event."""
    for event in reversed(span.events or ()):
        ev_attrs = event.attributes or {}
        if event.name == "gen_ai.choice":
            return message_text(ev_attrs.get("message"))
        if event.name == "gen_ai.client.inference.operation.details":
            raw = ev_attrs.get("gen_ai.output.messages")
            if raw is not None:
                return _genai_text(raw)
    return None


def _genai_text(raw: Any) -> str | None:
    return genai_output(raw)[1]


#: Keys under which frameworks wrap a final answer (LangChain ``{"outputs": {"output": ...}}``).
_REPLY_KEYS = ("outputs", "output", "final_output", "answer", "response", "result")


def _reply_text(value: Any) -> str | None:
    """An agent span's recorded output as the reply: JSON text parsed, a framework's result
    wrapper (JSON under ``_REPLY_KEYS``, or a repr: ``dialects.reprs``) unwrapped."""
    if isinstance(value, str):
        parsed = json_value(value)
        if isinstance(parsed, str):
            return _unwrap_reply(parsed)
        if parsed is value:
            return _unwrap_reply(value)
        return _unwrap_reply(parsed) or value
    if value is None:
        return None
    return _unwrap_reply(value) or str(value)


def _unwrap_reply(value: Any, depth: int = 0) -> str | None:
    if isinstance(value, str):
        if value[-1:] == ")" and depth < 4:  # maybe a result object's repr
            found = repr_field(value, _REPLY_KEYS)
            if found is not None:
                return _unwrap_reply(found, depth + 1) or value
        return value or None
    if isinstance(value, dict) and depth < 4:
        for key in _REPLY_KEYS:
            if key in value:
                return _unwrap_reply(value[key], depth + 1)
    return message_text(value)


# --- errors and metadata -------------------------------------------------------------------


def exception_message(span: SpanLike) -> str | None:
    """The message of the span's last ``exception`` event (OpenTelemetry semantic conventions)."""
    for event in reversed(span.events or ()):
        if event.name == "exception":
            attrs = event.attributes or {}
            message = text(attrs.get("exception.message"))
            return message or text(attrs.get("exception.type"))
    return None


#: Attributes that carry message content, tool arguments or results: kept out of
#: ``metadata["attributes"]`` (they may hold customer data and are large).
_CONTENT_KEYS = frozenset(
    {
        "final_result",
        "pydantic_ai.all_messages",
        "all_messages_events",
        "tool_arguments",
        "tool_response",
        "input.value",
        "output.value",
        "traceloop.entity.input",
        "traceloop.entity.output",
        "mlflow.spanInputs",
        "mlflow.spanOutputs",
        "gen_ai.prompt",
        "gen_ai.completion",
        "logfire.json_schema",
        "logfire.metrics",
    }
)
_CONTENT_PREFIXES = (
    "gen_ai.input.",
    "gen_ai.output.",
    "gen_ai.system_instructions",
    "gen_ai.tool.",
    "gen_ai.prompt.",
    "gen_ai.completion.",
    "ai.prompt",
    "ai.response.",
    "ai.toolCall.",
    "ai.result.",
    "llm.input_messages",
    "llm.output_messages",
    "llm.prompts",
    "gcp.vertex.agent.llm_",
    "gcp.vertex.agent.tool_",
)


def label_keys(attrs: Iterable[str]) -> list[str]:
    """The keys of ``attrs`` (in their order) that may hold labels: ``is_content_attribute``
    over all of them in one comprehension (root and agent spans of every trace come here)."""
    return [k for k in attrs if k not in _CONTENT_KEYS and not k.startswith(_CONTENT_PREFIXES)]


def is_content_attribute(key: str) -> bool:
    """Whether ``key`` holds message content, arguments or results rather than a label."""
    return key in _CONTENT_KEYS or key.startswith(_CONTENT_PREFIXES)
