"""Span attributes parsed by C into a hash table (``wire.MappedTraces``), read on demand.

A key lookup (``get``, ``in``, ``[]``) is one call into the protobuf runtime plus the
decoding of that one value, so a reader that asks a few keys of a span never touches the
rest. What needs the attributes in wire order (iteration, ``items()``, ``==``, ``repr``) or
span more keys than ``Limits.max_attributes`` goes through the lean form of the same span
(``lazy.PbAttributes``): the request is outlined once (its spans kept as bytes, unparsed)
and only the span that needs it is parsed with the lean schema; both views share the
decoded values, so a value is decoded, and a problem with it reported, once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from tooltrail.otlp.decode.lazy import PbAttributes, Where, span_path
from tooltrail.otlp.decode.values import Notes, cut_bytes, cut_str, pb_value
from tooltrail.otlp.decode.wire import LeanSpan

_MISSING: Any = object()
#: Strings shorter than this are never cut (as ``kv._fast_value`` reads them).
_SHORT = 128


def _build_outline() -> Any:
    """A request down to its scope groups, each span left as its serialized bytes (every other
    field is unknown to it and skipped): parsing that costs a tenth of the lean schema, and
    the one span that needs its attributes in wire order is then parsed alone."""
    f = descriptor_pb2.FieldDescriptorProto
    package = "tooltrail.wire_outline"
    proto = descriptor_pb2.FileDescriptorProto(
        name="tooltrail/wire_outline.proto", package=package, syntax="proto3"
    )
    scope = proto.message_type.add(name="ScopeSpans")
    scope.field.add(name="spans", number=2, type=f.TYPE_BYTES, label=f.LABEL_REPEATED)
    resource = proto.message_type.add(name="ResourceSpans")
    for name, number in (("scope_spans", 2), ("instrumentation_library_spans", 1000)):
        resource.field.add(
            name=name,
            number=number,
            type=f.TYPE_MESSAGE,
            label=f.LABEL_REPEATED,
            type_name=f".{package}.ScopeSpans",
        )
    traces = proto.message_type.add(name="Traces")
    traces.field.add(
        name="resource_spans",
        number=1,
        type=f.TYPE_MESSAGE,
        label=f.LABEL_REPEATED,
        type_name=f".{package}.ResourceSpans",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{package}.Traces"))


_OutlineTraces: Any = _build_outline()


class RequestBytes:
    """The serialized request a mapped span came from, and its outline once needed."""

    __slots__ = ("data", "_outline", "_groups")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self._outline: Any = None
        #: resource index -> its scope groups (``scopeSpans`` then the old
        #: ``instrumentationLibrarySpans``), listed once: every root span of a request asks.
        self._groups: dict[int, list[Any]] = {}

    def lean_span(self, loc: tuple[int, int, int]) -> Any:
        """The ``wire.LeanSpan`` at ``loc`` (resource, scope group, span index)."""
        ri, si, pi = loc
        groups = self._groups.get(ri)
        if groups is None:
            outline = self._outline
            if outline is None:
                outline = self._outline = _OutlineTraces.FromString(self.data)
            resource_spans = outline.resource_spans[ri]
            groups = self._groups[ri] = list(resource_spans.scope_spans)
            groups.extend(resource_spans.instrumentation_library_spans)
        return LeanSpan.FromString(groups[si].spans[pi])


def any_value(value: Any, where: Where, loc: tuple[int, int, int], key: str) -> Any:
    """An ``AnyValue`` of the span at ``loc`` as Python, problems reported under its key.

    Scalars are read as ``kv.kv_value`` reads them from the wire (a string shorter than 128
    bytes is never cut); nested values go through ``values.pb_value``."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        text = value.string_value
        limit = where.limits.max_attribute_value_bytes
        if len(text) * 4 <= limit:
            return text
        size = len(text.encode())
        if size < _SHORT or size <= limit:
            return text
        notes: Notes = []
        result: Any = cut_str(text, where.limits, key, notes)
    elif kind is None:
        return None
    elif kind == "int_value" or kind == "bool_value" or kind == "double_value":
        return getattr(value, kind)
    else:
        notes = []
        if kind == "bytes_value":
            result = cut_bytes(value.bytes_value, where.limits, key, notes)
        else:
            result = pb_value(value, where.limits, key, notes)
    if notes:
        prefix = span_path(*loc) + ".attributes"
        for field, reason in notes:
            where.report(f"{prefix}.{field}" if field else prefix, reason)
    return result


class MappedAttributes(Mapping[str, Any]):
    """A read-only mapping over a span's ``map<string, AnyValue>`` attributes."""

    __slots__ = ("_map", "_where", "_loc", "_request", "_values", "_ordered", "_limit")

    def __init__(
        self, entries: Any, where: Where, loc: tuple[int, int, int], request: RequestBytes
    ) -> None:
        self._map = entries
        self._where = where
        self._loc = loc
        self._request = request
        self._values: dict[str, Any] | None = None
        self._ordered: PbAttributes | None = None
        self._limit = where.limits.max_attribute_value_bytes
        if len(entries) > where.limits.max_attributes:
            self._map = None  # over the limit: the wire order decides which are kept

    def _in_order(self) -> PbAttributes:
        """The same attributes in wire order. When both views hold the same keys they share
        one cache of decoded values (a value is decoded, and a problem with it reported, once)
        and lookups keep using the map, which is faster. Otherwise (a ``KeyValue`` naming its
        key twice, repeated keys past the attribute limit) the wire order decides from then on.
        """
        ordered = self._ordered
        if ordered is None:
            lean = self._request.lean_span(self._loc)
            ordered = self._ordered = PbAttributes(lean, self._where, self._loc)
            index = ordered._keys()
            values = self._values
            entries = self._map
            if (
                entries is not None
                and len(lean.attributes) <= self._where.limits.max_attributes
                and len(index) == len(entries)
                and all(key in entries for key in index)  # same size, distinct keys: same set
            ):
                if values is None:
                    values = self._values = {}
                ordered._values = values
            else:
                self._map = None
                if values:
                    ordered._values.update((k, v) for k, v in values.items() if k in index)
                self._values = None
        return ordered

    def get(self, key: str, default: Any = None) -> Any:
        entries = self._map
        if entries is None:
            return self._in_order().get(key, default)
        # ``in`` then ``[]`` (a present key only: ``[]`` would add a missing one) costs half
        # of the map's own ``get``
        if key not in entries:
            return default
        value = entries[key]
        text = value.string_value  # non-empty only when the value is a string (a oneof)
        if text and len(text) * 4 <= self._limit:  # the common case, nothing to report
            return text
        values = self._values
        if values is None:
            values = self._values = {}
        else:
            known = values.get(key, _MISSING)
            if known is not _MISSING:
                return known
        decoded = values[key] = any_value(value, self._where, self._loc, key)
        return decoded

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        entries = self._map
        if entries is None:
            return key in self._in_order()
        try:
            return key in entries
        except TypeError:  # not a string
            return False

    def __len__(self) -> int:
        entries = self._map
        return len(entries) if entries is not None else len(self._in_order())

    def __bool__(self) -> bool:
        return True  # only built for spans with attributes

    def __iter__(self) -> Iterator[str]:
        return iter(self._in_order())

    def items(self):  # type: ignore[no-untyped-def,override]
        return self._in_order().items()

    def values(self):  # type: ignore[no-untyped-def,override]
        return self._in_order().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, MappedAttributes):
            other = other._in_order()
        return self._in_order() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._in_order())
