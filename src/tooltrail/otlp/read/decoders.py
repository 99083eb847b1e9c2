"""A caller's own decoders of traces records, used before the Python decoders.

The readers of this wing frame records and decode them with ``otlp.decode``. A consumer that
has a faster decoder of its own (the converter's trace engine, ``convert.engine``, with the
compiled core) hands it in as ``RecordDecoders``; this wing calls it for each protobuf traces
record and each JSON line, and decodes with the Python decoders whatever it declines. What
the decoders hand out is the caller's business: this wing passes it on untouched and knows
nothing of it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tooltrail.otlp.decode.lazy import Where

#: Decodes one record (a protobuf ``ExportTraceServiceRequest``, or one OTLP/JSON line or
#: document) into the caller's items, or returns ``None`` for a record the Python decoders
#: must read (and report on).
RecordDecoder = Callable[[bytes, Where], list[Any] | None]


@dataclass(frozen=True, slots=True)
class RecordDecoders:
    """The caller's decoders: ``protobuf`` for traces records in protobuf (never log
    records: those are told apart first), ``json_line`` for a JSON line or request body."""

    protobuf: RecordDecoder
    json_line: RecordDecoder
