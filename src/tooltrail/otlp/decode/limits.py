"""Size limits that keep hostile or broken input from exhausting memory or time.

Every decoder takes a ``Limits``; the defaults suit real agent traces (a big tool argument is
a few megabytes) while refusing bombs. A record or value over a limit is reported as a
``Diagnostic`` and reading goes on.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1 << 20
GiB = 1 << 30


@dataclass(frozen=True, slots=True)
class Limits:
    """Configurable bounds for decoding. All sizes are in bytes."""

    #: One record: a JSON line, a length-prefixed message (after decompression), a whole
    #: un-framed file, a request body. Larger records are skipped with a diagnostic.
    max_record_bytes: int = 64 * MiB
    #: Budget of decompressed bytes per input (one file, or one batch chunk of it): its
    #: whole-file stream and its compressed records together. Reading stops past it.
    max_decompressed_bytes: int = 4 * GiB
    #: Decompressed / compressed bytes of a compressed file, checked once more than
    #: ``max_record_bytes`` came out. Real OTLP compresses 5-50x; a bomb 1000x and more.
    max_compression_ratio: int = 1000
    #: White space (blank lines, lines of spaces) and empty length-prefixed messages that one
    #: decompressed stream may yield in all; past it the rest of the input is skipped. A dump
    #: holds a few bytes of it per record; a stream of newlines at a ratio under the cap would
    #: otherwise be read to ``max_decompressed_bytes``. Plain files are not bounded by it: they
    #: cost what reading their bytes costs, and nothing after a blank run in them is lost.
    max_blank_bytes: int = 64 * MiB
    #: A string or bytes attribute value longer than this is truncated to this many bytes and
    #: ends with ``TRUNCATED_MARKER``; a diagnostic says which span and key.
    max_attribute_value_bytes: int = 4 * MiB
    #: Nesting depth of AnyValue arrays/kvlists; deeper values become ``None``.
    max_depth: int = 64
    #: Attributes kept per span, event or resource (the rest are dropped with a diagnostic).
    max_attributes: int = 10_000
    #: Events kept per span (the rest are dropped with a diagnostic).
    max_events_per_span: int = 10_000
    #: Spans one trace may hold; enforced by the converter, which drops the excess.
    max_spans_per_trace: int = 100_000


DEFAULT_LIMITS = Limits()

#: Appended to a string value cut at ``max_attribute_value_bytes``.
TRUNCATED_MARKER = "...[truncated by tooltrail]"
