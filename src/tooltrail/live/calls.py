"""Which spans are tool calls: the dialect readers of ``tooltrail.dialects``, used on SDK spans.

An SDK ``ReadableSpan`` (and a started ``Span``) has ``.name``, ``.attributes`` and ``.events``,
which is all a dialect reader asks for. Until the shared readers are importable, a reader of
the OpenTelemetry GenAI convention alone stands in (it is what ``tooltrail.live.tool`` emits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tooltrail.model import parse_args


@dataclass(slots=True)
class GenAICall:
    """A tool call read from a GenAI ``execute_tool`` span (the stand-in reader's result)."""

    name: str
    args: dict[str, Any] | None
    call_id: str | None
    source: str


def read_genai_tool_call(span: Any) -> GenAICall | None:
    """The call of an OpenTelemetry GenAI ``execute_tool`` span, else ``None``."""
    attrs = span.attributes
    if attrs.get("gen_ai.operation.name") != "execute_tool":
        return None
    name = attrs.get("gen_ai.tool.name")
    if not isinstance(name, str) or not name:
        prefix, _, rest = span.name.partition(" ")
        if prefix != "execute_tool" or not rest:
            return None
        name = rest
    raw = attrs.get("gen_ai.tool.call.arguments")
    call_id = attrs.get("gen_ai.tool.call.id")
    return GenAICall(
        name=name,
        args=parse_args(dict(raw) if hasattr(raw, "items") else raw),
        call_id=call_id if isinstance(call_id, str) else None,
        source="genai:gen_ai.tool.call.arguments",
    )


def _shared_reader() -> Callable[[Any], Any]:
    try:
        from tooltrail.dialects import read_tool_call
    except ImportError:
        return read_genai_tool_call
    return read_tool_call


#: ``read_tool_call(span) -> call | None``; a call has ``name``, ``args``, ``call_id``, ``source``.
read_tool_call: Callable[[Any], Any] = _shared_reader()
