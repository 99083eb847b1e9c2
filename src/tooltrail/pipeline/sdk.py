"""The one place tooltrail reaches inside opentelemetry-sdk.

The SDK's public API answers every question tooltrail asks of a span (``span.name``,
``.attributes``, ``.events``, ``.context``, ``.parent``), but through properties that copy:
``attributes`` wraps the dict in a ``MappingProxyType`` (each missing key then costs a Python
``KeyError``), ``events`` builds a tuple, ``SpanContext.trace_id`` is a property. Every span of
the application passes the live processor and the trace buffer, so there tooltrail reads the
fields behind those properties instead. Every such read, and every other use of the SDK's
internals, is in this module:

- ``SpanReaders``: name and attributes, attributes, events, trace id and root-ness, and the copy
  of an ended span with other attributes and events. ``FIELDS`` reads the SDK's fields,
  ``PUBLIC`` only the public API; ``READERS`` is the one chosen at import;
- ``take_processors``: a tracer provider's processors, to run them behind tooltrail's;
- ``hook_acts`` and ``ending_hooks``: which processor hooks do anything (their bytecode), and the
  SDK's ``_on_ending`` hook.

The probe runs once, at import: the installed SDK version (``SDK_VERSION``, at least
``OLDEST_SDK``) and ``layout_known``, which builds a ``ReadableSpan`` and a started ``Span`` and
checks that the fields hold what the public API returns. CI tests both the oldest supported
SDK and the newest. On an SDK that fails the probe every reader is ``PUBLIC``: slower, the same
answers (one warning says so).

One other module imports underscored SDK names: ``pipeline/evaluation_events.py`` uses
``opentelemetry._logs`` and ``opentelemetry.sdk._logs``. That is the SDK's published logs API,
which still lives under underscored module names; it reads no span internals.
"""

from __future__ import annotations

import dis
import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

_log = logging.getLogger(__name__)

#: The oldest opentelemetry-sdk release tooltrail supports (pyproject's ``>=1.39``).
OLDEST_SDK = (1, 39)

#: What ``ReadableSpan.__init__`` stores (opentelemetry-sdk 1.39-1.45): a copy of an ended
#: span is these fields, with other attributes and events.
SPAN_FIELDS = frozenset(
    {
        "_name",
        "_context",
        "_kind",
        "_instrumentation_info",
        "_instrumentation_scope",
        "_parent",
        "_start_time",
        "_end_time",
        "_attributes",
        "_events",
        "_links",
        "_resource",
        "_status",
    }
)
_FIELD_COUNT = len(SPAN_FIELDS)


# -- readers of the SDK's fields (the fast path) ---------------------------------------------


def _fields_name_and_attributes(span: Any) -> tuple[str, Mapping[str, Any]]:
    """``(name, attributes)``: the plain dict inside the ``BoundedAttributes`` (C-level
    lookups); any other object falls back to ``_fields_attributes``."""
    try:
        return span._name, span._attributes._dict
    except AttributeError:
        return span.name, _fields_attributes(span)


def _fields_attributes(span: Any) -> Mapping[str, Any]:
    """The plain dict behind a span's attributes when there is one, else ``.attributes``.
    It is only read, never written."""
    try:
        inner = span._attributes._dict
    except AttributeError:
        attributes = getattr(span, "_attributes", None)
        return attributes if type(attributes) is dict else span.attributes
    return inner if type(inner) is dict else span.attributes


def _fields_events(span: Any) -> Sequence[Any]:
    """The span's own list of events (``.events`` copies it into a tuple)."""
    try:
        return span._events  # type: ignore[no-any-return]
    except AttributeError:
        return span.events  # type: ignore[no-any-return]


def _fields_trace_id(span: Any) -> int | None:
    """The trace id (``None`` without a context); a ``SpanContext`` is the tuple
    ``(trace_id, span_id, is_remote, ...)``."""
    context = span._context
    return None if context is None else context[0]


def _fields_trace_link(span: Any) -> tuple[int, bool] | None:
    """``(trace id, local root)``: a span without a parent, or with a remote one, is a local
    root (``None`` without a context)."""
    context = span._context
    if context is None:
        return None
    parent = span._parent
    return context[0], parent is None or parent[2]


