"""A copy of an ended SDK span with other attributes or events.

The SDK freezes a span's attributes before ``on_end``, so a processor that adds or rewrites
attributes at the end passes a new ``ReadableSpan`` on. The copy keeps everything else,
including the counts of attributes, events and links the SDK dropped under its limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan

from tooltrail.pipeline.calls import SDK_LAYOUT_KNOWN


class CopiedSpan(ReadableSpan):
    """A ``ReadableSpan`` built from another with replaced attributes and events."""

    def __init__(
        self,
        original: ReadableSpan,
        attributes: Mapping[str, Any],
        events: Sequence[Event] | None = None,
    ) -> None:
        super().__init__(
            name=original.name,
            context=original.context,
            parent=original.parent,
            resource=original.resource,
            attributes=attributes,
            events=original.events if events is None else events,
            links=original.links,
            kind=original.kind,
            status=original.status,
            start_time=original.start_time,
            end_time=original.end_time,
            instrumentation_scope=original.instrumentation_scope,
        )
        self._dropped = (
            original.dropped_attributes,
            original.dropped_events,
            original.dropped_links,
        )

    @property
    def dropped_attributes(self) -> int:
        return self._dropped[0]

    @property
    def dropped_events(self) -> int:
        return self._dropped[1]

    @property
    def dropped_links(self) -> int:
        return self._dropped[2]


def copy_span(
    original: ReadableSpan, attributes: Mapping[str, Any], events: Sequence[Event]
) -> ReadableSpan:
    """``original`` with other attributes and events, as a ``CopiedSpan``.

    Every tool span that changed after its start takes this path, so when the SDK's span has
    the fields ``ReadableSpan.__init__`` sets, they are copied as they are (one dict update)
    rather than read back through a dozen properties.
    """
    fields = getattr(original, "__dict__", None)
    if SDK_LAYOUT_KNOWN and fields is not None and _FIELDS <= fields.keys():
        dropped = (original.dropped_attributes, original.dropped_events, original.dropped_links)
        copy = CopiedSpan.__new__(CopiedSpan)
        copy.__dict__.update({k: fields[k] for k in _FIELDS})
        copy._attributes = attributes
        copy._events = events
        copy._dropped = dropped
        return copy
    return CopiedSpan(original, attributes, events)


#: What ``ReadableSpan.__init__`` stores (opentelemetry-sdk 1.2x-1.4x).
_FIELDS = frozenset(
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
