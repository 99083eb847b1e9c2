"""Which spans are tool calls: the dialect readers of ``tooltrail.dialects``, used on SDK spans.

An SDK ``ReadableSpan`` (and a started ``Span``) has ``.name``, ``.attributes`` and ``.events``,
which is all a dialect reader asks for. ``SpanView`` hands the readers the attributes as the
hot path read them (``pipeline.sdk``); ``may_be_tool_call`` turns most spans away before any
reader runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tooltrail import dialects

#: ``read_tool_call(span) -> call | None``; a call has ``name``, ``args``, ``call_id``, ``source``.
read_tool_call: Callable[[Any], Any] = dialects.read_tool_call


class SpanView:
    """What a dialect reader reads of an SDK span, with the attributes as their plain dict
    (the readers' many ``get`` calls then cost a C-level lookup each)."""

    __slots__ = ("name", "attributes", "_span")

    def __init__(self, span: Any, attributes: Mapping[str, Any]) -> None:
        self.name = span.name
        self.attributes = attributes
        self._span = span

    @property
    def events(self) -> Any:
        return self._span.events


#: What the dialect readers recognise spans by: exact names, marker attribute keys, a prefix.
SPAN_NAMES = frozenset(dialects.BY_SPAN_NAME)
MARKER_KEYS = frozenset(key for key, _ in dialects.BY_MARKER)
TOOL_NAME_PREFIX = dialects.EXECUTE_TOOL_PREFIX


def may_be_tool_call(name: str, attributes: Mapping[str, Any]) -> bool:
    """False only for spans the dialect readers would turn away: a cheap first look built from
    their own tables (span names, marker attribute keys, the ``execute_tool`` prefix)."""
    return name_may_be_tool_call(name) or not MARKER_KEYS.isdisjoint(attributes)


def name_may_be_tool_call(name: str) -> bool:
    """The span-name half of ``may_be_tool_call``: a name a dialect reader takes up by itself.
    It depends on the name alone, so a caller that sees many spans may remember it per name."""
    return name in SPAN_NAMES or name.startswith(TOOL_NAME_PREFIX)
