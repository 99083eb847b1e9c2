"""Serialized protobuf ``KeyValue`` messages read straight from their bytes.

The lean schema (``wire.py``) leaves a span's attributes serialized. Reading a key or a
scalar value from those bytes in a few slicing operations is several times cheaper than
building protobuf objects for them; anything unusual (nested values, non-canonical field
order, malformed bytes) takes the slow path through the real ``KeyValue`` class.
"""

from __future__ import annotations

import struct
from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.common.v1.common_pb2 import KeyValue

from tooltrail.otlp.decode.limits import Limits
from tooltrail.otlp.decode.values import Notes, cut_bytes, cut_str, pb_value

_double = struct.Struct("<d").unpack_from
_PROTOBUF_ERRORS = (ProtobufDecodeError, RecursionError, ValueError)


class Undecodable(Exception):
    """A serialized ``KeyValue`` that protobuf itself cannot read."""


def _varint(b: bytes, i: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        x = b[i]
        i += 1
        result |= (x & 127) << shift
        if x < 128:
            return result, i
        shift += 7
        if shift > 63:
            raise IndexError("varint too long")


def kv_key(raw: bytes) -> str:
    """The key of a serialized ``KeyValue``. Raises ``Undecodable``."""
    try:
        if raw[0] == 10:
            n = raw[1]
            if n < 128 and 2 + n <= len(raw):
                return raw[2 : 2 + n].decode()
    except (IndexError, UnicodeDecodeError):
        pass
    try:
        return KeyValue.FromString(raw).key
    except _PROTOBUF_ERRORS as exc:
        raise Undecodable(str(exc) or type(exc).__name__) from None


def kv_value(raw: bytes, limits: Limits, notes: Notes, path: str) -> Any:
    """The value of a serialized ``KeyValue`` as Python. Raises ``Undecodable``."""
    try:
        return _fast_value(raw, limits, notes, path)
    except (IndexError, UnicodeDecodeError, struct.error, _Slow):
        pass
    try:
        pair = KeyValue.FromString(raw)
    except _PROTOBUF_ERRORS as exc:
        raise Undecodable(str(exc) or type(exc).__name__) from None
    return pb_value(pair.value, limits, path, notes)


class _Slow(Exception):
    pass


def _fast_value(raw: bytes, limits: Limits, notes: Notes, path: str) -> Any:
    """Key then value, in canonical order, scalar value; else ``_Slow``."""
    n = len(raw)
    if raw[0] != 10:
        raise _Slow
    p = raw[1]
    if p < 128:
        p += 2
    else:
        key_len, p = _varint(raw, 1)
        p += key_len
    if p == n:
        return None
    if raw[p] != 0x12:
        raise _Slow
    size = raw[p + 1]
    if size < 128:
        p += 2
    else:
        size, p = _varint(raw, p + 1)
    if p + size != n:
        raise _Slow
    if size == 0:
        return None
    tag = raw[p]
    if tag == 0x0A:  # string_value
        size = raw[p + 1]
        if size < 128:
            q = p + 2
        else:
            size, q = _varint(raw, p + 1)
            if size > limits.max_attribute_value_bytes:
                return cut_str(raw[q:n].decode(), limits, path, notes)
        if q + size != n:
            raise _Slow
        return raw[q:n].decode()
    if tag == 0x18:  # int_value
        value, q = _varint(raw, p + 1)
        if q != n:
            raise _Slow
        return value - (1 << 64) if value >= 1 << 63 else value
    if tag == 0x10:  # bool_value
        if p + 2 != n or raw[p + 1] > 1:
            raise _Slow
        return raw[p + 1] == 1
    if tag == 0x21:  # double_value
        if p + 9 != n:
            raise _Slow
        return _double(raw, p + 1)[0]
    if tag == 0x3A:  # bytes_value
        size, q = _varint(raw, p + 1)
        if q + size != n:
            raise _Slow
        return cut_bytes(raw[q:n], limits, path, notes)
    raise _Slow
