"""The one exception decoders raise for input they cannot read."""

from __future__ import annotations


class DecodeError(ValueError):
    """Bad OTLP input. ``field`` is the path of the offending field (e.g.
    ``resourceSpans[0].scopeSpans[1].spans[3].traceId``), ``offset`` a byte offset when known."""

    def __init__(self, reason: str, *, field: str = "", offset: int | None = None) -> None:
        self.reason = reason
        self.field = field
        self.offset = offset
        super().__init__(f"{field}: {reason}" if field else reason)
