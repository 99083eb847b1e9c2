"""The decoded span every wire format turns into, and the diagnostics of bad input.

This is the interface between ``tooltrail.otlp`` (which knows wire formats) and
``tooltrail.convert`` / ``tooltrail.dialects`` (which know instrumentations). Attribute
values are plain Python: AnyValue string/bool/int/double/bytes become str/bool/int/float/bytes,
``arrayValue`` a list, ``kvlistValue`` a dict, an empty AnyValue ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
    from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan


class WireGroup(Protocol):
    """A resource and scope group as read; shared by every span read in it.

    What the encoder (``write.encode``) asks of a decoded span's group to write again what
    ``Span`` has no field for; readers build one (``decode.rest``). A type only: the span
    knows no encoder."""

    def resource_spans(self) -> ResourceSpans:
        """A ``ResourceSpans`` holding the group's resource but its attributes (they come
        from ``Span.resource``), and its schema URL."""
        ...

    def scope_spans(self) -> ScopeSpans:
        """A ``ScopeSpans`` holding the scope (version, attributes, dropped count; its name
        comes from ``Span.scope_name``) and its schema URL, no spans."""
        ...

    def fill_span(self, wire: Any, out: PbSpan) -> None:
        """Set on ``out`` the fields of the span read as ``wire`` that ``Span`` does not hold."""
        ...


#: OTLP status codes.
STATUS_UNSET = 0
STATUS_OK = 1
STATUS_ERROR = 2


@dataclass(slots=True)
class SpanEvent:
    name: str
    time_ns: int = 0
    attributes: Mapping[str, Any] = field(default_factory=dict)
    dropped_attributes_count: int = 0


@dataclass(slots=True)
class Span:
    """One OTLP span. Ids are lower-case hex; ``parent_span_id`` is ``""`` for a root."""

    trace_id: str
    span_id: str
    parent_span_id: str = ""
    name: str = ""
    kind: int = 0
    start_ns: int = 0
    end_ns: int = 0
    status_code: int = STATUS_UNSET
    status_message: str = ""
    #: A mapping; decoders hand out a lazy one that decodes the wire form on first use.
    attributes: Mapping[str, Any] = field(default_factory=dict)
    #: A sequence of ``SpanEvent``; lazy too when decoded from the wire.
    events: Sequence[SpanEvent] = field(default_factory=list)
    #: Resource attributes, shared by every span of one ResourceSpans.
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str = ""
    #: Where the span was read from, for diagnostics: ``"path:line"`` or ``"path@offset"``.
    origin: str = ""
    #: The span as read (a parsed protobuf span or OTLP/JSON span object) and the resource and
    #: scope group it was read in. What this class does not hold (flags, trace state, links,
    #: dropped counts, the scope's version and attributes, schema URLs) stays there, and only
    #: the encoder reads it (``WireGroup``, ``decode.rest``). ``None`` for spans built by hand.
    wire: Any = None
    wire_group: WireGroup | None = None


@dataclass(slots=True, frozen=True)
class Diagnostic:
    """A record that could not be read, and why. Everything else is still read."""

    path: str
    #: 1-based line for line-oriented formats, else ``None``.
    line: int | None
    #: Byte offset of the bad record for binary formats, else ``None``.
    offset: int | None
    message: str

    def __str__(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
        elif self.offset is not None:
            where += f"@{self.offset}"
        return f"{where}: {self.message}"


@dataclass(slots=True)
class SpanHead:
    """What a span is without its attributes and events: handed out instead of a ``Span`` for
    spans outside a reader's ``Interest`` (building those costs more than all of this)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    status_code: int
    #: Resource attributes, shared by every span of one ResourceSpans.
    resource: Mapping[str, Any]
    scope_name: str
    origin: str


def head_of(span: Span) -> SpanHead:
    """The ``SpanHead`` of a span a reader decoded before it knew the span was of no
    interest. By position: readers call this for most plain spans (field order pinned by
    ``SpanHead``'s own definition just above)."""
    return SpanHead(
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.start_ns,
        span.end_ns,
        span.status_code,
        span.resource,
        span.scope_name,
        span.origin,
    )


@dataclass(frozen=True, slots=True)
class Interest:
    """Which spans a consumer needs in full; readers hand out the others as ``SpanHead``.

    A span is of interest when it is a root, when its name is one of ``names`` or starts with
    one of ``name_prefixes``, or when it carries one of ``keys`` (or attributes a reader would
    have to report as malformed, so that problems are reported exactly as before).
    """

    names: frozenset[str]
    name_prefixes: tuple[str, ...]
    #: Most common first: readers test them in this order.
    keys: tuple[str, ...]
    key_set: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_set", frozenset(self.keys))

    def named(self, name: str) -> bool:
        return name in self.names or name.startswith(self.name_prefixes)
