"""Span attributes and events decoded on first use.

Most spans of an agent trace are never looked at closely: the converter asks a handful of
keys and moves on. Keeping the wire form (serialized ``KeyValue`` messages, or the JSON list)
and decoding it only when asked keeps reading near the speed of the raw parse. Problems found
while decoding late are appended to the diagnostics list the reader was given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.kv import Undecodable, kv_key, kv_value
from tooltrail.otlp.decode.limits import Limits
from tooltrail.otlp.decode.span import Diagnostic, SpanEvent
from tooltrail.otlp.decode.values import (
    Notes,
    json_attributes,
    json_int,
    json_value,
    pb_raw_attributes,
)


class Where:
    """Where a record came from; shared by every span of the record."""

    __slots__ = ("path", "line", "offset", "limits", "sink", "origin")

    def __init__(
        self,
        path: str,
        line: int | None,
        offset: int | None,
        limits: Limits,
        sink: list[Diagnostic] | None,
    ) -> None:
        self.path = path
        self.line = line
        self.offset = offset
        self.limits = limits
        self.sink = sink
        if line is not None:
            self.origin = f"{path}:{line}"
        elif offset is not None:
            self.origin = f"{path}@{offset}"
        else:
            self.origin = path

    def report(self, field: str, reason: str) -> None:
        if self.sink is not None:
            message = f"{field}: {reason}" if field else reason
            self.sink.append(Diagnostic(self.path, self.line, self.offset, message))

    def report_notes(self, notes: Notes) -> None:
        for field, reason in notes:
            self.report(field, reason)


def span_path(ri: int, si: int, pi: int) -> str:
    return f"resourceSpans[{ri}].scopeSpans[{si}].spans[{pi}]"


_MISSING: Any = object()


class LazyAttributes(Mapping[str, Any]):
    """A read-only mapping over attributes still in wire form.

    The first lookup indexes the keys (wire order; a repeated key: the last value wins);
    a value is decoded when it is first asked for. ``items()``/``values()``/``==`` decode all.
    A value that cannot be decoded reads as ``None`` and is reported as a diagnostic.
    """

    __slots__ = ("_raw", "_where", "_loc", "_index", "_values")
    #: Whether the wire form can be dropped once indexed.
    _index_holds_all = False

    def __init__(self, raw: Any, where: Where, loc: tuple[int, int, int]) -> None:
        self._raw = raw
        self._where = where
        self._loc = loc
        self._index: dict[str, Any] | None = None
        self._values: dict[str, Any] = {}

    # -- to be provided by the wire format --------------------------------------------------

    def _build_index(self, notes: Notes) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _decode_item(self, key: str, item: Any, notes: Notes) -> Any:  # pragma: no cover
        raise NotImplementedError

    # -- Mapping ------------------------------------------------------------------------------

    def _report(self, notes: Notes) -> None:
        prefix = span_path(*self._loc) + ".attributes"
        for field, reason in notes:
            self._where.report(f"{prefix}.{field}" if field else prefix, reason)

    def _keys(self) -> dict[str, Any]:
        index = self._index
        if index is None:
            notes: Notes = []
            index = self._index = self._build_index(notes)
            if self._index_holds_all:
                self._raw = None  # the index holds what is needed; let the record go
            if notes:
                self._report(notes)
        return index

    def _value(self, key: str, item: Any) -> Any:
        notes: Notes = []
        value = self._values[key] = self._decode_item(key, item, notes)
        if notes:
            self._report(notes)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        value = self._values.get(key, _MISSING)
        if value is not _MISSING:
            return value
        index = self._index
        if index is None:
            index = self._keys()
        item = index.get(key, _MISSING)
        if item is _MISSING:
            return default
        return self._value(key, item)

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        index = self._index  # ``_keys()``, inline: readers test most keys with ``in``
        if index is None:
            index = self._keys()
        return key in index

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __bool__(self) -> bool:
        index = self._index
        return bool(self._raw) if index is None else bool(index)

    def _full(self) -> dict[str, Any]:
        index = self._keys()
        values = self._values
        if len(values) != len(index):
            for key, item in index.items():
                if key not in values:
                    self._value(key, item)
        return {key: values[key] for key in index}

    def items(self):  # type: ignore[no-untyped-def,override]
        return self._full().items()

    def values(self):  # type: ignore[no-untyped-def,override]
        return self._full().values()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyAttributes):
            other = other._full()
        return self._full() == other

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._full())


class PbAttributes(LazyAttributes):
    """Attributes of a lean protobuf span (``wire.LeanSpan``), kept as serialized
    ``KeyValue`` messages. Holds the span message: its attributes are not even touched until
    first use."""

    __slots__ = ()
    _index_holds_all = True

    def __bool__(self) -> bool:
        index = self._index
        return len(self._raw.attributes) > 0 if index is None else bool(index)

    def _build_index(self, notes: Notes) -> dict[str, Any]:
        raws = self._raw.attributes
        limit = self._where.limits.max_attributes
        index: dict[str, Any] = {}
        try:  # the common case: every key shorter than 128 bytes, valid UTF-8
            for raw in raws:
                n = raw[1]
                if raw[0] != 10 or n > 127 or len(raw) < n + 2:
                    break
                index[raw[2 : 2 + n].decode()] = raw
            else:
                if len(index) <= limit:
                    return index
        except (IndexError, UnicodeDecodeError):
            pass
        index = {}
        for i, raw in enumerate(raws):
            if i >= limit:
                notes.append(("", f"more than {limit} attributes; rest dropped"))
                break
            try:
                index[kv_key(raw)] = raw
            except Undecodable as exc:
                notes.append((f"[{i}]", f"undecodable attribute dropped ({exc})"))
        return index

    def _decode_item(self, key: str, item: Any, notes: Notes) -> Any:
        try:
            return kv_value(item, self._where.limits, notes, key)
        except Undecodable as exc:
            notes.append((key, f"undecodable value read as None ({exc})"))
            return None


class JsonAttributes(LazyAttributes):
    """Attributes kept as the OTLP/JSON list (or plain object) orjson produced."""

    __slots__ = ()

    def get(self, key: str, default: Any = None) -> Any:
        # The index first: an absent key costs one lookup. A short string (most values) is
        # read from its item every time, not cached: that costs less than the cache does.
        index = self._index
        if index is None:
            index = self._keys()
        item = index.get(key, _MISSING)
        if item is _MISSING:
            return default
        if item.__class__ is dict and len(item) == 1:  # one AnyValue member: nothing to report
            text = item.get("stringValue")
            if text.__class__ is str:
                if len(text) * 4 <= self._where.limits.max_attribute_value_bytes:
                    return text
            else:
                number = item.get("intValue")
                if number.__class__ is str and len(number) < 20 and number.isdecimal():
                    return int(number)  # as ``values.json_int`` reads an int64 string
        value = self._values.get(key, _MISSING)
        if value is not _MISSING:
            return value
        return self._value(key, item)

    def _build_index(self, notes: Notes) -> dict[str, Any]:
        raw = self._raw
        if isinstance(raw, dict):
            return raw
        index: dict[str, Any] = {}
        if not isinstance(raw, list):
            notes.append(("", "expected a list of key/value objects; attributes dropped"))
            return index
        limit = self._where.limits.max_attributes
        if len(raw) <= limit:  # the common case, in one pass; anything odd takes the loop
            try:
                index = {pair["key"]: pair.get("value") for pair in raw}
            except (TypeError, KeyError, AttributeError):
                index = {}
            else:
                if all(key.__class__ is str for key in index):
                    return index
                index = {}
        for i, pair in enumerate(raw):
            if i >= limit:
                notes.append(("", f"more than {limit} attributes; rest dropped"))
                break
            key = pair.get("key") if type(pair) is dict else None
            if type(key) is not str:
                notes.append((f"[{i}]", "expected a key/value object with a string key; dropped"))
                continue
            index[key] = pair.get("value")
        return index

    def _decode_item(self, key: str, item: Any, notes: Notes) -> Any:
        if item is None:
            return None
        try:
            if isinstance(self._raw, dict):
                return json_attributes({key: item}, self._where.limits, "", notes)[key]
            return json_value(item, self._where.limits, key, notes)
        except DecodeError as exc:
            notes.append((exc.field or key, f"{exc.reason}; value read as None"))
            return None


def decode_json_attributes_tolerant(
    pairs: Any, limits: Limits, path: str, notes: Notes
) -> dict[str, Any]:
    """Like ``json_attributes`` but a bad pair is dropped with a note instead of failing all."""
    try:
        return json_attributes(pairs, limits, path, notes)
    except DecodeError:
        pass
    out: dict[str, Any] = {}
    if not isinstance(pairs, list):
        notes.append((path, "expected a list of key/value objects; attributes dropped"))
        return out
    for i, pair in enumerate(pairs):
        try:
            out.update(json_attributes([pair], limits, f"{path}[{i}]", notes))
        except DecodeError as exc:
            notes.append((exc.field or f"{path}[{i}]", f"{exc.reason}; attribute dropped"))
    return out


class LazyEvents(Sequence[SpanEvent]):
    """A span's events, decoded on first use."""

    __slots__ = ("_raw", "_where", "_loc", "_list")

    def __init__(self, raw: Any, where: Where, loc: tuple[int, int, int]) -> None:
        self._raw = raw
        self._where = where
        self._loc = loc
        self._list: list[SpanEvent] | None = None

    def _decode(self) -> list[SpanEvent]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _full(self) -> list[SpanEvent]:
        events = self._list
        if events is None:
            events = self._list = self._decode()
            self._raw = None
        return events

    def __getitem__(self, index):  # type: ignore[no-untyped-def,override]
        return self._full()[index]

    def __len__(self) -> int:
        return len(self._full())

    def __iter__(self) -> Iterator[SpanEvent]:
        return iter(self._full())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyEvents):
            other = other._full()
        return self._full() == list(other) if isinstance(other, Sequence) else NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self._full())


