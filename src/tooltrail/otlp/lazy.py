"""Span attributes and events decoded on first use.

Most spans of an agent trace are never looked at closely: the converter asks a handful of
keys and moves on. Keeping the wire form (serialized ``KeyValue`` messages, or the JSON list)
and decoding it only when asked keeps reading near the speed of the raw parse. Problems found
while decoding late are appended to the diagnostics list the reader was given.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tooltrail.otlp.errors import DecodeError
from tooltrail.otlp.limits import Limits
from tooltrail.otlp.span import Diagnostic, SpanEvent
from tooltrail.otlp.values import Notes, json_attributes, json_int, pb_raw_attributes


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


class LazyAttributes(Mapping[str, Any]):
    """A read-only mapping over attributes still in wire form; decoded once, on first use."""

    __slots__ = ("_raw", "_where", "_loc", "_dict")

    def __init__(self, raw: Any, where: Where, loc: tuple[int, int, int]) -> None:
        self._raw = raw
        self._where = where
        self._loc = loc
        self._dict: dict[str, Any] | None = None

    def _decode(self) -> dict[str, Any]:  # pragma: no cover - overridden
        raise NotImplementedError

    def _full(self) -> dict[str, Any]:
        d = self._dict
        if d is None:
            d = self._dict = self._decode()
            self._raw = None
        return d

    def __getitem__(self, key: str) -> Any:
        return self._full()[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._full().get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._full()

    def __iter__(self) -> Iterator[str]:
        return iter(self._full())

    def __len__(self) -> int:
        return len(self._full())

    def items(self):  # type: ignore[no-untyped-def,override]
        return self._full().items()

    def keys(self):  # type: ignore[no-untyped-def,override]
        return self._full().keys()

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
    """Attributes kept as serialized protobuf ``KeyValue`` messages."""

    __slots__ = ()

    def _decode(self) -> dict[str, Any]:
        notes: Notes = []
        path = span_path(*self._loc) + ".attributes"
        out = pb_raw_attributes(self._raw, self._where.limits, path, notes)
        self._where.report_notes(notes)
        return out


class JsonAttributes(LazyAttributes):
    """Attributes kept as the OTLP/JSON list (or object) orjson produced."""

    __slots__ = ()

    def _decode(self) -> dict[str, Any]:
        notes: Notes = []
        path = span_path(*self._loc) + ".attributes"
        out = decode_json_attributes_tolerant(self._raw, self._where.limits, path, notes)
        self._where.report_notes(notes)
        return out


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
            out.append(SpanEvent(event.name, event.time_unix_nano, attrs))
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
    return SpanEvent(
        name,
        json_int(time, f"{path}.timeUnixNano") if time else 0,
        json_attributes(attrs, limits, f"{path}.attributes", notes) if attrs else {},
    )
