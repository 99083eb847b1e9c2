"""Built-in scorers: values, thresholds, explanations and configuration errors."""

import json

import pytest
from fixtures import CORPUS

from tooltrail import (
    EvalSpan,
    EvalTrace,
    EvaluatorConfig,
    TestCase,
    ToolCall,
    evaluate_trace,
)


def recorded(framework: str, scenario: str) -> EvalTrace:
    """A hand-built trace of a corpus scenario's ground-truth calls."""
    truth = json.loads((CORPUS / framework / f"{scenario}.truth.json").read_text("utf-8"))
    calls = [
        ToolCall(name=c["tool"], args=c["args"], call_id=c["call_id"], span_id=c["call_id"])
        for c in truth["calls"]
    ]
    return EvalTrace(truth["trace_ids"][0], tool_calls=calls, metadata={"turn_count": 1})


def calls(*names_and_args):
    spans = []
    for item in names_and_args:
        name, args = item if isinstance(item, tuple) else (item, {})
        spans.append(
            EvalSpan(tool_name=name, attributes={"tool_args": args}, span_id=f"s{len(spans)}")
        )
    return EvalTrace("t", spans=spans)


def score(name, trace, threshold=None, config=None, **case_fields):
    case_fields.setdefault("required_tools", [])
    evaluator = EvaluatorConfig(name=name, threshold=threshold, config=config or {})
    case = TestCase(id="c", evaluators=[evaluator], **case_fields)
    (s,) = evaluate_trace(case, trace).scores[len(case_fields["required_tools"]) :]
    return s


def test_precision_counts_repeats_against_the_required_tools():
    s = score(
        "tool_call_precision",
        recorded("pydantic-ai", "d_loop_web_search"),
        1.0,
        required_tools=["lookup_order"],
    )
    assert (s.name, s.metric) == ("tool_call_precision", "tool_call_precision")
    assert s.value == pytest.approx(3 / 4)
    assert not s.passed
    assert s.explanation == "3/4 tool calls were in the allowed set ['lookup_order']."
    assert s.span_ids == ("call_t1_s4_1",)  # the web_search call


def test_precision_prefers_the_configured_allowed_set():
    s = score(
        "tool_call_precision",
        calls("b", "a", "a"),
        config={"allowed_tools": ["b", "a"]},
        required_tools=["a"],
    )
    assert (s.value, s.passed) == (1.0, True)
    assert s.explanation == "3/3 tool calls were in the allowed set ['a', 'b']."


def test_precision_passes_at_a_threshold_it_meets_exactly():
    s = score("tool_call_precision", calls("a", "x"), 0.5, config={"allowed_tools": ["a"]})
    assert (s.value, s.passed) == (0.5, True)


def test_precision_with_no_calls_is_zero():
    s = score("tool_call_precision", calls(), 0.0, config={"allowed_tools": ["b", "a"]})
    assert s.value == 0.0
    assert s.explanation == "No tool calls in the trace; expected calls from ['a', 'b']."


def test_precision_without_an_allowed_set_is_a_config_error_on_that_case_only():
    s = score("tool_call_precision", calls("a"), 0.0)
    assert (s.passed, s.error) == (False, "ConfigError")
    assert "allowed_tools" in s.explanation


def test_recall_counts_required_tools_called():
    s = score("tool_call_recall", calls("a", "a", "c"), 0.5, required_tools=["a", "b", "c"])
    assert s.value == pytest.approx(2 / 3)
    assert s.passed
    assert s.explanation == "2/3 required tools were called."


def test_recall_reads_its_own_required_list():
    s = score("tool_call_recall", calls("a"), config={"required_tools": ["a", "b"]})
    assert (s.value, s.passed) == (0.5, False)


def test_redundancy_counts_exact_repeats_of_an_earlier_call():
    s = score("no_redundant_tool_calls", recorded("pydantic-ai", "d_loop_web_search"), 1.0)
    assert (s.name, s.metric) == ("no_redundant_tool_calls", "no_redundant_tool_calls")
    assert s.value == pytest.approx(1 - 2 / 4)
    assert s.explanation == "2/4 tool calls exactly duplicated an earlier call."
    assert s.span_ids == ("call_t1_s2_1", "call_t1_s3_1")


def test_redundancy_ignores_argument_key_order():
    s = score("no_redundant_tool_calls", calls(("a", {"x": 1, "y": 2}), ("a", '{"y": 2, "x": 1}')))
    assert s.explanation == "1/2 tool calls exactly duplicated an earlier call."


def test_redundancy_tells_five_from_five_point_oh_and_uncaptured_from_empty():
    trace = EvalTrace(
        "t",
        tool_calls=[
            ToolCall("a", {"n": 5}),
            ToolCall("a", {"n": 5.0}),
            ToolCall("a", None),
            ToolCall("a", {}),
        ],
    )
    s = score("no_redundant_tool_calls", trace)
    assert (s.value, s.passed) == (1.0, True)
    assert s.explanation == "0/4 tool calls exactly duplicated an earlier call."


def test_redundancy_finds_a_repeat_that_is_not_adjacent():
    s = score("no_redundant_tool_calls", calls(("a", {"q": 1}), ("b", {}), ("a", {"q": 1})))
    assert s.span_ids == ("s2",)


