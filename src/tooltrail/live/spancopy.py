"""A copy of an ended SDK span with other attributes or events.

The SDK freezes a span's attributes before ``on_end``, so a processor that adds or rewrites
attributes at the end passes a new ``ReadableSpan`` on. The copy keeps everything else,
including the counts of attributes, events and links the SDK dropped under its limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan

from tooltrail.pipeline import sdk
from tooltrail.pipeline.sdk import SpanReaders


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
    original: ReadableSpan,
    attributes: Mapping[str, Any],
    events: Sequence[Event],
    readers: SpanReaders | None = None,
) -> ReadableSpan:
    """``original`` with other attributes and events, as a ``CopiedSpan``.

    Every tool span that changed after its start takes this path, so the SDK's fields are
    copied as they are when ``readers`` (default ``pipeline.sdk.READERS``) can; else the copy
    is built through the public properties.
    """
    copy: Any = (sdk.READERS if readers is None else readers).copy(
        original, CopiedSpan, attributes, events
    )
    if copy is None:
        return CopiedSpan(original, attributes, events)
    copy._dropped = (original.dropped_attributes, original.dropped_events, original.dropped_links)
    return copy
