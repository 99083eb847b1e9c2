"""jsonparity: msgspec's reading of JSON brought to what orjson reads."""

from __future__ import annotations

import json

import msgspec
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tooltrail.otlp.decode.jsonparity import ORJSON_MAX_DEPTH, nested_past, orjson_ints

_NUMBERS = st.one_of(
    st.integers(-(2**63), 2**64 - 1),
    st.integers(-(10**40), 10**40),
    st.floats(allow_nan=False, allow_infinity=False),
)
_JSON = st.recursive(
    _NUMBERS | st.text(max_size=5) | st.booleans() | st.none(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_integers_past_64_bits_become_the_floats_orjson_reads(value):
    text = json.dumps(value)
    assert repr(orjson_ints(msgspec.json.decode(text))) == repr(orjson.loads(text))


def test_a_value_without_big_integers_is_returned_as_is():
    value = {"intValue": 2**64 - 1, "values": [-(2**63), 1.5, "x"]}
    assert orjson_ints(value) is value


def test_a_value_with_a_big_integer_is_copied_not_changed():
    value = {"a": [1, {"b": 2**64}]}
    assert orjson_ints(value) == {"a": [1, {"b": float(2**64)}]}
    assert value == {"a": [1, {"b": 2**64}]}


def test_nesting_is_past_the_limit_exactly_where_orjson_refuses_it():
    for n in (ORJSON_MAX_DEPTH - 1, ORJSON_MAX_DEPTH, ORJSON_MAX_DEPTH + 1):
        text = "[" * n + "]" * n
        try:
            orjson.loads(text)
            refused = False
        except orjson.JSONDecodeError:
            refused = True
        value: list = []
        for _ in range(n - 1):
            value = [value]
        assert nested_past(value, 1) == refused, n
