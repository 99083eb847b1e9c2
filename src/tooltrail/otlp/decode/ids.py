"""The rules for trace and span ids, and their messages, in one place.

A trace id is 16 bytes, a span id 8; all zero bytes is no id (invalid for a span's own ids,
"none" for a parent or a log record's span). On the wire ids are bytes (protobuf) or text
(OTLP/JSON: hex in any case, or base64 of the right length, as protobuf's JSON mapping writes
them). The fast paths that check ids a column at a time (``jsontyped``, ``census``) apply the
same rules inline and are held to them by the parity tests.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from tooltrail.otlp.decode.errors import DecodeError

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
ZERO_TRACE_ID = bytes(TRACE_ID_BYTES)
ZERO_SPAN_ID = bytes(SPAN_ID_BYTES)
#: The all-zero id as hex, by size in bytes.
ZERO_HEX = {TRACE_ID_BYTES: "0" * 32, SPAN_ID_BYTES: "0" * 16}
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