class PbEvents(LazyEvents):
    __slots__ = ()

    def _decode(self) -> list[SpanEvent]:
        limits = self._where.limits
        notes: Notes = []
        base = span_path(*self._loc) + ".events"
        out: list[SpanEvent] = []
        for i, event in enumerate(self._raw):
            if i >= limits.max_events_per_span:
                notes.append((base, f"more than {limits.max_events_per_span} events; rest dropped"))
                break
            attrs = pb_raw_attributes(event.attributes, limits, f"{base}[{i}].attributes", notes)
            out.append(
                SpanEvent(event.name, event.time_unix_nano, attrs, event.dropped_attributes_count)
            )
        self._where.report_notes(notes)
        return out


class JsonEvents(LazyEvents):
    __slots__ = ()

    def _decode(self) -> list[SpanEvent]:
        limits = self._where.limits
        notes: Notes = []
        base = span_path(*self._loc) + ".events"
        out: list[SpanEvent] = []
        for i, event in enumerate(self._raw):
            where = f"{base}[{i}]"
            if i >= limits.max_events_per_span:
                notes.append((base, f"more than {limits.max_events_per_span} events; rest dropped"))
                break
            try:
                out.append(json_event(event, limits, where, notes))
            except DecodeError as exc:
                notes.append((exc.field or where, f"{exc.reason}; event dropped"))
        self._where.report_notes(notes)
        return out


