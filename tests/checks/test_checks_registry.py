"""The scorer registry: custom scorers go through the same door as the built-in ones."""

import pytest

from tooltrail import (
    EvalTrace,
    EvaluatorConfig,
    Registry,
    Score,
    TestCase,
    ToolCall,
    default_registry,
    evaluate_trace,
)


def no_web_search(trace, case, config):
    searches = [c for c in trace.tool_calls if c.name == "web_search"]
    return Score(
        "no_web_search",
        "no_web_search",
        0.0 if searches else 1.0,
        not searches,
        f"{len(searches)} web searches.",
    )


TRACE = EvalTrace("t", tool_calls=[ToolCall("web_search", {"q": "x"}), ToolCall("lookup", {})])


def case_with(*evaluators):
    return TestCase(id="c", evaluators=list(evaluators))


def test_the_default_registry_holds_every_builtin_scorer():
    assert set(default_registry().names()) >= {
        "tool_call_precision",
        "tool_call_recall",
        "no_redundant_tool_calls",
        "trajectory_match",
        "max_tool_calls",
    }


def test_a_registered_plain_function_scores_a_trace():
    registry = Registry.with_builtins()
    registry.register("no_web_search", no_web_search)
    result = evaluate_trace(case_with(EvaluatorConfig("no_web_search")), TRACE, registry=registry)
    assert not result.passed
    assert result.scores[0].explanation == "1 web searches."


def test_register_works_as_a_decorator():
    registry = Registry()

    @registry.register("always")
    def always(trace, case, config):
        return Score("always", "always", 1.0, True, "ok")

    assert registry.get("always") is always


def test_a_threshold_overrides_the_scorers_own_verdict():
    registry = Registry()
    registry.register("half", lambda t, c, cfg: Score("half", "half", 0.5, False, "half"))
    result = evaluate_trace(
        case_with(EvaluatorConfig("half", threshold=0.5)), TRACE, registry=registry
    )
    assert result.passed


def test_a_scorer_may_return_several_scores():
    registry = Registry()
    registry.register(
        "per_call",
        lambda t, c, cfg: [
            Score(f"per_call:{call.name}", "per_call", 1.0, True, "ok") for call in t.tool_calls
        ],
    )
    result = evaluate_trace(case_with(EvaluatorConfig("per_call")), TRACE, registry=registry)
    assert [s.name for s in result.scores] == ["per_call:web_search", "per_call:lookup"]


def test_a_scorer_that_raises_becomes_a_failing_score_and_the_rest_still_runs():
    registry = Registry.with_builtins()

    def broken(trace, case, config):
        raise KeyError("oops")

    registry.register("broken", broken)
    case = case_with(
        EvaluatorConfig("broken"), EvaluatorConfig("max_tool_calls", config={"max": 5})
    )
    result = evaluate_trace(case, TRACE, registry=registry)
    broken_score, max_score = result.scores
    assert (broken_score.passed, broken_score.error) == (False, "KeyError")
    assert broken_score.explanation.startswith("Scorer 'broken' failed: KeyError")
    assert max_score.passed


def test_a_scorer_returning_something_else_is_reported():
    registry = Registry()
    registry.register("bad", lambda t, c, cfg: 0.5)
    (s,) = evaluate_trace(case_with(EvaluatorConfig("bad")), TRACE, registry=registry).scores
    assert (s.passed, s.error) == (False, "TypeError")


def test_an_error_score_never_passes_even_above_its_threshold():
    registry = Registry()
    registry.register("err", lambda t, c, cfg: Score("err", "err", 1.0, True, "x", error="Boom"))
    (s,) = evaluate_trace(
        case_with(EvaluatorConfig("err", threshold=0.0)), TRACE, registry=registry
    ).scores
    assert not s.passed


def test_a_taken_name_is_refused_unless_replaced():
    registry = Registry.with_builtins()
    with pytest.raises(ValueError, match="already registered"):
        registry.register("max_tool_calls", no_web_search)
    registry.register("max_tool_calls", no_web_search, replace=True)
    assert registry.get("max_tool_calls") is no_web_search


def test_declared_config_keys_catch_a_misspelling():
    registry = Registry()
    registry.register(
        "limit", lambda t, c, cfg: Score("limit", "limit", 1.0, True, ""), config_keys=["max"]
    )
    (s,) = evaluate_trace(
        case_with(EvaluatorConfig("limit", config={"mx": 3})), TRACE, registry=registry
    ).scores
    assert s.error == "ConfigError"
    assert "did you mean 'max'?" in s.explanation


def test_a_non_numeric_threshold_is_a_config_error():
    (s,) = evaluate_trace(
        case_with(EvaluatorConfig("max_tool_calls", threshold="1", config={"max": 1})), TRACE
    ).scores
    assert s.error == "ConfigError"


def test_score_passing_and_failing_fill_value_and_verdict_by_name() -> None:
    from tooltrail.checks import Score

    ok = Score.passing("required_tool:a", "required_tool", "called", span_ids=("s1",), turn=2)
    assert (ok.value, ok.passed, ok.required, ok.skipped, ok.error) == (
        1.0,
        True,
        True,
        False,
        None,
    )
    assert (ok.name, ok.metric, ok.explanation, ok.span_ids, ok.turn) == (
        "required_tool:a",
        "required_tool",
        "called",
        ("s1",),
        2,
    )
    bad = Score.failing("x", "x", "broken", error="ConfigError")
    assert (bad.value, bad.passed, bad.failed, bad.error) == (0.0, False, True, "ConfigError")
