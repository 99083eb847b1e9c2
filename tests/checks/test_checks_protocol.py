"""One check protocol: built-in checks are frozen dataclasses with ``evaluate(ctx)``, case fields
and turn expectations compile to them, and registered checks (classes or plain functions) are
built from their ``EvaluatorConfig`` and see the same explicit context."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tooltrail import (
    EvalTrace,
    EvaluationSample,
    EvaluatorConfig,
    Expect,
    Registry,
    Score,
    SuiteError,
    TestCase,
    TestSuite,
    ToolCall,
    ToolCallArgs,
    Turn,
    evaluate_cases,
    evaluate_suite,
    evaluate_trace,
)
from tooltrail.checks import (
    CallView,
    CheckContext,
    Contains,
    ForbiddenTool,
    FunctionCheck,
    MaxToolCalls,
    RequiredTool,
    ToolArgs,
    ToolArgValues,
    ToolOrder,
    TurnArgs,
    TurnCount,
    TurnExcludes,
    TurnIncludes,
    TurnOrdered,
    case_checks,
    default_registry,
    expect_checks,
)


@dataclasses.dataclass(frozen=True, slots=True)
class MaxCallsOf:
    """At most ``limit`` calls of ``tool``."""

    tool: str
    limit: int = 1

    def evaluate(self, ctx: CheckContext) -> Score:
        n = ctx.view.counts.get(self.tool, 0)
        name = f"max_calls_of:{self.tool}"
        value = 1.0 if n <= self.limit else self.limit / n
        return Score(
            name=name,
            metric="max_calls_of",
            value=value,
            passed=value >= 1.0,
            explanation=f"{n} calls of {self.tool!r}.",
        )


TRACE = EvalTrace(
    "t",
    tool_calls=[
        ToolCall("lookup", {"id": 1}, span_id="s1"),
        ToolCall("lookup", {"id": 1}, span_id="s2", status="error"),
        ToolCall("refund", {"id": 1}, span_id="s3"),
    ],
    output="Refunded.",
)


def test_case_fields_compile_to_check_objects_in_the_contract_order():
    case = TestCase(
        id="c",
        max_turns=3,
        required_tool_order=["a", "b"],
        expected_tool_arguments={"b": {"x": 1}},
        required_tool_arguments={"b": ["x"]},
        forbidden_tools=["w"],
        required_tools=["a", "b"],
        expected_contains=["done"],
    )
    assert case_checks(case) == [
        Contains("done"),
        RequiredTool("a"),
        RequiredTool("b"),
        ForbiddenTool("w"),
        ToolArgs("b", ["x"]),
        ToolArgValues("b", {"x": 1}),
        ToolOrder(["a", "b"]),
        TurnCount(3),
    ]


def test_a_turn_expectation_compiles_to_check_objects():
    expect = Expect(
        tool_calls_include=["a", "b"],
        tool_calls_exclude=["w"],
        tool_calls_ordered=True,
        tool_calls_args=[ToolCallArgs("a", {"x": 1}, mode="exact")],
    )
    assert expect_checks(expect) == [
        TurnIncludes("a"),
        TurnIncludes("b"),
        TurnExcludes("w"),
        TurnOrdered(["a", "b"]),
        TurnArgs("a", {"x": 1}, "exact"),
    ]


def test_built_in_checks_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        RequiredTool("a").tool = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        MaxToolCalls(max=3).max = 4  # type: ignore[misc]


def test_a_per_turn_check_names_the_turn_it_gets_in_its_context():
    ctx = CheckContext(trace=TRACE, view=CallView(TRACE.tool_calls), output=None, turn=2)
    score = TurnIncludes("refund").evaluate(ctx)
    assert (score.name, score.turn, score.span_ids) == (
        "turn2:tool_calls_include:refund",
        2,
        ("s3",),
    )


def test_a_registered_check_class_is_built_from_its_config_and_thresholded():
    registry = Registry.with_builtins()
    registry.register("max_calls_of", MaxCallsOf)
    case = TestCase(
        id="c",
        evaluators=[
            EvaluatorConfig("max_calls_of", config={"tool": "lookup"}),
            EvaluatorConfig("max_calls_of", threshold=0.5, config={"tool": "lookup"}),
            EvaluatorConfig("max_calls_of", config={"tool": "refund", "limit": 0}, required=False),
        ],
    )
    strict, lenient, advisory = evaluate_trace(case, TRACE, registry=registry).scores
    assert (strict.value, strict.passed) == (0.5, False)
    assert lenient.passed
    assert (advisory.passed, advisory.required) == (False, False)
    assert registry.get("max_calls_of") is MaxCallsOf


def test_a_check_class_declares_its_config_keys_by_its_fields():
    registry = Registry()
    registry.register("max_calls_of", MaxCallsOf)
    case = TestCase(id="c", evaluators=[EvaluatorConfig("max_calls_of", config={"tol": "a"})])
    (score,) = evaluate_trace(case, TRACE, registry=registry).scores
    assert score.error == "ConfigError"
    assert "Unknown config key 'tol' for scorer 'max_calls_of' (did you mean 'tool'?)" in (
        score.explanation
    )


def test_a_suite_file_naming_a_check_class_is_checked_against_its_fields(tmp_path: Path):
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\ncases:\n  - id: c\n    evaluators:\n      - name: max_calls_of\n"
        "        config: {tool: lookup, limt: 2}\n",
        encoding="utf-8",
    )
    registry = Registry()
    registry.register("max_calls_of", MaxCallsOf)
    with pytest.raises(SuiteError, match=r"suite\.yaml:6: .*limt.*did you mean 'limit'"):
        registry.check(TestSuite.load(path))


def test_a_constructor_that_raises_fails_its_case_alone():
    @dataclasses.dataclass(frozen=True)
    class Picky:
        limit: int = 0

        def __post_init__(self) -> None:
            raise ValueError("limit must be set")

        def evaluate(self, ctx: CheckContext) -> Score:  # pragma: no cover - never built
            raise AssertionError

    registry = Registry.with_builtins()
    registry.register("picky", Picky)
    picky = TestCase(id="picky", evaluators=[EvaluatorConfig("picky")])
    plain = TestCase(id="plain", required_tools=["refund"])
    picky_row, plain_row = evaluate_cases([picky, plain], TRACE, registry=registry)
    (score,) = picky_row.scores
    assert (score.passed, score.error) == (False, "ValueError")
    assert score.explanation == "Scorer 'picky' failed: ValueError: limit must be set"
    assert plain_row.passed


def test_a_class_without_evaluate_is_refused():
    class NotACheck:
        pass

    with pytest.raises(TypeError, match="evaluate"):
        Registry().register("nope", NotACheck)


def test_a_plain_function_is_wrapped_and_gets_trace_case_and_config():
    seen = []

    def scorer(trace, case, config):
        seen.append((trace, case, config))
        return [Score.passing("p", "p", "ok")]

    registry = Registry()
    registry.register("p", scorer)
    entry = registry.entry("p")
    assert entry is not None and registry.get("p") is scorer
    assert entry.build({"k": 1}) == FunctionCheck(scorer, {"k": 1})
    case = TestCase(id="c", evaluators=[EvaluatorConfig("p", config={"k": 1})])
    evaluate_trace(case, TRACE, registry=registry)
    assert seen == [(TRACE, case, {"k": 1})]


def test_every_check_of_an_evaluation_sees_one_context():
    contexts: list[CheckContext] = []

    @dataclasses.dataclass(frozen=True, slots=True)
    class Spy:
        def evaluate(self, ctx: CheckContext) -> Score:
            contexts.append(ctx)
            return Score.passing("spy", "spy", "seen")

    registry = Registry()
    registry.register("spy", Spy)
    ignoring = TestCase(
        id="ignoring", ignore_failed_calls=True, evaluators=[EvaluatorConfig("spy")] * 2
    )
    counting = TestCase(id="counting", evaluators=[EvaluatorConfig("spy")])
    evaluate_cases([ignoring, counting], TRACE, output="Reply.", registry=registry)
    first, second, third = contexts
    assert first is second  # the scorers of one evaluation share its context
    assert (first.case, first.output, first.turn, first.trace) == (ignoring, "Reply.", None, TRACE)
    assert [c.span_id for c in first.view.calls] == ["s1", "s3"]  # failed attempt left out
    assert third.view.size == 3 and third.case is counting
    assert first.view is third.view.without_failed()  # one call index for the trace's cases


def test_a_suite_run_compiles_each_case_once_and_scores_every_sample():
    built = []

    @dataclasses.dataclass(frozen=True, slots=True)
    class Counted:
        def __post_init__(self) -> None:
            built.append(self)

        def evaluate(self, ctx: CheckContext) -> Score:
            return Score.passing("counted", "counted", ctx.trace.trace_id)

    registry = Registry()
    registry.register("counted", Counted)
    case = TestCase(id="c", evaluators=[EvaluatorConfig("counted")])
    suite = TestSuite(name="s", cases=[case])
    traces = [EvalTrace(f"t{i}") for i in range(3)]
    report = evaluate_suite(suite, [EvaluationSample("c", None, t) for t in traces], registry)
    assert [row.scores[0].explanation for row in report.cases] == ["t0", "t1", "t2"]
    assert len(built) == 1


def test_the_default_registry_holds_the_built_in_scorers_as_classes():
    assert default_registry().get("max_tool_calls") is MaxToolCalls


def test_a_per_turn_expectation_judges_its_turns_calls():
    calls = [ToolCall("a", {}, span_id="x", turn=1), ToolCall("b", {}, span_id="y", turn=2)]
    both = Expect(tool_calls_include=["b"])
    case = TestCase(id="c", turns=[Turn(expect=both), Turn(expect=both)])
    first, second = evaluate_trace(case, EvalTrace("t", tool_calls=calls)).scores
    assert (first.name, first.passed) == ("turn1:tool_calls_include:b", False)
    assert (second.name, second.passed, second.span_ids) == (
        "turn2:tool_calls_include:b",
        True,
        ("y",),
    )