def json_event(event: Any, limits: Limits, path: str, notes: Notes) -> SpanEvent:
    """One OTLP/JSON span event. Raises ``DecodeError`` on a wrong type."""
    if not isinstance(event, dict):
        raise DecodeError("expected an event object", field=path)
    name = event.get("name", "")
    if not isinstance(name, str):
        raise DecodeError("expected a string", field=f"{path}.name")
    time = event.get("timeUnixNano", event.get("time_unix_nano", 0))
    attrs = event.get("attributes")
    dropped = event.get("droppedAttributesCount", event.get("dropped_attributes_count", 0))
    return SpanEvent(
        name,
        json_int(time, f"{path}.timeUnixNano") if time else 0,
        json_attributes(attrs, limits, f"{path}.attributes", notes) if attrs else {},
        _dropped_count(dropped, f"{path}.droppedAttributesCount", notes) if dropped else 0,
    )


def _dropped_count(value: Any, path: str, notes: Notes) -> int:
    """A dropped-attributes count (uint32); a bad one is reported and read as 0."""
    try:
        count = json_int(value, path)
    except DecodeError as exc:
        notes.append((path, f"{exc.reason}; read as 0"))
        return 0
    if not 0 <= count < 1 << 32:
        notes.append((path, "not an unsigned 32-bit integer; read as 0"))
        return 0
    return count
