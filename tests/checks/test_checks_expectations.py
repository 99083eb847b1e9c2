"""Case expectations: names, metrics, values and the exact explanation texts of docs/checks.md."""

from tooltrail import EvalSpan, EvalTrace, TestCase, ToolCall, evaluate_trace


def span(tool, args=None, span_id=None):
    attributes = {} if args is None else {"tool_args": args}
    return EvalSpan(tool_name=tool, attributes=attributes, span_id=span_id)


def run(case_fields, *spans, output=None, **metadata):
    """The scores of a one-off case over a hand-built trace."""
    case = TestCase(id="c", **case_fields)
    trace = EvalTrace("t1", spans=list(spans), metadata=metadata, output=output)
    return evaluate_trace(case, trace).scores


def only(case_fields, *spans, **kw):
    (score,) = run(case_fields, *spans, **kw)
    return score


def test_contains_passes_case_insensitively_on_the_stripped_reply():
    s = only({"expected_contains": ["order ord-7731"]}, output="  Refunded ORDER ORD-7731.\n")
    assert (s.name, s.metric, s.value, s.passed) == (
        "contains:order ord-7731",
        "contains",
        1.0,
        True,
    )
    assert s.explanation == "Output contains required text: 'order ord-7731'."


def test_contains_fails_with_the_missing_text():
    s = only({"expected_contains": ["$49.99"]}, output="Refund of $499.90 issued.")
    assert (s.value, s.passed) == (0.0, False)
    assert s.explanation == "Output is missing required text: '$49.99'."


def test_contains_fails_when_there_is_no_reply():
    assert not only({"expected_contains": ["x"]}).passed


def test_output_argument_overrides_the_trace_reply():
    case = TestCase(id="c", expected_contains=["yes"])
    trace = EvalTrace("t", output="no")
    assert evaluate_trace(case, trace, output="yes").passed
    assert not evaluate_trace(case, trace).passed


def test_required_tool_passes_with_the_first_call_as_evidence():
    s = only(
        {"required_tools": ["lookup"]}, span("lookup", span_id="a"), span("lookup", span_id="b")
    )
    assert (s.name, s.metric, s.value, s.passed) == (
        "required_tool:lookup",
        "required_tool",
        1.0,
        True,
    )
    assert s.explanation == "Required tool 'lookup' was called."
    assert s.span_ids == ("a",)


def test_required_tool_fails_when_never_called():
    s = only({"required_tools": ["verify_identity"]}, span("lookup"))
    assert (s.value, s.passed, s.span_ids) == (0.0, False, ())
    assert s.explanation == "Required tool 'verify_identity' was not called."


def test_spans_without_a_tool_name_are_not_calls():
    trace = EvalTrace("t", spans=[EvalSpan(attributes={"name": "lookup"}), EvalSpan(tool_name="")])
    case = TestCase(id="c", required_tools=["lookup"])
    assert not evaluate_trace(case, trace).passed


def test_forbidden_tool_passes_when_not_called():
    s = only({"forbidden_tools": ["web_search"]}, span("lookup"))
    assert (s.name, s.metric, s.value, s.passed) == (
        "forbidden_tool:web_search",
        "forbidden_tool",
        1.0,
        True,
    )
    assert s.explanation == "Forbidden tool 'web_search' was not called."


def test_forbidden_tool_fails_pointing_at_every_forbidden_call():
    s = only(
        {"forbidden_tools": ["web_search"]},
        span("web_search", span_id="w1"),
        span("lookup", span_id="l1"),
        span("web_search", span_id="w2"),
    )
    assert (s.value, s.passed) == (0.0, False)
    assert s.explanation == "Forbidden tool 'web_search' was called."
    assert s.span_ids == ("w1", "w2")


def test_tool_args_passes_when_one_call_has_every_key():
    s = only(
        {"required_tool_arguments": {"issue_refund": ["order_id", "amount"]}},
        span("issue_refund", {"order_id": "ORD-1"}),
        span("issue_refund", {"order_id": "ORD-1", "amount": 1, "note": "x"}, span_id="r2"),
    )
    assert (s.name, s.metric, s.value, s.passed) == (
        "tool_args:issue_refund",
        "tool_args",
        1.0,
        True,
    )
    assert (
        s.explanation == "Tool 'issue_refund' included required arguments ['order_id', 'amount']."
    )
    assert s.span_ids == ("r2",)


def test_tool_args_checks_presence_only():
    s = only({"required_tool_arguments": {"t": ["a"]}}, span("t", {"a": None}))
    assert s.passed