def _fields_copy(
    original: Any, into: type[ReadableSpan], attributes: Mapping[str, Any], events: Sequence[Any]
) -> ReadableSpan | None:
    """A new ``into`` holding ``original``'s fields as they are (one dict update, not a dozen
    properties read back), with ``attributes`` and ``events``; ``None`` when ``original`` does
    not hold them all."""
    fields = getattr(original, "__dict__", None)
    if fields is None:
        return None
    if type(original) is ReadableSpan and len(fields) == _FIELD_COUNT:
        # What the SDK hands ``on_end``: the probe found its constructor storing exactly
        # ``SPAN_FIELDS``, so its dict is copied whole (0.6 us, against 1.8 us picking the
        # fields one by one: a tenth of a deferred tool span's work).
        state = fields.copy()
    elif SPAN_FIELDS <= fields.keys():
        state = {key: fields[key] for key in SPAN_FIELDS}
    else:
        return None
    state["_attributes"] = attributes
    state["_events"] = events
    copy = into.__new__(into)
    copy.__dict__ = state
    return copy


# -- the same through the public API (the fallback) ------------------------------------------


def _public_name_and_attributes(span: Any) -> tuple[str, Mapping[str, Any]]:
    return span.name, span.attributes


def _public_attributes(span: Any) -> Mapping[str, Any]:
    return span.attributes  # type: ignore[no-any-return]


def _public_events(span: Any) -> Sequence[Any]:
    return span.events  # type: ignore[no-any-return]


def _public_trace_id(span: Any) -> int | None:
    context = span.context
    return None if context is None else context.trace_id


def _public_trace_link(span: Any) -> tuple[int, bool] | None:
    context = span.context
    if context is None:
        return None
    parent = span.parent
    return context.trace_id, parent is None or parent.is_remote


def _public_copy(
    original: Any, into: type[ReadableSpan], attributes: Mapping[str, Any], events: Sequence[Any]
) -> ReadableSpan | None:
    """Never copies fields: the caller builds its copy through the constructor."""
    return None


@dataclass(frozen=True)
class SpanReaders:
    """How the hot paths read spans: every function takes a span (an SDK span or any object
    with the public API's properties). ``copy(original, into, attributes, events)`` returns a
    new ``into`` or ``None`` (then the caller uses ``into``'s constructor)."""

    kind: str
    name_and_attributes: Callable[[Any], tuple[str, Mapping[str, Any]]]
    attributes: Callable[[Any], Mapping[str, Any]]
    events: Callable[[Any], Sequence[Any]]
    trace_id: Callable[[Any], int | None]
    trace_link: Callable[[Any], tuple[int, bool] | None]
    copy: Callable[[Any, type[ReadableSpan], Mapping[str, Any], Sequence[Any]], ReadableSpan | None]


FIELDS = SpanReaders(
    kind="SDK fields",
    name_and_attributes=_fields_name_and_attributes,
    attributes=_fields_attributes,
    events=_fields_events,
    trace_id=_fields_trace_id,
    trace_link=_fields_trace_link,
    copy=_fields_copy,
)
PUBLIC = SpanReaders(
    kind="public API",
    name_and_attributes=_public_name_and_attributes,
    attributes=_public_attributes,
    events=_public_events,
    trace_id=_public_trace_id,
    trace_link=_public_trace_link,
    copy=_public_copy,
)


# -- the probe ---------------------------------------------------------------------------------


def installed_version() -> str:
    """The installed opentelemetry-sdk version, or ``"unknown"``."""
    try:
        from opentelemetry.sdk.version import __version__
    except ImportError:
        return "unknown"
    return str(__version__)


