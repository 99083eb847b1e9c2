"""The rules for trace and span ids, and their messages, in one place.

A trace id is 16 bytes, a span id 8; all zero bytes is no id (invalid for a span's own ids,
"none" for a parent or a log record's span). On the wire ids are bytes (protobuf) or text
(OTLP/JSON: hex in any case, or base64 of the right length, as protobuf's JSON mapping writes
them); Jaeger writes lower-case hex with leading zeros dropped (``short_hex_id``).

The fast paths read the canonical OTLP/JSON form only: exactly ``TRACE_ID_HEX`` /
``SPAN_ID_HEX`` hex digits. The census checks a whole request's ids a column at a time
(``hex_span_ids``, ``hex_parent_ids``: one join and one ``fromhex`` in C); the per-span fast
paths (``decode.jsontyped``, ``decode.otlpjson``) spell the same test inline with these
constants: a call per id measured +0.7% callgrind instructions for ``read_traces`` on JSON
lines. Anything else goes to ``json_id``, whose verdict decides. No other module writes an
id's length as a number.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any

from tooltrail.otlp.decode.decode_error import DecodeError

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
ZERO_TRACE_ID = bytes(TRACE_ID_BYTES)
ZERO_SPAN_ID = bytes(SPAN_ID_BYTES)
#: An id's length in canonical OTLP/JSON: two hex digits a byte.
TRACE_ID_HEX = 2 * TRACE_ID_BYTES
SPAN_ID_HEX = 2 * SPAN_ID_BYTES
#: The all-zero id as hex, by size in bytes.
ZERO_HEX = {TRACE_ID_BYTES: "0" * TRACE_ID_HEX, SPAN_ID_BYTES: "0" * SPAN_ID_HEX}
_SPAN_ID_HEX_ONLY = frozenset((SPAN_ID_HEX,))
_NO_OR_SPAN_ID_HEX = frozenset((0, SPAN_ID_HEX))
_HEX_DIGITS = frozenset("0123456789abcdef")
_fromhex = bytes.fromhex
ALL_ZERO = "all-zero id is invalid"


def bad_id(value: bytes, size: int) -> str | None:
    """Why ``value`` is not a valid id of ``size`` bytes, or ``None`` when it is."""
    if len(value) != size:
        return f"expected {size} bytes, got {len(value)}"
    if value == (ZERO_TRACE_ID if size == TRACE_ID_BYTES else ZERO_SPAN_ID):
        return ALL_ZERO
    return None


def bad_span_ids(trace_id: bytes, span_id: bytes, parent: bytes) -> str | None:
    """The first problem of a span's three ids, as ``field: span rejected: reason`` (a
    missing parent is a root), or ``None``."""
    problem = bad_id(trace_id, TRACE_ID_BYTES)
    if problem is not None:
        return f"traceId: span rejected: {problem}"
    problem = bad_id(span_id, SPAN_ID_BYTES)
    if problem is not None:
        return f"spanId: span rejected: {problem}"
    if parent and len(parent) != SPAN_ID_BYTES:
        return f"parentSpanId: span rejected: expected {SPAN_ID_BYTES} bytes, got {len(parent)}"
    return None


def json_id(value: Any, size: int) -> str:
    """A span or trace id as lower-case hex: hex in any case, or base64 of the right length.
    ``DecodeError`` says what is wrong."""
    if isinstance(value, str):
        n = len(value)
        raw: bytes | None = None
        if n == size * 2:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                raw = None
        elif n in ((size + 2) // 3 * 4, (size * 4 + 2) // 3):  # padded and unpadded base64
            try:
                raw = base64.b64decode(value + "=" * (-n % 4), validate=True)
            except (binascii.Error, ValueError):
                raw = None
        if raw is not None and len(raw) == size:
            text = raw.hex()
            if text == ZERO_HEX[size]:
                raise DecodeError(ALL_ZERO)
            return text
        raise DecodeError(f"expected {size * 2} hex digits, got {value[:40]!r}")
    raise DecodeError(f"expected a hex string, got {type(value).__name__}")


def hex_span_ids(ids: Sequence[str]) -> bool:
    """Whether every text of ``ids`` is a valid span id in canonical hex (``SPAN_ID_HEX``
    digits, not all zero), checked a column at a time: the lengths in one pass, the digits
    in one ``fromhex`` of the joined column (whitespace, which ``fromhex`` skips, would make
    the bytes too few). ``False`` sends the column to the span-by-span rules."""
    if not _SPAN_ID_HEX_ONLY.issuperset(map(len, ids)):
        return False
    try:
        raw = _fromhex("".join(ids))
    except ValueError:
        return False
    return len(raw) == SPAN_ID_BYTES * len(ids) and ZERO_HEX[SPAN_ID_BYTES] not in ids


def hex_parent_ids(parents: Sequence[str]) -> bool:
    """Whether every text of ``parents`` is empty (a root) or a span id in canonical hex
    (all zero allowed: no parent), checked a column at a time as ``hex_span_ids``."""
    if not _NO_OR_SPAN_ID_HEX.issuperset(map(len, parents)):
        return False
    joined = "".join(parents)
    try:
        return 2 * len(_fromhex(joined)) == len(joined)
    except ValueError:
        return False


def short_hex_id(value: Any, size: int, field: str) -> str:
    """A Jaeger id (lower-case hex of up to ``2 * size`` digits, leading zeros dropped) as
    lower-case hex of ``2 * size`` digits. ``DecodeError`` (naming ``field``) says what is
    wrong."""
    width = 2 * size
    if value.__class__ is not str:
        kind = "null" if value is None else type(value).__name__
        raise DecodeError(f"expected a hex string, got {kind}", field=field)
    text = value.lower()
    if not text or len(text) > width or not _HEX_DIGITS.issuperset(text):
        raise DecodeError(f"expected up to {width} hex digits, got {value[:40]!r}", field=field)
    if text.strip("0") == "":
        raise DecodeError(ALL_ZERO, field=field)
    return text.rjust(width, "0")
