"""The peers' judge classes run with tooltrail after changing only imports (and the judge:
here a test judge object; a completion function needs the judge engine)."""

from __future__ import annotations

import pytest
from judge_double import ScriptedJudge, verdict

# agentic-evals' and pytest-agent-eval's names, imported from tooltrail
from tooltrail import (
    EvalTrace,
    EvaluationSample,
    EvaluatorConfig,
    Expect,
    JudgeConfig,
    JudgeEvaluator,
    LLMJudgeEvaluator,
    LLMRubricEvaluator,
    RetryPolicy,
    TestCase,
    TestSuite,
    ToolCall,
    ToolCallArgsConfig,
    ToolCallArgsJudgeEvaluator,
    Turn,
    evaluate_suite,
    evaluate_trace,
    make_rubric,
)
from tooltrail import Registry as EvaluatorRegistry
from tooltrail.evaluate import reads_content
from tooltrail.judge import set_model_resolver


def refund_suite(*evaluators: EvaluatorConfig) -> TestSuite:
    return TestSuite(
        name="support",
        cases=[TestCase(id="refund", input="Refund order 7", evaluators=list(evaluators))],
    )


def test_llm_judge_evaluator_with_retry_and_samples_in_a_registry() -> None:
    judge = ScriptedJudge([verdict(True, 0.8, "Clear and correct.")])
    registry = EvaluatorRegistry()
    registry.register(
        LLMJudgeEvaluator(
            "helpfulness",
            judge,
            retry=RetryPolicy(max_attempts=3, backoff_seconds=0.5),
            samples=3,
        )
    )
    suite = refund_suite(EvaluatorConfig(name="helpfulness", threshold=0.7))
    samples = [EvaluationSample(case_id="refund", output="Your refund for order 7 is issued.")]
    report = evaluate_suite(suite, samples, registry=registry)
    (score,) = report.cases[0].scores
    assert (score.name, score.metric, score.value, score.passed) == (
        "helpfulness",
        "llm_judge",
        0.8,
        True,
    )
    assert score.explanation == "Judge passed the reply (task_completed): Clear and correct."
    (request,) = judge.requests
    assert request.samples == 3
    assert request.prompt.endswith(
        "# Reply to judge (turn 1)\nYour refund for order 7 is issued.\n"
    )
    assert report.passed


def test_an_evaluator_takes_its_rubric_from_the_cases_config() -> None:
    judge = ScriptedJudge([verdict(False, 0.3, "Invents a date.")])
    registry = EvaluatorRegistry()
    registry.register(LLMJudgeEvaluator("grounded", judge))
    suite = refund_suite(
        EvaluatorConfig(name="grounded", config={"rubric": "grounded_in_tool_results"})
    )
    report = evaluate_suite(suite, [EvaluationSample(case_id="refund", output="By Friday.")],
                            registry=registry)  # fmt: skip
    assert report.cases[0].scores[0].explanation == (
        "Judge failed the reply (grounded_in_tool_results): Invents a date."
    )
    assert judge.requests[0].params == {"check": "llm_judge", "rubric": "grounded_in_tool_results"}


def test_llm_rubric_evaluator_with_a_made_rubric() -> None:
    judge = ScriptedJudge([verdict(True, 1.0, "Warm.")])
    template = make_rubric(
        "politeness",
        "The reply is polite to the customer.",
        levels=[("Polite and warm", 1.0), ("Neutral", 0.5), ("Rude", 0.0)],
    )
    registry = EvaluatorRegistry()
    registry.register(LLMRubricEvaluator("politeness", template, judge, samples=2))
    report = evaluate_suite(
        refund_suite(EvaluatorConfig(name="politeness")),
        [EvaluationSample(case_id="refund", output="Happy to help!")],
        registry=registry,
    )
    assert report.cases[0].scores[0].passed
    assert (
        "# Rubric\nThe reply is polite to the customer.\n\nScore levels:\n"
        "- score 1: Polite and warm\n- score 0.5: Neutral\n- score 0: Rude\n\n"
    ) in judge.prompts[0]
    assert judge.requests[0].params == {"check": "llm_judge", "rubric": "politeness"}
    assert judge.requests[0].samples == 2


def test_a_completion_function_is_refused_until_the_engine_wraps_it() -> None:
    with pytest.raises(TypeError, match="a completion function needs the judge engine"):
        LLMJudgeEvaluator("tone", lambda prompt: '{"passed": true}')
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="samples must be at least 1"):
        LLMJudgeEvaluator("tone", ScriptedJudge(), samples=0)


def booking() -> EvalTrace:
    return EvalTrace(
        trace_id="t",
        output="Booked 10am.",
        tool_calls=[
            ToolCall(name="book_slot", args={"time": "7am"}, span_id="a"),
            ToolCall(name="book_slot", args={"time": "10am"}, span_id="b"),
        ],
    )


def test_judge_evaluators_in_a_turns_expect() -> None:
    judges: dict[str, ScriptedJudge] = {
        "openai:gpt-4o": ScriptedJudge([verdict(True, reasoning="Confirms.")]),
        "anthropic:claude": ScriptedJudge(
            [verdict(False, reasoning="7am."), verdict(True, reasoning="10am.")]
        ),
    }
    previous = set_model_resolver(judges.__getitem__)
    try:
        turn = Turn(
            user="Book a morning slot",
            expect=Expect(
                evaluators=[
                    JudgeEvaluator(rubric="Confirms the booking.", model="openai:gpt-4o"),
                    ToolCallArgsJudgeEvaluator(
                        tool="book_slot",
                        rubric="Within business hours (9am-5pm).",
                        model="anthropic:claude",
                        retries=1,
                        timeout=5.0,
                    ),
                ]
            ),
        )
        result = evaluate_trace(TestCase(id="c", turns=[turn]), booking())
    finally:
        set_model_resolver(previous)
    assert [(s.name, s.passed, s.span_ids) for s in result.scores] == [
        ("turn1:llm_judge", True, ()),
        ("turn1:tool_args_judge:book_slot", True, ("b",)),
    ]
    assert len(judges["anthropic:claude"].requests) == 2
    assert reads_content([TestCase(id="c", turns=[turn])]) is True


def test_judge_config_and_tool_call_args_config_in_a_turns_expect() -> None:
    judge = ScriptedJudge([verdict(True)])
    turn = Turn(
        user="Book a morning slot",
        expect=Expect(
            judge=JudgeConfig(rubric="Confirms the booking.", judge=judge),
            tool_calls_args=[
                ToolCallArgsConfig(tool="book_slot", args={"time": "10am"}, mode="subset"),
                ToolCallArgsConfig(
                    tool="book_slot", judge=JudgeConfig(rubric="A morning time.", judge=judge)
                ),
            ],
        ),
    )
    result = evaluate_trace(TestCase(id="c", turns=[turn]), booking())
    assert [s.name for s in result.scores] == [
        "turn1:tool_calls_args:book_slot",
        "turn1:tool_args_judge:book_slot",
        "turn1:llm_judge",
    ]
    assert result.passed