def release_of(version: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a version string, ``None`` when it has none."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def layout_known(readable: type[ReadableSpan] = ReadableSpan, version: str | None = None) -> bool:
    """Whether the fast readers give what the public API gives, on a ``readable`` built by its
    constructor and on a started SDK ``Span``: ``_name``, ``_context``, ``_parent``, ``_events``,
    a ``BoundedAttributes`` with a plain ``_dict`` (the live store of a started span), a
    ``SpanContext`` that is the tuple ``(trace_id, span_id, is_remote, ...)``, and exactly
    ``SPAN_FIELDS`` in a ``ReadableSpan``. False too for an SDK older than ``OLDEST_SDK``."""
    release = release_of(installed_version() if version is None else version)
    if release is not None and release < OLDEST_SDK:
        return False
    try:
        from opentelemetry.attributes import BoundedAttributes
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import Event, Span
        from opentelemetry.trace import SpanContext

        class _ProbeSpan(Span):
            """The SDK makes started spans through its tracer only; a subclass is allowed."""

        context, parent = SpanContext(7, 8, False), SpanContext(7, 9, True)
        ended = readable(
            name="n",
            context=context,
            parent=parent,
            resource=Resource.get_empty(),
            attributes=BoundedAttributes(attributes={"a": 1}),
            events=(Event("e", {"k": 1}, timestamp=1),),
        )
        started = _ProbeSpan(
            name="s",
            context=SpanContext(7, 10, False),
            parent=parent,
            resource=Resource.get_empty(),
            attributes={"a": 1},
        )
        started.set_attribute("b", 2)
        started.add_event("e")
        return (
            vars(ended).keys() == SPAN_FIELDS
            and SPAN_FIELDS <= vars(started).keys()
            and _fields_answer_as_public(ended)
            and _fields_answer_as_public(started)
            and started._attributes._dict == {"a": 1, "b": 2}  # type: ignore[union-attr]
            and len(started._events) == 1
        )
    except Exception:  # noqa: BLE001 - any surprise means: use the public API
        return False


def _fields_answer_as_public(span: Any) -> bool:
    context, parent = span._context, span._parent
    inner = span._attributes._dict
    return (
        span._name == span.name
        and type(inner) is dict
        and inner == dict(span.attributes)
        and tuple(span._events) == tuple(span.events)
        and context == span.context
        and parent == span.parent
        and (context[0], context[1], context[2])
        == (context.trace_id, context.span_id, context.is_remote)
        and (parent is None or parent[2] == parent.is_remote)
    )


#: The installed opentelemetry-sdk version.
SDK_VERSION = installed_version()
#: Whether the installed SDK passed the probe (see ``layout_known``).
LAYOUT_KNOWN = layout_known(version=SDK_VERSION)
#: The readers the hot paths use; components take them when they are built.
READERS = FIELDS if LAYOUT_KNOWN else PUBLIC
if not LAYOUT_KNOWN:
    _log.warning(
        "tooltrail: opentelemetry-sdk %s keeps spans in a way tooltrail does not know; "
        "reading them through the public API (correct, slower)",
        SDK_VERSION,
    )


def readers_for(kind: type) -> SpanReaders:
    """The readers for spans of class ``kind``: ``READERS`` for SDK spans, ``PUBLIC`` for any
    other object (say, an OTLP span a receiver decoded)."""
    return READERS if issubclass(kind, ReadableSpan) else PUBLIC


# -- processors ----------------------------------------------------------------------------------


def take_processors(provider: Any) -> list[SpanProcessor] | None:
    """Remove and return ``provider``'s processors, so they can run behind tooltrail's.

    The SDK has no public API for it: this uses its multi-processor (``_active_span_processor``
    with ``_lock`` and a tuple ``_span_processors``). ``None`` when that is not there: the
    processors then stay where they are."""
    active = getattr(provider, "_active_span_processor", None)
    lock = getattr(active, "_lock", None)
    if (
        active is None
        or lock is None
        or not isinstance(getattr(active, "_span_processors", None), tuple)
    ):
        return None
    with lock:
        taken = list(active._span_processors)
        active._span_processors = ()
    return taken


_NO_EFFECT = frozenset({"RESUME", "NOP", "LOAD_CONST", "RETURN_VALUE", "RETURN_CONST"})


def hook_acts(processor: Any, method: str) -> bool:
    """Whether ``processor``'s ``method`` can do anything: the SDK's own ``on_start`` and
    ``_on_ending`` are ``pass``, and calling them for every span costs time. Read from the
    method's bytecode; a method without Python code counts as doing something."""
    code = getattr(getattr(type(processor), method, None), "__code__", None)
    if code is None:
        return True
    return any(op.opname not in _NO_EFFECT for op in dis.get_instructions(code))


def ending_hooks(processors: Iterable[Any]) -> tuple[tuple[Any, Callable[[Any], None]], ...]:
    """``(processor, hook)`` for each processor whose ``_on_ending`` does something. Newer
    SDKs call that hook on a span between its end time and ``on_end``, while the span can still
    be written; a processor wrapping others passes it on. SDK 1.39 has no such hook, and
    processors without one are left out."""
    hooks = []
    for processor in processors:
        hook = getattr(processor, "_on_ending", None)
        if hook is not None and hook_acts(processor, "_on_ending"):
            hooks.append((processor, hook))
    return tuple(hooks)