def test_redundancy_with_no_calls_is_perfect():
    s = score("no_redundant_tool_calls", calls())
    assert (s.value, s.passed) == (1.0, True)
    assert s.explanation == "No tool calls in the trace, so none were redundant."


def test_redundancy_reads_only_its_scope_keys():
    s = score("no_redundant_tool_calls", calls("a"), config={"ignore": ["a"]})
    assert s.error == "ConfigError"
    assert "it reads ['exclude_tools', 'tools']" in s.explanation


def test_trajectory_exact_match():
    s = score("trajectory_match", calls("a", "b"), config={"expected": ["a", "b"]})
    assert (s.value, s.passed) == (1.0, True)
    assert (
        s.explanation == "Tool calls ['a', 'b'] matched the expected trajectory ['a', 'b'] exactly."
    )
    s = score("trajectory_match", calls("b", "a"), config={"expected": ["a", "b"], "mode": "exact"})
    assert (s.value, s.passed) == (0.0, False)
    assert s.explanation == (
        "Tool calls ['b', 'a'] did not match the expected trajectory ['a', 'b'] exactly."
    )


def test_trajectory_in_order_is_the_lcs_f1():
    s = score(
        "trajectory_match",
        calls("a", "x", "c", "b"),
        config={"expected": ["a", "b", "c"], "mode": "in_order"},
    )
    assert s.value == pytest.approx(2 * 2 / (3 + 4))
    assert s.explanation == (
        "Tool calls ['a', 'x', 'c', 'b'] matched 2 of the expected trajectory ['a', 'b', 'c'] "
        "in order (F1 0.57)."
    )


def test_trajectory_any_order_is_the_multiset_f1():
    s = score(
        "trajectory_match",
        calls("b", "a", "a"),
        config={"expected": ["a", "b"], "mode": "any_order"},
        threshold=0.8,
    )
    assert s.value == pytest.approx(2 * 2 / 5)
    assert s.passed


def test_trajectory_of_nothing_against_nothing_is_perfect():
    s = score("trajectory_match", calls(), config={"expected": [], "mode": "in_order"})
    assert s.value == 1.0


def test_trajectory_with_a_bad_mode_is_a_config_error():
    s = score("trajectory_match", calls("a"), config={"expected": ["a"], "mode": "fuzzy"})
    assert s.error == "ConfigError"


def test_max_tool_calls_passes_at_the_limit_and_fails_past_it():
    s = score("max_tool_calls", calls("a", "b"), config={"max": 2})
    assert (s.value, s.passed) == (1.0, True)
    assert s.explanation == "2 tool calls are within the limit of 2."
    s = score("max_tool_calls", calls("a", "b", "c"), config={"max": 2})
    assert (s.value, s.passed) == (0.0, False)
    assert s.explanation == "3 tool calls exceed the limit of 2."
    assert s.span_ids == ("s2",)


def test_max_tool_calls_needs_a_max():
    assert score("max_tool_calls", calls("a")).error == "ConfigError"


def test_a_misspelled_config_key_is_a_config_error_with_a_hint():
    s = score("tool_call_precision", calls("a"), config={"allowed_tool": ["a"]})
    assert s.error == "ConfigError"
    assert "'allowed_tool'" in s.explanation
    assert "did you mean 'allowed_tools'?" in s.explanation


def test_an_unknown_scorer_is_a_config_error_with_a_hint():
    s = score("tool_call_precison", calls("a"))
    assert s.error == "ConfigError"
    assert "did you mean 'tool_call_precision'?" in s.explanation


def test_a_score_that_is_not_required_never_fails_its_case():
    case = TestCase(
        id="c",
        evaluators=[
            EvaluatorConfig("max_tool_calls", config={"max": 0}, required=False),
        ],
    )
    result = evaluate_trace(case, calls("a"))
    assert result.passed
    assert result.scores[0].required is False
    assert not result.scores[0].passed


def test_redundancy_spells_null_nan_and_uncaptured_apart():
    nan = float("nan")
    trace = EvalTrace(
        "t",
        tool_calls=[
            ToolCall("a", {"x": None}, span_id="n1"),
            ToolCall("a", {"x": nan}, span_id="nan1"),
            ToolCall("a", None, span_id="u1"),
            ToolCall("a", {"x": None}, span_id="n2"),
            ToolCall("a", {"x": float("inf")}, span_id="inf1"),
            ToolCall("a", None, span_id="u2"),
        ],
    )
    s = score("no_redundant_tool_calls", trace)
    assert s.span_ids == ("n2", "u2")


def test_redundancy_handles_arguments_orjson_cannot_write():
    wide = 2**70
    trace = EvalTrace(
        "t",
        tool_calls=[
            ToolCall("a", {"n": wide}, span_id="w1"),
            ToolCall("a", {"n": wide + 1}, span_id="w2"),
            ToolCall("a", {"n": wide}, span_id="w3"),
        ],
    )
    assert score("no_redundant_tool_calls", trace).span_ids == ("w3",)


def test_redundancy_is_per_tool_name():
    s = score("no_redundant_tool_calls", calls(("a", {"q": 1}), ("b", {"q": 1})))
    assert s.explanation == "0/2 tool calls exactly duplicated an earlier call."
