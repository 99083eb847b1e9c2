"""One small reader per instrumentation convention for tool spans (CONVENTIONS.md table).

Each reader takes a span already recognised as its kind (see ``READERS`` in the package) and
returns the call, or ``None`` for a span that looks like a tool span but is not a call (an
ADK ``(merged tools)`` wrapper, a Pydantic AI output function or deferred call).
``DialectCall.source`` names the reader and the attribute the arguments came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tooltrail.dialects.values import (
    PLACEHOLDERS,
    args_from,
    double_json,
    ident,
    json_value,
    message_text,
    text,
    unwrap_call_envelope,
    unwrap_langchain_envelope,
    unwrap_single_input,
)


class SpanLike(Protocol):
    """What a reader needs: an otlp ``Span`` and an SDK ``ReadableSpan`` both qualify."""

    @property
    def name(self) -> str: ...
    @property
    def attributes(self) -> Mapping[str, Any]: ...
    @property
    def events(self) -> Any: ...


@dataclass(slots=True)
class DialectCall:
    """A tool call as one instrumentation recorded it on one span."""

    name: str
    #: The arguments; ``None`` when not captured (distinct from ``{}``).
    args: dict[str, Any] | None
    call_id: str | None
    #: Reader and attribute, e.g. ``"genai:gen_ai.tool.call.arguments"``.
    source: str
    #: Failure text when the instrumentation records a failed call that the span status may
    #: not show (ADK's retry plugin leaves such spans UNSET; Strands sets ``gen_ai.tool.status``).
    failure: str | None = None
    #: True when ``args`` holds positional values under ``"args"`` (parameter names unknown).
    positional: bool = False
    #: Why a tool span is not a call the agent made (a Pydantic AI output function or deferred
    #: call), else ``None``. ``read_tool_call`` never returns such a record; the converter
    #: uses it so the model's request for it is not taken for a call without a tool span.
    excluded: str | None = None


# --- OpenTelemetry GenAI and the frameworks that follow it ----------------------------------

_MERGED_TOOLS = "(merged tools)"
#: Span names that end with the tool name: GenAI ``execute_tool X``, MCP ``tools/call X``.
_NAME_PREFIXES = ("execute_tool ", "tools/call ")
_OUTPUT_FUNCTION_MSG = "running output function:"
_ADK_RETRY_MARK = "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN"


def read_genai(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """OpenTelemetry GenAI ``execute_tool`` spans (Pydantic AI v3, ADK, Strands, MLflow
    semconv export, Vercel v7, OpenLLMetry LangChain, MCP ``tools/call``), and ADK legacy
    ``execute_tool {name}``."""
    span_name = span.name
    # ``text`` and ``ident`` inline: every tool span of a dump comes through here
    name = attrs.get("gen_ai.tool.name")
    if not isinstance(name, str) or name in PLACEHOLDERS:
        name = None
        for prefix in _NAME_PREFIXES:
            if span_name.startswith(prefix):
                name = text(span_name[len(prefix) :].strip())
                break
    if name is None or name == _MERGED_TOOLS or span_name == "execute_tool (merged)":
        return None
    call_id = attrs.get("gen_ai.tool.call.id")
    if not isinstance(call_id, str) or call_id in PLACEHOLDERS:
        call_id = ident(call_id)
    # keys most tool spans lack are tested with ``in`` before their value is read: a decoder's
    # mapping answers ``in`` without building a value
    msg = attrs.get("logfire.msg") if "logfire.msg" in attrs else None
    if isinstance(msg, str) and msg.startswith(_OUTPUT_FUNCTION_MSG):
        return DialectCall(name, None, call_id, "pydantic-ai:logfire.msg", excluded="output")
    if "pydantic_ai.tool.deferral.name" in attrs:
        return DialectCall(name, None, call_id, "pydantic-ai:deferral", excluded="deferred")
    raw = attrs.get("gen_ai.tool.call.arguments")
    if raw is not None:  # the common case: the call made with its arguments at once
        args = args_from(raw)
        if (
            args is not None
            and "traceloop.span.kind" in attrs
            and attrs.get("traceloop.span.kind") == "tool"
        ):
            args = unwrap_langchain_envelope(args)
            source = "openllmetry-langchain:gen_ai.tool.call.arguments"
        else:
            source = "genai:gen_ai.tool.call.arguments"
        call = DialectCall(name, args, call_id, source)
    else:
        call = DialectCall(name, None, call_id, "genai:gen_ai.tool.name")
        _genai_args_elsewhere(call, attrs, span)
    if (
        "gen_ai.tool.status" in attrs
        or "gcp.vertex.agent.event_id" in attrs
        or "gcp.vertex.agent.tool_response" in attrs
    ):
        call.failure = _genai_failure(attrs, span)
    return call


def _genai_args_elsewhere(call: DialectCall, attrs: Mapping[str, Any], span: SpanLike) -> None:
    """Arguments of a GenAI tool span without ``gen_ai.tool.call.arguments``: ADK legacy,
    Pydantic AI v2 names, Traceloop input, or Strands events."""
    if "gcp.vertex.agent.tool_call_args" in attrs:
        call.args = _adk_legacy_args(attrs)
        call.source = "adk:gcp.vertex.agent.tool_call_args"
    elif "tool_arguments" in attrs:
        call.args = args_from(attrs.get("tool_arguments"))
        call.source = "pydantic-ai:tool_arguments"
    elif "traceloop.entity.input" in attrs:
        _traceloop_args(call, attrs)
    else:
        _strands_event_args(call, span)


def _adk_legacy_args(attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """ADK before 2.x writes ``"{}"`` for both arguments and response when content capture is
    off; that pair means "not captured", a lone ``"{}"`` is a call without arguments."""
    raw = attrs.get("gcp.vertex.agent.tool_call_args")
    if raw == "{}" and attrs.get("gcp.vertex.agent.tool_response") == "{}":
        return None
    return args_from(raw)


def _strands_event_args(call: DialectCall, span: SpanLike) -> None:
    """Strands records arguments in span events, not attributes."""
    for event in span.events or ():
        ev_name = event.name
        ev_attrs = event.attributes or {}
        if ev_name == "gen_ai.tool.message":
            args = args_from(ev_attrs.get("content"))
            if args is not None:
                call.args = args
                call.source = "strands:gen_ai.tool.message"
                if call.call_id is None:
                    call.call_id = ident(ev_attrs.get("id"))
                return
        elif ev_name == "gen_ai.client.inference.operation.details":
            for part in _message_parts(ev_attrs.get("gen_ai.input.messages")):
                if part.get("type") == "tool_call" and part.get("name") == call.name:
                    call.args = args_from(part.get("arguments"))
                    call.source = "strands:gen_ai.input.messages"
                    if call.call_id is None:
                        call.call_id = ident(part.get("id"))
                    return


def _genai_failure(attrs: Mapping[str, Any], span: SpanLike) -> str | None:
    """A Strands failure (``gen_ai.tool.status``) or one ADK's retry plugin hid in the result;
    asked only of spans with one of those attributes."""
    if attrs.get("gen_ai.tool.status") == "error":  # Strands
        for event in span.events or ():
            if event.name == "gen_ai.choice":
                reply = message_text((event.attributes or {}).get("message"))
                if reply:
                    return reply
        return message_text(attrs.get("gen_ai.tool.call.result")) or "error"
    if "gcp.vertex.agent.event_id" not in attrs and "gcp.vertex.agent.tool_response" not in attrs:
        return None  # only ADK's retry plugin hides failures in the result
    result = attrs.get("gen_ai.tool.call.result", attrs.get("gcp.vertex.agent.tool_response"))
    if isinstance(result, str) and _ADK_RETRY_MARK in result:
        parsed = json_value(result)
        if isinstance(parsed, dict) and parsed.get("response_type") == _ADK_RETRY_MARK:
            detail = parsed.get("error_details") or parsed.get("error_type")
            return str(detail) if detail else "error"
    return None


# --- frameworks with their own attributes ---------------------------------------------------


def read_vercel(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """Vercel AI SDK <= v6: span ``ai.toolCall`` with ``ai.toolCall.{name,args,id}``."""
    name = text(attrs.get("ai.toolCall.name"))
    if name is None:
        return None
    call_id = ident(attrs.get("ai.toolCall.id"))
    if "ai.toolCall.args" in attrs:
        return DialectCall(
            name, args_from(attrs["ai.toolCall.args"]), call_id, "vercel:ai.toolCall.args"
        )
    if "ai.toolCall.input" in attrs:  # one v5 revision
        return DialectCall(
            name, args_from(attrs["ai.toolCall.input"]), call_id, "vercel:ai.toolCall.input"
        )
    return DialectCall(name, None, call_id, "vercel:ai.toolCall.name")


def read_pydantic_v2(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """Pydantic AI instrumentation v2: span ``running tool`` with ``tool_arguments``."""
    name = text(attrs.get("gen_ai.tool.name"))
    if name is None:
        return None
    return DialectCall(
        name,
        args_from(attrs.get("tool_arguments")),
        ident(attrs.get("gen_ai.tool.call.id")),
        "pydantic-ai:tool_arguments",
    )


def read_openinference(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """OpenInference (Arize Phoenix): ``openinference.span.kind = TOOL``; ``input.value`` is
    JSON or, from LangChain, a Python repr. ``tool.parameters`` is the schema, not the call."""
    name = text(attrs.get("tool.name")) or text(span.name)
    if name is None:
        return None
    call_id = ident(attrs.get("tool.id")) or ident(attrs.get("tool_call.id"))
    call = DialectCall(name, None, call_id, "openinference:tool.name")
    raw = attrs.get("input.value")
    if raw is not None:
        args = args_from(raw, literal=True)
        call.source = "openinference:input.value"
        if args is not None:
            args, call.positional = unwrap_call_envelope(args)
        call.args = args
    return call


def read_traceloop(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """OpenLLMetry / Traceloop ``@tool``: ``traceloop.span.kind = tool``, arguments in
    ``traceloop.entity.input`` as ``{"args": [...], "kwargs": {...}}``."""
    name = text(attrs.get("traceloop.entity.name")) or text(attrs.get("gen_ai.tool.name"))
    if name is None and span.name.endswith(".tool"):
        name = text(span.name[: -len(".tool")])
    if name is None:
        return None
    call = DialectCall(name, None, ident(attrs.get("gen_ai.tool.call.id")), "traceloop:name")
    if "gen_ai.tool.call.arguments" in attrs:
        args = args_from(attrs["gen_ai.tool.call.arguments"])
        call.args = unwrap_langchain_envelope(args) if args is not None else None
        call.source = "openllmetry-langchain:gen_ai.tool.call.arguments"
    else:
        _traceloop_args(call, attrs)
    return call


def _traceloop_args(call: DialectCall, attrs: Mapping[str, Any]) -> None:
    call.source = "traceloop:traceloop.entity.input"
    args = args_from(attrs.get("traceloop.entity.input"))
    if args is None:
        call.args = None
        return
    args = unwrap_langchain_envelope(args)
    if args is not None:
        args, call.positional = unwrap_call_envelope(args)
    call.args = args


def read_mlflow(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """MLflow: ``mlflow.spanType = "\\"TOOL\\""`` (values JSON-encoded once more); the span
    name is the tool, ``mlflow.spanInputs`` the arguments."""
    name = text(span.name)
    if name is None:
        return None
    inputs = double_json(attrs.get("mlflow.spanInputs"))
    args = args_from(inputs) if isinstance(inputs, dict) else None
    return DialectCall(name, args, None, "mlflow:mlflow.spanInputs")


def read_langsmith(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """LangSmith OTel: ``langsmith.span.kind = tool``; the span name is the tool and
    ``gen_ai.prompt`` the run inputs, often ``{"input": "<python repr>"}``."""
    name = text(span.name)
    if name is None:
        return None
    args = args_from(attrs.get("gen_ai.prompt"), literal=True)
    if args is not None:
        args = unwrap_single_input(args)
    return DialectCall(name, args, None, "langsmith:gen_ai.prompt")


def _message_parts(value: Any) -> list[dict[str, Any]]:
    """The parts of GenAI ``gen_ai.*.messages`` (JSON text or structured)."""
    messages = json_value(value)
    if not isinstance(messages, list):
        return []
    parts: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, dict) and isinstance(message.get("parts"), list):
            parts.extend([p for p in message["parts"] if isinstance(p, dict)])
    return parts
