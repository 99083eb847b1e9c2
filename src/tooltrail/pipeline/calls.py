"""Which spans are tool calls: the dialect readers of ``tooltrail.dialects``, used on SDK spans.

An SDK ``ReadableSpan`` (and a started ``Span``) has ``.name``, ``.attributes`` and ``.events``,
which is all a dialect reader asks for. ``raw_attributes`` reads the plain dict behind an SDK
span's attributes; ``may_be_tool_call`` turns most spans away before any reader runs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tooltrail import dialects

#: ``read_tool_call(span) -> call | None``; a call has ``name``, ``args``, ``call_id``, ``source``.
read_tool_call: Callable[[Any], Any] = dialects.read_tool_call


def raw_attributes(span: Any) -> Mapping[str, Any]:
    """The plain dict behind an SDK span's attributes when there is one, else ``.attributes``.

    ``ReadableSpan.attributes`` wraps a ``BoundedAttributes`` in a ``MappingProxyType``: every
    lookup of a missing key then goes through Python code and a caught ``KeyError``. The dict
    inside answers in C. It is only read, never written.
    """
    try:
        inner = span._attributes._dict
    except AttributeError:
        attributes = getattr(span, "_attributes", None)
        return attributes if type(attributes) is dict else span.attributes
    return inner if type(inner) is dict else span.attributes


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
    return (
        name in SPAN_NAMES
        or not MARKER_KEYS.isdisjoint(attributes)
        or name.startswith(TOOL_NAME_PREFIX)
    )


def _sdk_layout_known() -> bool:
    """Whether SDK spans store what the hot paths read directly: ``_name``, ``_context``,
    ``_parent`` and a ``BoundedAttributes`` with a plain ``_dict``; and whether a
    ``SpanContext`` is the tuple ``(trace_id, span_id, is_remote, ...)``. Checked once; when
    any of it changes, the hot paths use the public properties instead."""
    try:
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import SpanContext

        context, parent = SpanContext(7, 8, False), SpanContext(7, 9, True)
        span = ReadableSpan("n", context, parent, attributes=BoundedAttributes(attributes={"a": 1}))
        return (
            span._name == "n"
            and span._context is context
            and span._parent is parent
            and span._attributes._dict == {"a": 1}  # type: ignore[union-attr]
            and (context[0], context[2], parent[2]) == (7, False, True)
        )
    except Exception:  # noqa: BLE001 - any surprise means: use the public API
        return False


#: See ``_sdk_layout_known``.
SDK_LAYOUT_KNOWN = _sdk_layout_known()
