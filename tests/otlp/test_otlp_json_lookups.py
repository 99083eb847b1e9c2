"""A key lookup on JSON span attributes reads a value as decoding every attribute would.

Lookups take shortcuts for the common values (a short ``stringValue``, an ``intValue``
written as decimal digits); whatever the shortcut does not take goes through the full
reader. Either way a lookup must agree with ``items()`` (the full reader), and a value
that cannot be read is still reported once.
"""

from __future__ import annotations

import orjson

from tooltrail.otlp import Diagnostic, decode_json_request

_VALUES = {
    "digits": {"intValue": "250"},
    "number": {"intValue": 7},
    "signed": {"intValue": "-3"},
    "plus": {"intValue": "+12"},
    "wide": {"intValue": "123456789012345678901234567890"},
    "text": {"stringValue": "hello"},
    "long_text": {"stringValue": "x" * 5000},
    "flag": {"boolValue": True},
    "not_int": {"intValue": "12a"},
}


def _attributes(diagnostics: list[Diagnostic]):
    span = {
        "traceId": "ab" * 16,
        "spanId": "01" * 8,
        "name": "s",
        "attributes": [{"key": key, "value": value} for key, value in _VALUES.items()],
    }
    request = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    (span,) = decode_json_request(orjson.dumps(request), diagnostics=diagnostics, lazy=True)
    return span.attributes


def test_each_lookup_equals_the_value_the_full_reader_gives() -> None:
    full = dict(_attributes([]).items())
    looked_up = _attributes([])
    for key in _VALUES:
        value = looked_up.get(key)
        assert value == full[key] and type(value) is type(full[key]), key


def test_int64_strings_read_as_ints_and_signs_and_wide_numbers_too() -> None:
    attributes = _attributes([])
    assert attributes.get("digits") == 250
    assert attributes.get("signed") == -3
    assert attributes.get("plus") == 12
    assert attributes.get("wide") == 123456789012345678901234567890


def test_an_int_that_is_not_a_number_reads_as_none_and_is_reported_once() -> None:
    diagnostics: list[Diagnostic] = []
    attributes = _attributes(diagnostics)
    assert attributes.get("not_int") is None
    assert attributes.get("not_int") is None
    assert len([d for d in diagnostics if "not_int" in d.message]) == 1