def test_tool_args_never_combine_keys_across_calls():
    s = only(
        {"required_tool_arguments": {"issue_refund": ["order_id", "amount"]}},
        span("issue_refund", {"order_id": "ORD-1"}, span_id="r1"),
        span("issue_refund", {"amount": 49.99}, span_id="r2"),
    )
    assert (s.value, s.passed) == (0.0, False)
    assert (
        s.explanation
        == "Tool 'issue_refund' did not include required arguments ['order_id', 'amount']."
    )
    assert s.span_ids == ("r1", "r2")


def test_tool_args_fails_when_arguments_were_not_captured():
    assert not only({"required_tool_arguments": {"t": ["a"]}}, span("t")).passed


def test_tool_args_fails_when_the_tool_was_not_called():
    s = only({"required_tool_arguments": {"t": ["a"]}}, span("other", {"a": 1}))
    assert s.explanation == "Tool 't' did not include required arguments ['a']."


def test_tool_arg_values_passes_with_the_expected_subset():
    s = only(
        {"expected_tool_arguments": {"issue_refund": {"amount": 49.99}}},
        span("issue_refund", {"order_id": "ORD-7731", "amount": 49.99}, span_id="r"),
    )
    assert (s.name, s.metric, s.value, s.passed) == (
        "tool_arg_values:issue_refund",
        "tool_arg_values",
        1.0,
        True,
    )
    assert s.explanation == "Tool 'issue_refund' was called with {'amount': 49.99}."
    assert s.span_ids == ("r",)


def test_tool_arg_values_fails_listing_every_call_in_order():
    s = only(
        {"expected_tool_arguments": {"issue_refund": {"order_id": "ORD-7731", "amount": 49.99}}},
        span("issue_refund", {"order_id": "ORD-7731", "amount": 499.9}, span_id="r1"),
        span("issue_refund", None, span_id="r2"),
    )
    assert (s.value, s.passed) == (0.0, False)
    assert s.explanation == (
        "Tool 'issue_refund' was called with [{'order_id': 'ORD-7731', 'amount': 499.9}, None], "
        "not {'order_id': 'ORD-7731', 'amount': 49.99}."
    )
    assert s.span_ids == ("r1", "r2")


def test_tool_arg_values_fails_when_the_tool_was_not_called():
    s = only({"expected_tool_arguments": {"issue_refund": {"amount": 49.99}}}, span("lookup"))
    assert (
        s.explanation == "Tool 'issue_refund' was not called, so {'amount': 49.99} was not passed."
    )
    assert s.span_ids == ()


def test_tool_arg_values_passes_when_any_one_of_repeated_calls_matches():
    s = only(
        {"expected_tool_arguments": {"search": {"q": "b"}}},
        span("search", {"q": "a"}),
        span("search", {"q": "b"}),
        span("search", {"q": "c"}),
    )
    assert s.passed


def test_tool_arg_values_never_combine_arguments_across_calls():
    s = only(
        {"expected_tool_arguments": {"issue_refund": {"order_id": "ORD-1", "amount": 5}}},
        span("issue_refund", {"order_id": "ORD-1"}),
        span("issue_refund", {"amount": 5}),
    )
    assert not s.passed


def test_tool_arg_values_parses_json_string_arguments():
    s = only(
        {"expected_tool_arguments": {"issue_refund": {"amount": 49.99}}},
        span("issue_refund", '{"order_id": "ORD-7731", "amount": 49.99}'),
    )
    assert s.passed


def test_tool_arg_values_treats_a_number_and_its_string_as_different():
    s = only({"expected_tool_arguments": {"t": {"n": 5}}}, span("t", {"n": "5"}))
    assert s.explanation == "Tool 't' was called with [{'n': '5'}], not {'n': 5}."


def test_tool_arg_values_accepts_an_int_for_a_float():
    assert only({"expected_tool_arguments": {"t": {"n": 5}}}, span("t", '{"n": 5.0}')).passed


def test_tool_arg_values_rejects_true_for_one():
    assert not only({"expected_tool_arguments": {"t": {"n": 1}}}, span("t", {"n": True})).passed


def test_tool_arg_values_reports_arguments_that_are_not_an_object_as_none():
    s = only({"expected_tool_arguments": {"t": {"n": 1}}}, span("t", "[1, 2]"))
    assert s.explanation == "Tool 't' was called with [None], not {'n': 1}."


