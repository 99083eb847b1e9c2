from tooltrail import EvalSpan, EvalTrace, parse_args


def test_json_string_arguments_are_parsed():
    parsed = parse_args('{"order_id": "ORD-1", "amount": 49.99}')
    assert parsed == {"order_id": "ORD-1", "amount": 49.99}


def test_arguments_that_are_not_an_object_mean_not_captured():
    for value in (None, "", "[1, 2]", "42", "not json", 7, ["a"]):
        assert parse_args(value) is None


def test_empty_object_is_kept_distinct_from_not_captured():
    assert parse_args("{}") == {}
    assert parse_args({}) == {}


def test_big_integers_and_nan_literals_still_parse():
    wide = 123456789012345678901234567890
    assert parse_args(f'{{"n": {wide}}}') == {"n": wide}
    assert parse_args('{"x": NaN}')["x"] != parse_args('{"x": NaN}')["x"]


def test_tool_calls_derive_from_hand_built_spans_in_list_order():
    trace = EvalTrace(
        trace_id="t1",
        spans=[
            EvalSpan(tool_name="lookup_order", attributes={"tool_args": {"order_id": "ORD-7731"}}),
            EvalSpan(attributes={"note": "a model call"}),
            EvalSpan(tool_name="issue_refund", attributes={"tool_args": '{"amount": 49.99}'}),
            EvalSpan(tool_name="web_search"),
        ],
    )
    assert [c.name for c in trace.tool_calls] == ["lookup_order", "issue_refund", "web_search"]
    assert trace.tool_calls[1].args == {"amount": 49.99}
    assert trace.tool_calls[2].args is None


def test_turn_count_must_be_a_positive_int():
    assert EvalTrace("t", metadata={"turn_count": 2}).turn_count == 2
    assert EvalTrace("t", metadata={"turn_count": True}).turn_count is None
    assert EvalTrace("t", metadata={"turn_count": 0}).turn_count is None


def test_integers_beyond_64_bits_stay_exact_however_many_digits_are_around_them():
    # 19 digits in all, one run of them: beyond the signed 64 bits orjson turns into a float
    assert parse_args('{"n": -9999999999999999999}') == {"n": -9999999999999999999}
    assert parse_args('{"n": 18446744073709551616, "m": 1}') == {"n": 2**64, "m": 1}
    # more than 19 digits, no run of 19: orjson's reading, exact
    assert parse_args('{"ids": [1234567890, 1234567890], "s": "12345"}') == {
        "ids": [1234567890, 1234567890],
        "s": "12345",
    }
