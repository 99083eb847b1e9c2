"""One small reader per instrumentation convention for tool spans (CONVENTIONS.md table).

Each reader takes a span already recognised as its kind (see ``READERS`` in the package) and
returns the call, or ``None`` for a span that looks like a tool span but is not a call (an
ADK ``(merged tools)`` wrapper, a Pydantic AI output function or deferred call).
``DialectCall.source`` names the reader and the attribute the arguments came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tooltrail.dialects import rules
from tooltrail.dialects.messages import tool_message_failure
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

# ``rules.json`` ``tools``: the keys, encodings and source labels of each reader, bound once
_G = ("tools", "genai")
_GENAI_NAME = rules.key(*_G, "name", encoding="text")
_GENAI_NAME_SOURCE = rules.source(*_G, "name", encoding="text")
_MERGED_TOOLS = rules.at(*_G, "not_a_tool_name")
_MERGED_SPAN = rules.at(*_G, "not_a_tool_span")
#: Span names that end with the tool name: GenAI ``execute_tool X``, MCP ``tools/call X``.
_NAME_PREFIXES = rules.strings(*_G, "name_after_prefix")
_GENAI_ID = rules.key(*_G, "call_id", encoding="id")
_GENAI_ARGS = rules.key(*_G, "args", encoding="json")
_GENAI_SOURCE = rules.source(*_G, "args", encoding="json")
_LANGCHAIN_SOURCE = rules.source(*_G, "langchain_args", encoding="json")
_OUTPUT_FUNCTION = rules.row(*_G, "output_function", encoding="text")
_OUTPUT_FUNCTION_KEY = _OUTPUT_FUNCTION["key"]
_OUTPUT_FUNCTION_MSG = _OUTPUT_FUNCTION["prefix"]
_OUTPUT_FUNCTION_SOURCE = _OUTPUT_FUNCTION["source"]
_DEFERRED_KEY = rules.key(*_G, "deferred", encoding="present")
_DEFERRED_SOURCE = rules.source(*_G, "deferred", encoding="present")
_ELSEWHERE = (*_G, "args_elsewhere")
_ADK_ARGS = rules.row(*_ELSEWHERE, "adk", encoding="json")
_ADK_ARGS_KEY = _ADK_ARGS["key"]
_ADK_ARGS_PAIR = _ADK_ARGS["not_captured_pair"]
_ADK_ARGS_SOURCE = _ADK_ARGS["source"]
_PYDANTIC_ARGS = rules.key(*_ELSEWHERE, "pydantic_v2", encoding="json")
_PYDANTIC_SOURCE = rules.source(*_ELSEWHERE, "pydantic_v2", encoding="json")
_TRACELOOP_INPUT = rules.key(*_ELSEWHERE, "traceloop", encoding="json")
_TRACELOOP_SOURCE = rules.source(*_ELSEWHERE, "traceloop", encoding="json")
_STRANDS_MESSAGE = rules.row(*_ELSEWHERE, "strands_message", encoding="json")
_MESSAGE_EVENT, _MESSAGE_KEY = _STRANDS_MESSAGE["event"], _STRANDS_MESSAGE["key"]
_MESSAGE_SOURCE = _STRANDS_MESSAGE["source"]
_STRANDS_DETAILS = rules.row(*_ELSEWHERE, "strands_details", encoding="messages")
_DETAILS_EVENT, _DETAILS_KEY = _STRANDS_DETAILS["event"], _STRANDS_DETAILS["key"]
_DETAILS_SOURCE = _STRANDS_DETAILS["source"]
_FAILURE = (*_G, "failure")
_STATUS = rules.row(*_FAILURE, "status", encoding="text")
_STATUS_KEY, _STATUS_ERROR = _STATUS["key"], _STATUS["value"]
_RESULT_KEY = rules.key(*_FAILURE, "result", encoding="content_blocks")
_ADK_EVENT_KEY = rules.key(*_FAILURE, "adk_event", encoding="present")
_ADK_RESULT = rules.row(*_FAILURE, "adk_result", encoding="json")
_ADK_RESULT_KEY, _ADK_RETRY_MARK = _ADK_RESULT["key"], _ADK_RESULT["marker"]
_MCP_RESULT = rules.row(*_FAILURE, "mcp_result", encoding="json")
_MCP_WHEN, _MCP_RESULT_KEY = _MCP_RESULT["when"], _MCP_RESULT["key"]
#: ``CallToolResult.isError``: the member that marks an MCP tool's failure in its result.
_IS_ERROR = _MCP_RESULT["marker"]
_ERROR_TYPE_KEY = rules.key(*_FAILURE, "error_type", encoding="text")
_CHOICE = rules.at("events", "choice")


def read_genai(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """OpenTelemetry GenAI ``execute_tool`` spans (Pydantic AI v3, ADK, Strands, MLflow
    semconv export, Vercel v7, OpenLLMetry LangChain, MCP ``tools/call``), and ADK legacy
    ``execute_tool {name}``."""
    span_name = span.name
    # ``text`` and ``ident`` inline: every tool span of a dump comes through here
    name = attrs.get(_GENAI_NAME)
    if not isinstance(name, str) or name in PLACEHOLDERS:
        name = None
        for prefix in _NAME_PREFIXES:
            if span_name.startswith(prefix):
                name = text(span_name[len(prefix) :].strip())
                break
    if name is None or name == _MERGED_TOOLS or span_name == _MERGED_SPAN:
        return None
    call_id = attrs.get(_GENAI_ID)
    if not isinstance(call_id, str) or call_id in PLACEHOLDERS:
        call_id = ident(call_id)
    # keys most tool spans lack are tested with ``in`` before their value is read: a decoder's
    # mapping answers ``in`` without building a value
    msg = attrs.get(_OUTPUT_FUNCTION_KEY) if _OUTPUT_FUNCTION_KEY in attrs else None
    if isinstance(msg, str) and msg.startswith(_OUTPUT_FUNCTION_MSG):
        return DialectCall(name, None, call_id, _OUTPUT_FUNCTION_SOURCE, excluded="output")
    if _DEFERRED_KEY in attrs:
        return DialectCall(name, None, call_id, _DEFERRED_SOURCE, excluded="deferred")
    raw = attrs.get(_GENAI_ARGS)
    if raw is not None:  # the common case: the call made with its arguments at once
        args = args_from(raw)
        if args is not None and _TRACELOOP_KIND in attrs and attrs.get(_TRACELOOP_KIND) == _TOOL:
            call = DialectCall(name, unwrap_langchain_envelope(args), call_id, _LANGCHAIN_SOURCE)
            call.failure = _langchain_failure(attrs.get(_RESULT_KEY))
        else:
            call = DialectCall(name, args, call_id, _GENAI_SOURCE)
    else:
        call = DialectCall(name, None, call_id, _GENAI_NAME_SOURCE)
        _genai_args_elsewhere(call, attrs, span)
    if (
        _STATUS_KEY in attrs
        or _ADK_EVENT_KEY in attrs
        or _ADK_RESULT_KEY in attrs
        or _MCP_WHEN in attrs
        or _ERROR_TYPE_KEY in attrs
    ):
        call.failure = _genai_failure(attrs, span)
    return call


#: How a LangChain tool message marked failed spells its status (``json.dumps``, spaced or not).
_LANGCHAIN_FAILED = re.compile(r'"status"\s*:\s*"error"')


def _langchain_failure(result: Any) -> str | None:
    """OpenLLMetry's LangChain tool span: a result that is LangChain's tool message marked
    ``status: "error"`` (a handled tool error: the span's own status stays unset) is the
    call's failure, its text the message's content. JSON text is parsed only when it names
    the status."""
    if not isinstance(result, str) or _LANGCHAIN_FAILED.search(result) is None:
        return None
    return tool_message_failure(json_value(result))


def _genai_args_elsewhere(call: DialectCall, attrs: Mapping[str, Any], span: SpanLike) -> None:
    """Arguments of a GenAI tool span without ``gen_ai.tool.call.arguments``: ADK legacy,
    Pydantic AI v2 names, Traceloop input, or Strands events."""
    if _ADK_ARGS_KEY in attrs:
        call.args = _adk_legacy_args(attrs)
        call.source = _ADK_ARGS_SOURCE
    elif _PYDANTIC_ARGS in attrs:
        call.args = args_from(attrs.get(_PYDANTIC_ARGS))
        call.source = _PYDANTIC_SOURCE
    elif _TRACELOOP_INPUT in attrs:
        _traceloop_args(call, attrs)
    else:
        _strands_event_args(call, span)


def _adk_legacy_args(attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """ADK before 2.x writes ``"{}"`` for both arguments and response when content capture is
    off; that pair means "not captured", a lone ``"{}"`` is a call without arguments."""
    raw = attrs.get(_ADK_ARGS_KEY)
    if raw == "{}" and attrs.get(_ADK_ARGS_PAIR) == "{}":
        return None
    return args_from(raw)


def _strands_event_args(call: DialectCall, span: SpanLike) -> None:
    """Strands records arguments in span events, not attributes."""
    for event in span.events or ():
        ev_name = event.name
        ev_attrs = event.attributes or {}
        if ev_name == _MESSAGE_EVENT:
            args = args_from(ev_attrs.get(_MESSAGE_KEY))
            if args is not None:
                call.args = args
                call.source = _MESSAGE_SOURCE
                if call.call_id is None:
                    call.call_id = ident(ev_attrs.get("id"))
                return
        elif ev_name == _DETAILS_EVENT:
            for part in _message_parts(ev_attrs.get(_DETAILS_KEY)):
                if part.get("type") == "tool_call" and part.get("name") == call.name:
                    call.args = args_from(part.get("arguments"))
                    call.source = _DETAILS_SOURCE
                    if call.call_id is None:
                        call.call_id = ident(part.get("id"))
                    return


def _genai_failure(attrs: Mapping[str, Any], span: SpanLike) -> str | None:
    """A Strands failure (``gen_ai.tool.status``), one ADK's retry plugin hid in the result,
    an MCP result marked ``isError`` (an MCP span's, or an ADK span's: an MCP tool's), or the
    ``error.type`` the conventions set on a failed call; asked only of spans with one of
    those attributes, so a tool span of no such kind never has its result read here."""
    if attrs.get(_STATUS_KEY) == _STATUS_ERROR:  # Strands
        for event in span.events or ():
            if event.name == _CHOICE:
                reply = message_text((event.attributes or {}).get("message"))
                if reply:
                    return reply
        return message_text(attrs.get(_RESULT_KEY)) or "error"
    failure = None
    if _ADK_EVENT_KEY in attrs or _ADK_RESULT_KEY in attrs:
        result = attrs.get(_RESULT_KEY, attrs.get(_ADK_RESULT_KEY))
        if isinstance(result, str) and _ADK_RETRY_MARK in result:
            parsed = json_value(result)
            if isinstance(parsed, dict) and parsed.get("response_type") == _ADK_RETRY_MARK:
                detail = parsed.get("error_details") or parsed.get("error_type")
                return str(detail) if detail else "error"
        failure = _mcp_tool_error(result)
    elif _MCP_WHEN in attrs:
        failure = _mcp_tool_error(attrs.get(_MCP_RESULT_KEY))
    if failure is None and _ERROR_TYPE_KEY in attrs:
        failure = text(attrs.get(_ERROR_TYPE_KEY))
    return failure


def _mcp_tool_error(result: Any) -> str | None:
    """The text of an MCP ``CallToolResult`` marked ``isError: true`` (JSON text or the
    structured value), ``"error"`` when it holds none; ``None`` for any other result. JSON
    text is parsed only when it names the marker."""
    if isinstance(result, str):
        if _IS_ERROR not in result:
            return None
        result = json_value(result)
    if not isinstance(result, dict) or result.get(_IS_ERROR) is not True:
        return None
    return message_text(result.get("content")) or "error"


# --- frameworks with their own attributes ---------------------------------------------------


_V = ("tools", "vercel")
_VERCEL_NAME = rules.key(*_V, "name", encoding="text")
_VERCEL_NAME_SOURCE = rules.source(*_V, "name", encoding="text")
_VERCEL_ID = rules.key(*_V, "call_id", encoding="id")
_VERCEL_ARGS = tuple(
    (row["key"], row["source"]) for row in rules.rows(*_V, "args", encodings={"json"})
)


def read_vercel(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """Vercel AI SDK <= v6: span ``ai.toolCall`` with ``ai.toolCall.{name,args,id}``."""
    name = text(attrs.get(_VERCEL_NAME))
    if name is None:
        return None
    call_id = ident(attrs.get(_VERCEL_ID))
    for key, source in _VERCEL_ARGS:  # ``ai.toolCall.args``, then one v5 revision's name
        if key in attrs:
            return DialectCall(name, args_from(attrs[key]), call_id, source)
    return DialectCall(name, None, call_id, _VERCEL_NAME_SOURCE)


_P2 = ("tools", "pydantic_v2")
_P2_NAME = rules.key(*_P2, "name", encoding="text")
_P2_ID = rules.key(*_P2, "call_id", encoding="id")
_P2_ARGS = rules.key(*_P2, "args", encoding="json")
_P2_SOURCE = rules.source(*_P2, "args", encoding="json")


def read_pydantic_v2(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """Pydantic AI instrumentation v2: span ``running tool`` with ``tool_arguments``."""
    name = text(attrs.get(_P2_NAME))
    if name is None:
        return None
    return DialectCall(name, args_from(attrs.get(_P2_ARGS)), ident(attrs.get(_P2_ID)), _P2_SOURCE)


_OI = ("tools", "openinference")
_OI_NAME = rules.key(*_OI, "name", encoding="text")
_OI_NAME_SOURCE = rules.source(*_OI, "name", encoding="text")
_OI_ID, _OI_CALL_ID = rules.keys(*_OI, "call_id", encodings={"id"})
_OI_ARGS = rules.key(*_OI, "args", encoding="json_or_repr")
_OI_SOURCE = rules.source(*_OI, "args", encoding="json_or_repr")
_OI_HIDDEN = rules.key(*_OI, "args_hidden", encoding="json")
_OI_HIDDEN_SOURCE = rules.source(*_OI, "args_hidden", encoding="json")
#: A span name that is a tool's name and the method it ran (DSPy ``lookup_order.__call__``).
_OI_SUFFIX = rules.at(*_OI, "name_before_suffix")


def read_openinference(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """OpenInference (Arize Phoenix): ``openinference.span.kind = TOOL``; ``input.value`` is
    JSON or, from LangChain, a Python repr. ``tool.parameters`` is the schema in the
    convention, but the call's arguments in some instrumentations (Agno): read only when
    ``input.value`` is absent or a redaction marker, and never when it is a JSON schema."""
    name = text(attrs.get(_OI_NAME))
    if name is None:
        span_name = span.name
        if span_name.endswith(_OI_SUFFIX):
            span_name = span_name[: -len(_OI_SUFFIX)]
        name = text(span_name)
    if name is None:
        return None
    call_id = ident(attrs.get(_OI_ID)) or ident(attrs.get(_OI_CALL_ID))
    call = DialectCall(name, None, call_id, _OI_NAME_SOURCE)
    raw = attrs.get(_OI_ARGS)
    if raw is not None:
        args = args_from(raw, literal=True)
        call.source = _OI_SOURCE
        if args is not None:
            args, call.positional = unwrap_call_envelope(args)
        call.args = args
    if call.args is None and _OI_HIDDEN in attrs and (raw is None or raw in PLACEHOLDERS):
        params = args_from(attrs.get(_OI_HIDDEN))
        if params is not None and not _is_json_schema(params):
            call.args = params
            call.source = _OI_HIDDEN_SOURCE
    return call


def _is_json_schema(value: dict[str, Any]) -> bool:
    """Whether ``value`` is a JSON schema (a tool's parameters as declared), not arguments."""
    if "$schema" in value:
        return True
    return value.get("type") == "object" and isinstance(value.get("properties"), dict)


_TL = ("tools", "traceloop")
_TL_NAMES = rules.rows(*_TL, "name", encodings={"text"})
_TL_NAME, _TL_TOOL_NAME = (row["key"] for row in _TL_NAMES)
_TL_NAME_SOURCE = _TL_NAMES[0]["source"]
_TL_SUFFIX = rules.at(*_TL, "name_before_suffix")
_TL_ID = rules.key(*_TL, "call_id", encoding="id")
_TL_ARGS_ROWS = rules.rows(*_TL, "args", encodings={"json"})
_TL_ARGS, _TL_ARGS_SOURCE = _TL_ARGS_ROWS[0]["key"], _TL_ARGS_ROWS[0]["source"]
#: The marker of a Traceloop tool span (``roles.by_marker``), read by ``read_genai`` to tell
#: OpenLLMetry's LangChain spans, whose arguments sit in an envelope.
_TL_OUTPUT = rules.key(*_TL, "failure", encoding="json")
#: The members of OpenLLMetry's MCP client output for a failed call (the shape of the value:
#: code), and nothing else: a tool's own output that happens to hold one is no failure.
_TL_IS_ERROR, _TL_FAILURE_TEXT = "is_error", "result"
_TL_FAILURE_MEMBERS = frozenset({_TL_IS_ERROR, _TL_FAILURE_TEXT})
_TRACELOOP_KIND, _TOOL = next(
    (row["key"], value)
    for row in rules.at("roles", "by_marker")
    for value, role in row["values"].items()
    if role == "tool:traceloop"
)


def read_traceloop(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """OpenLLMetry / Traceloop ``@tool``: ``traceloop.span.kind = tool``, arguments in
    ``traceloop.entity.input`` as ``{"args": [...], "kwargs": {...}}``."""
    name = text(attrs.get(_TL_NAME)) or text(attrs.get(_TL_TOOL_NAME))
    if name is None and span.name.endswith(_TL_SUFFIX):
        name = text(span.name[: -len(_TL_SUFFIX)])
    if name is None:
        return None
    call = DialectCall(name, None, ident(attrs.get(_TL_ID)), _TL_NAME_SOURCE)
    if _TL_ARGS in attrs:
        args = args_from(attrs[_TL_ARGS])
        call.args = unwrap_langchain_envelope(args) if args is not None else None
        call.source = _TL_ARGS_SOURCE
    else:
        _traceloop_args(call, attrs)
    if _TL_OUTPUT in attrs:
        call.failure = _traceloop_failure(attrs.get(_TL_OUTPUT))
    return call


def _traceloop_failure(output: Any) -> str | None:
    """OpenLLMetry's MCP client span: an output of exactly ``{result, is_error: true}`` is a
    failed call (its text the result's); any other output is none. JSON text is parsed only
    when it names the marker."""
    if isinstance(output, str):
        if _TL_IS_ERROR not in output:
            return None
        output = json_value(output)
    if (
        not isinstance(output, dict)
        or output.get(_TL_IS_ERROR) is not True
        or not output.keys() <= _TL_FAILURE_MEMBERS
    ):
        return None
    return text(output.get(_TL_FAILURE_TEXT)) or "error"


def _traceloop_args(call: DialectCall, attrs: Mapping[str, Any]) -> None:
    call.source = _TRACELOOP_SOURCE
    args = args_from(attrs.get(_TRACELOOP_INPUT))
    if args is None:
        call.args = None
        return
    args = unwrap_langchain_envelope(args)
    if args is not None:
        args, call.positional = unwrap_call_envelope(args)
    call.args = args


_MLFLOW_ARGS = rules.key("tools", "mlflow", "args", encoding="json_twice")
_MLFLOW_SOURCE = rules.source("tools", "mlflow", "args", encoding="json_twice")


def read_mlflow(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """MLflow: ``mlflow.spanType = "\\"TOOL\\""`` (values JSON-encoded once more); the span
    name is the tool, ``mlflow.spanInputs`` the arguments."""
    name = text(span.name)
    if name is None:
        return None
    inputs = double_json(attrs.get(_MLFLOW_ARGS))
    args = args_from(inputs) if isinstance(inputs, dict) else None
    return DialectCall(name, args, None, _MLFLOW_SOURCE)


_LANGSMITH_ARGS = rules.key("tools", "langsmith", "args", encoding="json_or_repr")
_LANGSMITH_SOURCE = rules.source("tools", "langsmith", "args", encoding="json_or_repr")


def read_langsmith(span: SpanLike, attrs: Mapping[str, Any]) -> DialectCall | None:
    """LangSmith OTel: ``langsmith.span.kind = tool``; the span name is the tool and
    ``gen_ai.prompt`` the run inputs, often ``{"input": "<python repr>"}``."""
    name = text(span.name)
    if name is None:
        return None
    args = args_from(attrs.get(_LANGSMITH_ARGS), literal=True)
    if args is not None:
        args = unwrap_single_input(args)
    return DialectCall(name, args, None, _LANGSMITH_SOURCE)


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