def test_tool_order_passes_with_other_calls_in_between():
    s = only(
        {"required_tool_order": ["a", "b", "c"]},
        span("a"),
        span("x"),
        span("b"),
        span("a"),
        span("c"),
    )
    assert (s.name, s.metric, s.value, s.passed) == ("tool_order", "tool_order", 1.0, True)
    assert s.explanation == "Tools were first called in the required order ['a', 'b', 'c']."


def test_tool_order_reports_missing_tools_first():
    s = only({"required_tool_order": ["a", "b", "c"]}, span("c"), span("a"))
    assert (s.value, s.passed) == (0.0, False)
    assert s.explanation == "Required order ['a', 'b', 'c'] not met: ['b'] never called."


def test_tool_order_reports_the_first_bad_pair_and_its_call():
    s = only(
        {"required_tool_order": ["a", "b", "c"]},
        span("c", span_id="c1"),
        span("b", span_id="b1"),
        span("a", span_id="a1"),
    )
    assert s.explanation == "Required order ['a', 'b', 'c'] not met: 'b' was called before 'a'."
    assert s.span_ids == ("b1",)


def test_tool_order_uses_first_calls_so_b_a_b_fails_a_then_b():
    s = only({"required_tool_order": ["a", "b"]}, span("b"), span("a"), span("b"))
    assert s.explanation == "Required order ['a', 'b'] not met: 'b' was called before 'a'."


def test_tool_order_with_a_tool_listed_twice_never_passes():
    assert not only({"required_tool_order": ["a", "a"]}, span("a"), span("a")).passed


def test_turn_count_within_the_limit_passes():
    s = only({"max_turns": 3}, span("a"), turn_count=3)
    assert (s.name, s.metric, s.value, s.passed) == (
        "turn_count_threshold",
        "turn_count_threshold",
        1.0,
        True,
    )
    assert s.explanation == "Turn count 3 meets the 3 turn limit."


def test_turn_count_over_the_limit_fails():
    s = only({"max_turns": 2}, turn_count=4)
    assert (s.value, s.passed) == (0.0, False)
    assert s.explanation == "Turn count 4 exceeds the 2 turn limit."


def test_turn_count_that_is_not_a_positive_int_cannot_be_evaluated():
    for bad in (True, 0, "2", 2.0):
        s = only({"max_turns": 2}, span("a"), turn_count=bad)
        assert not s.passed
        assert s.explanation == (
            "Trace metadata is missing a positive integer turn_count, so the max_turns check "
            "could not be evaluated."
        )


def test_turn_count_is_derived_from_the_calls_when_metadata_lacks_it():
    trace = EvalTrace(
        "t",
        spans=[
            EvalSpan(tool_name="a", attributes={"turn": 1}),
            EvalSpan(tool_name="b", attributes={"turn": 3}),
        ],
    )
    s = evaluate_trace(TestCase(id="c", max_turns=2), trace).scores[0]
    assert s.explanation == "Turn count 3 exceeds the 2 turn limit."


def test_scores_come_in_the_contract_order():
    case = TestCase(
        id="c",
        max_turns=5,
        required_tool_order=["a"],
        expected_tool_arguments={"a": {}},
        required_tool_arguments={"a": []},
        forbidden_tools=["z"],
        required_tools=["a"],
        expected_contains=["hi"],
    )
    trace = EvalTrace("t", spans=[span("a", {})], output="hi", metadata={"turn_count": 1})
    result = evaluate_trace(case, trace)
    assert [s.metric for s in result.scores] == [
        "contains",
        "required_tool",
        "forbidden_tool",
        "tool_args",
        "tool_arg_values",
        "tool_order",
        "turn_count_threshold",
    ]
    assert result.passed


def test_failed_attempts_count_unless_the_case_ignores_them():
    trace = EvalTrace(
        "t",
        tool_calls=[
            ToolCall(name="issue_refund", args={"amount": 1}, status="error"),
            ToolCall(name="lookup", args={}),
        ],
    )
    counted = TestCase(id="c", required_tools=["issue_refund"])
    ignored = TestCase(id="c", required_tools=["issue_refund"], ignore_failed_calls=True)
    assert evaluate_trace(counted, trace).passed
    assert not evaluate_trace(ignored, trace).passed


def test_a_case_checking_nothing_is_an_error():
    import pytest

    from tooltrail import SuiteError

    with pytest.raises(SuiteError, match="no expectation"):
        TestCase(id="empty")


def test_a_tool_list_given_as_a_string_is_an_error():
    import pytest

    from tooltrail import SuiteError

    with pytest.raises(SuiteError, match="required_tools must be a list"):
        TestCase(id="c", required_tools="lookup_order")
