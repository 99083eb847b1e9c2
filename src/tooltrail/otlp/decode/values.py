"""AnyValue to plain Python, for both wire formats, and back (``set_any_value``).

string/bool/int/double/bytes become str/bool/int/float/bytes, ``arrayValue`` a list,
``kvlistValue`` a dict, an empty AnyValue ``None``. Nesting deeper than ``Limits.max_depth``
becomes ``None``; strings and bytes longer than ``Limits.max_attribute_value_bytes`` are cut
and end with ``TRUNCATED_MARKER``. Problems are reported through a ``notes`` list of
``(field path, reason)`` so the caller can name the span they belong to.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tooltrail.otlp.decode.decode_error import DecodeError
from tooltrail.otlp.decode.limits import TRUNCATED_MARKER, Limits

Notes = list[tuple[str, str]]


def cut_str(value: str, limits: Limits, path: str, notes: Notes) -> str:
    limit = limits.max_attribute_value_bytes
    raw = value.encode()
    if len(raw) <= limit:
        return value
    notes.append((path, f"value of {len(raw)} bytes truncated to {limit}"))
    return raw[:limit].decode(errors="ignore") + TRUNCATED_MARKER


def cut_bytes(value: bytes, limits: Limits, path: str, notes: Notes) -> bytes:
    limit = limits.max_attribute_value_bytes
    if len(value) <= limit:
        return value
    notes.append((path, f"value of {len(value)} bytes truncated to {limit}"))
    return value[:limit] + TRUNCATED_MARKER.encode()


# --- protobuf ------------------------------------------------------------------------------


def pb_value(value: AnyValue, limits: Limits, path: str, notes: Notes, depth: int = 0) -> Any:
    """A protobuf ``AnyValue`` as Python."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        text = value.string_value
        if len(text) * 4 > limits.max_attribute_value_bytes:  # cheap bound before encoding
            return cut_str(text, limits, path, notes)
        return text
    if kind is None:
        return None
    if kind in ("int_value", "bool_value", "double_value"):
        return getattr(value, kind)
    if kind == "bytes_value":
        return cut_bytes(value.bytes_value, limits, path, notes)
    if depth >= limits.max_depth:
        notes.append((path, f"nested deeper than {limits.max_depth} levels; value dropped"))
        return None
    if kind == "array_value":
        return [
            pb_value(item, limits, f"{path}[{i}]", notes, depth + 1)
            for i, item in enumerate(value.array_value.values)
        ]
    if kind == "kvlist_value":
        return pb_attributes(value.kvlist_value.values, limits, path, notes, depth + 1)
    notes.append((path, f"unsupported AnyValue field {kind}; value dropped"))
    return None


def pb_attributes(
    pairs: Any, limits: Limits, path: str, notes: Notes, depth: int = 0
) -> dict[str, Any]:
    """Repeated ``KeyValue`` messages as a dict (a repeated key: the last one wins)."""
    out: dict[str, Any] = {}
    for i, pair in enumerate(pairs):
        if i >= limits.max_attributes:
            notes.append((path, f"more than {limits.max_attributes} attributes; rest dropped"))
            break
        out[pair.key] = pb_value(pair.value, limits, f"{path}.{pair.key}", notes, depth)
    return out


def pb_raw_attributes(
    raw_pairs: Any, limits: Limits, path: str, notes: Notes, strict: bool = False
) -> dict[str, Any]:
    """Serialized ``KeyValue`` messages (the lean schema keeps them as bytes) as a dict.

    An undecodable pair is dropped with a note, or with ``strict`` raises ``DecodeError``."""
    out: dict[str, Any] = {}
    parse = KeyValue.FromString
    for i, raw in enumerate(raw_pairs):
        if i >= limits.max_attributes:
            notes.append((path, f"more than {limits.max_attributes} attributes; rest dropped"))
            break
        try:
            pair = parse(raw)
        except Exception as exc:  # upb raises DecodeError, or RecursionError when too deep
            if strict:
                raise DecodeError(
                    f"undecodable attribute ({_short(exc)})", field=f"{path}[{i}]"
                ) from None
            notes.append((f"{path}[{i}]", f"undecodable attribute dropped ({_short(exc)})"))
            continue
        out[pair.key] = pb_value(pair.value, limits, f"{path}.{pair.key}", notes)
    return out


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 120 else text[:117] + "..."


# --- JSON ----------------------------------------------------------------------------------

_JSON_KINDS = {
    "stringValue": "s", "string_value": "s",
    "intValue": "i", "int_value": "i",
    "boolValue": "b", "bool_value": "b",
    "doubleValue": "d", "double_value": "d",
    "bytesValue": "y", "bytes_value": "y",
    "arrayValue": "a", "array_value": "a",
    "kvlistValue": "k", "kvlist_value": "k",
}  # fmt: skip


def json_int(value: Any, path: str) -> int:
    """An int64 written as a decimal string or a JSON number (never via float for strings)."""
    if type(value) is int:
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    elif isinstance(value, float) and value.is_integer():
        return int(value)
    raise DecodeError(f"expected an integer, got {_kind_of(value)}", field=path)


def _json_double(value: Any, path: str) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # "NaN", "Infinity", "-Infinity" as the proto3 JSON mapping writes
        except ValueError:
            pass
    raise DecodeError(f"expected a number, got {_kind_of(value)}", field=path)


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, str):
        return f"string {value[:20]!r}" if len(value) <= 20 else "a string"
    return type(value).__name__


