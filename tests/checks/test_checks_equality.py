"""Value equality of tool arguments (docs/checks.md, "Value equality") and the redundancy
fingerprint."""

import json
import math

from fixtures import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from tooltrail.checks import args_contain, args_fingerprint, values_equal


def recorded_calls(framework: str, scenario: str) -> list[dict]:
    """The ground-truth calls of a corpus scenario (arguments exactly as the agent sent them)."""
    truth = json.loads((CORPUS / framework / f"{scenario}.truth.json").read_text("utf-8"))
    return truth["calls"]


def test_a_number_never_equals_its_string():
    assert not values_equal(5, "5")
    assert not values_equal("5", 5)


def test_int_and_float_compare_numerically():
    assert values_equal(5, 5.0)
    assert values_equal(5.0, 5)
    assert not values_equal(49.99, 499.9)


def test_strings_compare_case_sensitively():
    assert values_equal("ORD-1", "ORD-1")
    assert not values_equal("ORD-1", "ord-1")


def test_a_boolean_never_equals_a_number():
    assert not values_equal(True, 1)
    assert not values_equal(1, True)
    assert not values_equal(False, 0)
    assert not values_equal(0.0, False)
    assert values_equal(True, True)
    assert not values_equal(True, False)


def test_booleans_are_not_numbers_at_any_depth():
    assert not values_equal({"a": [1, {"b": 1}]}, {"a": [1, {"b": True}]})
    assert not values_equal([True], [1])
    assert values_equal({"a": [1, {"b": True}]}, {"a": [1.0, {"b": True}]})


def test_nan_equals_nothing_not_even_itself():
    nan = float("nan")
    assert not values_equal(nan, nan)
    assert not values_equal([nan], [nan])  # == on lists would say True for the same object
    assert not values_equal({"x": nan}, {"x": nan})


def test_infinities_equal_themselves():
    assert values_equal(math.inf, math.inf)
    assert not values_equal(math.inf, -math.inf)


def test_lists_are_ordered():
    assert values_equal([1, 2], [1, 2])
    assert not values_equal([1, 2], [2, 1])
    assert not values_equal([1, 2], [1, 2, 3])


def test_dicts_ignore_key_order():
    assert values_equal({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not values_equal({"a": 1}, {"a": 1, "b": 2})


def test_none_equals_only_none():
    assert values_equal(None, None)
    assert not values_equal(None, {})
    assert not values_equal(None, 0)
    assert not values_equal("", None)


def test_subset_accepts_extra_actual_keys():
    assert args_contain({"order_id": "ORD-7731"}, {"order_id": "ORD-7731", "amount": 49.99})


def test_subset_needs_every_expected_key():
    assert not args_contain({"order_id": "ORD-7731", "amount": 49.99}, {"order_id": "ORD-7731"})


def test_subset_compares_nested_values_as_a_whole():
    actual = {"customer": {"name": "Ann", "email": "a@example.com"}}
    assert not args_contain({"customer": {"name": "Ann"}}, actual)
    assert args_contain({"customer": {"email": "a@example.com", "name": "Ann"}}, actual)


def test_uncaptured_arguments_contain_nothing_but_the_empty_expectation():
    assert not args_contain({"a": 1}, None)
    assert args_contain({}, None)


def test_subset_keeps_a_null_value_distinct_from_a_missing_key():
    assert args_contain({"insurance": None}, {"insurance": None})
    assert not args_contain({"insurance": None}, {})


def test_recorded_complex_arguments_compare_by_the_rules():
    """The corpus's i_complex_args call: nested objects, unicode, 2.0, 0, a 54-bit integer."""
    (_, shipment) = recorded_calls("pydantic-ai", "i_complex_args")
    args = shipment["args"]
    assert args_contain({"weight_kg": 2, "discount": 0.0, "express": True}, args)
    assert not args_contain({"express": 1}, args)
    assert not args_contain({"big_int": 9007199254740992}, args)  # a JS runtime's rounding
    assert args_contain({"big_int": 9007199254740993}, args)
    assert args_contain({"customer": dict(args["customer"])}, args)
    items = [dict(item) for item in args["items"]]
    assert args_contain({"items": items}, args)
    assert not args_contain({"items": items[::-1]}, args)
    items[1]["gift"] = 1
    assert not args_contain({"items": items}, args)


def test_fingerprint_ignores_key_order():
    assert args_fingerprint({"a": 1, "b": 2}) == args_fingerprint({"b": 2, "a": 1})


def test_fingerprint_tells_int_from_float_and_bool():
    assert args_fingerprint({"n": 5}) != args_fingerprint({"n": 5.0})
    assert args_fingerprint({"n": 1}) != args_fingerprint({"n": True})


def test_fingerprint_tells_uncaptured_from_empty():
    assert args_fingerprint(None) != args_fingerprint({})


def test_fingerprint_keeps_nan_apart_from_null():
    assert args_fingerprint({"x": float("nan")}) != args_fingerprint({"x": None})
    assert args_fingerprint({"x": None}) == args_fingerprint({"x": None})


def test_fingerprint_handles_integers_wider_than_64_bits():
    wide = 123456789012345678901234567890
    assert args_fingerprint({"n": wide}) == args_fingerprint({"n": wide})
    assert args_fingerprint({"n": wide}) != args_fingerprint({"n": wide + 1})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=80, deadline=None)
@given(json_values)
def test_any_json_value_equals_its_round_trip(value):
    assert values_equal(value, json.loads(json.dumps(value)))


@settings(max_examples=80, deadline=None)
@given(json_values, json_values)
def test_equality_is_symmetric(a, b):
    assert values_equal(a, b) == values_equal(b, a)


@settings(max_examples=50, deadline=None)
@given(st.booleans(), st.integers(-2, 2) | st.floats(-2, 2))
def test_a_boolean_never_equals_a_number_inside_containers(flag, number):
    assert not values_equal({"k": [flag]}, {"k": [number]})
