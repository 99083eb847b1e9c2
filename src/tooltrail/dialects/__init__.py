"""Where instrumentations put a tool call: one small reader per convention, tried in order.

Only this package knows instrumentation attribute names. ``read_tool_call`` runs on every
span of the live path, so a span that is not a tool span is turned away after a few
dictionary lookups: a table of span names, then a table of marker attributes, then the
``execute_tool `` name prefix. See docs/convert.md for the table as implemented.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tooltrail.dialects.spans import (
    CASE_ID_KEY,
    CONVERSATION_KEYS,
    ModelCall,
    agent_name,
    agent_reply,
    conversation_id,
    exception_message,
    is_agent_span,
    is_content_attribute,
    is_model_span,
    model_calls,
    model_reply,
)
from tooltrail.dialects.tools import (
    DialectCall,
    SpanLike,
    read_genai,
    read_langsmith,
    read_mlflow,
    read_openinference,
    read_pydantic_v2,
    read_traceloop,
    read_vercel,
)

Reader = Callable[[SpanLike, Mapping[str, Any]], "DialectCall | None"]

#: Readers chosen by exact span name (checked first: one dict lookup).
BY_SPAN_NAME: dict[str, Reader] = {
    "ai.toolCall": read_vercel,
    "running tool": read_pydantic_v2,
}

#: Readers chosen by a marker attribute and its values, in this order. A span matching an
#: earlier row is read by that row's reader (OpenLLMetry's LangChain spans carry both GenAI
#: and Traceloop markers and are read as GenAI, which unwraps their envelope).
BY_MARKER: tuple[tuple[str, frozenset[Any], Reader], ...] = (
    ("gen_ai.operation.name", frozenset({"execute_tool"}), read_genai),
    ("mcp.method.name", frozenset({"tools/call"}), read_genai),
    ("openinference.span.kind", frozenset({"TOOL"}), read_openinference),
    ("traceloop.span.kind", frozenset({"tool"}), read_traceloop),
    ("mlflow.spanType", frozenset({'"TOOL"', "TOOL"}), read_mlflow),
    ("langsmith.span.kind", frozenset({"tool", "TOOL"}), read_langsmith),
)

#: Spans named ``execute_tool {name}`` without a GenAI operation (ADK legacy) are GenAI too.
EXECUTE_TOOL_PREFIX = "execute_tool "
_PREFIX_LEN = len(EXECUTE_TOOL_PREFIX)

_MARKER_KEYS = frozenset(key for key, _, _ in BY_MARKER)
_FIRST_KEY, _FIRST_VALUES, _FIRST_READER = BY_MARKER[0]
_OTHER_KEYS = frozenset(key for key, _, _ in BY_MARKER[1:])


def read_tool_call(span: SpanLike) -> DialectCall | None:
    """The tool call ``span`` records, or ``None`` when it is not a tool call.

    ``span`` needs ``.name``, ``.attributes`` (a Mapping) and ``.events`` (objects with
    ``.name`` and ``.attributes``): an otlp ``Span`` and an SDK ``ReadableSpan`` both work.
    Cost for a span that is not a tool call: a dict lookup of its name, one set test over its
    attribute keys (two when it has a GenAI operation), one prefix test of its name.
    """
    name = span.name
    attrs = span.attributes
    reader = BY_SPAN_NAME.get(name)
    if reader is None and attrs and not _MARKER_KEYS.isdisjoint(attrs):
        value = attrs.get(_FIRST_KEY)
        if value.__class__ is str and value in _FIRST_VALUES:
            reader = _FIRST_READER
        elif not _OTHER_KEYS.isdisjoint(attrs):
            reader = _marked_reader(attrs)
    if reader is None:
        if name[:_PREFIX_LEN] != EXECUTE_TOOL_PREFIX:
            return None
        reader = read_genai
    return reader(span, attrs if attrs is not None else {})


def _marked_reader(attrs: Mapping[str, Any]) -> Reader | None:
    for key, values, reader in BY_MARKER[1:]:
        value = attrs.get(key)
        if value.__class__ is str and value in values:
            return reader
    return None


__all__ = [
    "BY_MARKER",
    "BY_SPAN_NAME",
    "CASE_ID_KEY",
    "CONVERSATION_KEYS",
    "DialectCall",
    "ModelCall",
    "agent_name",
    "agent_reply",
    "conversation_id",
    "exception_message",
    "is_agent_span",
    "is_content_attribute",
    "is_model_span",
    "model_calls",
    "model_reply",
    "read_tool_call",
]