def json_value(value: Any, limits: Limits, path: str, notes: Notes, depth: int = 0) -> Any:
    """An OTLP/JSON ``AnyValue`` object as Python. Raises ``DecodeError`` on a wrong type."""
    if not isinstance(value, dict):
        raise DecodeError(f"expected an AnyValue object, got {_kind_of(value)}", field=path)
    if not value:
        return None
    result: Any = None
    for key, item in value.items():
        kind = _JSON_KINDS.get(key)
        if kind is None:
            continue  # unknown members are ignored, as protobuf JSON parsers do
        where = f"{path}.{key}"
        if kind == "s":
            if not isinstance(item, str):
                raise DecodeError(f"expected a string, got {_kind_of(item)}", field=where)
            result = (
                cut_str(item, limits, path, notes)
                if len(item) * 4 > limits.max_attribute_value_bytes
                else item
            )
        elif kind == "i":
            result = json_int(item, where)
        elif kind == "b":
            if not isinstance(item, bool):
                raise DecodeError(f"expected true or false, got {_kind_of(item)}", field=where)
            result = item
        elif kind == "d":
            result = _json_double(item, where)
        elif kind == "y":
            result = cut_bytes(_json_bytes(item, where), limits, path, notes)
        elif depth >= limits.max_depth:
            notes.append((path, f"nested deeper than {limits.max_depth} levels; value dropped"))
            result = None
        elif kind == "a":
            items = _json_members(item, where)
            result = [
                json_value(x, limits, f"{where}.values[{i}]", notes, depth + 1)
                for i, x in enumerate(items)
            ]
        else:
            result = json_attributes(
                _json_members(item, where), limits, f"{where}.values", notes, depth + 1
            )
    return result


def _json_members(item: Any, path: str) -> list[Any]:
    if item is None:
        return []
    if not isinstance(item, dict):
        raise DecodeError(f"expected an object with 'values', got {_kind_of(item)}", field=path)
    values = item.get("values")
    if values is None:
        return []
    if not isinstance(values, list):
        raise DecodeError(f"expected a list, got {_kind_of(values)}", field=f"{path}.values")
    return values


def _json_bytes(item: Any, path: str) -> bytes:
    if isinstance(item, str):
        try:
            return base64.b64decode(
                item + "=" * (-len(item) % 4),
                altchars=b"-_" if ("-" in item or "_" in item) else None,
                validate=True,
            )
        except (binascii.Error, ValueError):
            pass
    raise DecodeError("expected base64 bytes", field=path)


_ANY_VALUE_KEYS = frozenset(_JSON_KINDS)


def json_attributes(
    pairs: Any, limits: Limits, path: str, notes: Notes, depth: int = 0
) -> dict[str, Any]:
    """OTLP/JSON attributes as a dict: a list of ``{key, value}`` or, as JSON-column exports
    write them, a plain object whose values are plain JSON or AnyValue objects."""
    out: dict[str, Any] = {}
    if isinstance(pairs, dict):
        for key, item in pairs.items():
            if (
                isinstance(item, dict)
                and len(item) <= 1
                and (not item or next(iter(item)) in _ANY_VALUE_KEYS)
            ):
                out[key] = json_value(item, limits, f"{path}.{key}", notes, depth)
            else:
                out[key] = item
        return out
    if pairs is None:
        return out
    if not isinstance(pairs, list):
        raise DecodeError(
            f"expected a list of key/value objects, got {_kind_of(pairs)}", field=path
        )
    for i, pair in enumerate(pairs):
        if i >= limits.max_attributes:
            notes.append((path, f"more than {limits.max_attributes} attributes; rest dropped"))
            break
        if not isinstance(pair, dict):
            raise DecodeError(
                f"expected a key/value object, got {_kind_of(pair)}", field=f"{path}[{i}]"
            )
        key = pair.get("key")
        if not isinstance(key, str):
            raise DecodeError(
                f"expected a string key, got {_kind_of(key)}", field=f"{path}[{i}].key"
            )
        value = pair.get("value")
        out[key] = (
            None if value is None else json_value(value, limits, f"{path}[{i}].value", notes, depth)
        )
    return out


# --- and back: Python values to protobuf, for the writers and the rest of a span ------------

#: AnyValue nesting written at most; deeper values are left empty (OTLP/JSON of 48 levels
#: stays within orjson's nesting limit).
MAX_ENCODED_DEPTH = 48
_INT64 = (-(1 << 63), (1 << 63) - 1)


def set_any_value(target: AnyValue, value: Any, depth: int = 0) -> None:
    """Fill an ``AnyValue`` from a Python value (the inverse of decoding).

    ``None`` stays empty; an int outside int64 becomes its decimal string; anything nested
    deeper than 64 levels is left empty.
    """
    if value is None or depth > MAX_ENCODED_DEPTH:
        return
    if isinstance(value, str):
        target.string_value = value
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        if _INT64[0] <= value <= _INT64[1]:
            target.int_value = value
        else:
            target.string_value = str(value)
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, (bytes, bytearray, memoryview)):
        target.bytes_value = bytes(value)
    elif isinstance(value, Mapping):
        target.kvlist_value.SetInParent()
        set_attributes(target.kvlist_value.values, value, depth + 1)
    elif isinstance(value, (list, tuple)):
        target.array_value.SetInParent()
        values = target.array_value.values
        for item in value:
            set_any_value(values.add(), item, depth + 1)
    else:
        target.string_value = str(value)


def set_attributes(target: Any, attributes: Mapping[str, Any], depth: int = 0) -> None:
    """Append ``KeyValue`` messages for a mapping to a repeated field."""
    for key, value in attributes.items():
        pair: KeyValue = target.add()
        pair.key = key
        set_any_value(pair.value, value, depth)
