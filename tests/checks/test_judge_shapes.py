"""The peers' judge classes run with tooltrail after changing only imports: with a test judge
object, and with a completion function (sync or async, text or text plus usage) that the
judge engine wraps with the shape's retry policy, retries, timeout and samples. (Their
documented examples, run as written: tests/judge/test_dropin_*.py.)"""

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
from tooltrail.judge import set_model_resolver
from tooltrail.score import reads_content


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
    assert "Your refund for order 7 is issued." in request.prompt
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
    assert report.cases[0].scores[0].metadata["verdict"] == "A"
    rubric = "Criteria: The reply is polite to the customer."
    grades = "(A) Polite and warm\n(B) Neutral\n(C) Rude"
    scale = "Grades and their scores: A = 1, B = 0.5, C = 0."
    assert all(part in judge.prompts[0] for part in (rubric, grades, scale))
    assert judge.requests[0].params == {"check": "llm_judge", "rubric": "politeness"}
    assert judge.requests[0].samples == 2


class Flaky:
    """A completion function (agentic-evals' ``complete_fn``): fails ``failures`` times
    with ``error``, then answers ``answers`` in turn, each with its token usage."""

    def __init__(self, answers: list[str], failures: int = 0, error: type = ConnectionError):
        self.answers, self.failures, self.error = list(answers), failures, error
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> tuple[str, dict[str, int]]:
        self.prompts.append(prompt)
        if self.failures:
            self.failures -= 1
            raise self.error("provider hiccup")
        return self.answers.pop(0), {"input_tokens": 50, "output_tokens": 10}


PASS = '{"passed": true, "score": 0.9, "reasoning": "Clear."}'
FAIL = '{"passed": false, "score": 0.2, "reasoning": "Vague."}'


def test_llm_rubric_evaluator_with_a_completion_function_retry_and_samples() -> None:
    complete = Flaky([PASS, PASS, FAIL], failures=1)
    registry = EvaluatorRegistry()
    registry.register(
        LLMRubricEvaluator(
            "helpfulness", "Helpful.", complete, retry=RetryPolicy(max_attempts=2), samples=3
        )
    )
    samples = [EvaluationSample(case_id="refund", output="Your refund for order 7 is issued.")]
    report = evaluate_suite(
        refund_suite(EvaluatorConfig(name="helpfulness", threshold=0.5)), samples,
        registry=registry,
    )  # fmt: skip
    (score,) = report.cases[0].scores
    assert score.passed and score.value == pytest.approx((0.9 + 0.9 + 0.2) / 3)
    assert score.judge is not None
    assert score.judge["samples"] == 3 and score.judge["agreement"] == pytest.approx(2 / 3)
    assert len(complete.prompts) == 4  # one failed attempt, retried, then three samples
    assert score.judge["input_tokens"] == 150


def test_a_completion_function_that_fails_every_attempt_is_an_error_that_never_passes() -> None:
    complete = Flaky([], failures=5)
    registry = EvaluatorRegistry()
    registry.register(
        LLMRubricEvaluator("tone", "Kind.", complete, retry=RetryPolicy(max_attempts=3))
    )
    report = evaluate_suite(
        refund_suite(EvaluatorConfig(name="tone")),
        [EvaluationSample(case_id="refund", output="Done.")],
        registry=registry,
    )
    (score,) = report.cases[0].scores
    assert not score.passed and score.value == 0.0 and score.error
    assert "provider hiccup" in score.explanation
    assert len(complete.prompts) == 3


def test_retry_on_limits_which_failures_are_retried() -> None:
    complete = Flaky([PASS], failures=1, error=KeyError)
    registry = EvaluatorRegistry()
    policy = RetryPolicy(max_attempts=3, retry_on=(ConnectionError,))
    registry.register(LLMRubricEvaluator("tone", "Kind.", complete, retry=policy))
    report = evaluate_suite(
        refund_suite(EvaluatorConfig(name="tone")),
        [EvaluationSample(case_id="refund", output="Done.")],
        registry=registry,
    )
    assert not report.cases[0].scores[0].passed
    assert len(complete.prompts) == 1  # a KeyError is not in retry_on: no second attempt


def test_an_async_completion_function_in_llm_rubric_evaluator() -> None:
    prompts: list[str] = []

    async def complete(prompt: str) -> str:
        prompts.append(prompt)
        return "Verdict: A"  # a letter grade, as agentic-evals' templates ask

    template = make_rubric(
        "politeness", "The reply is polite.", levels=[("Polite", 1.0), ("Rude", 0.0)]
    )
    registry = EvaluatorRegistry()
    registry.register(LLMRubricEvaluator("politeness", template, complete))
    report = evaluate_suite(
        refund_suite(EvaluatorConfig(name="politeness")),
        [EvaluationSample(case_id="refund", output="Happy to help!")],
        registry=registry,
    )
    (score,) = report.cases[0].scores
    assert (score.passed, score.value, score.metadata["verdict"]) == (True, 1.0, "A")
    assert "The reply is polite." in prompts[0]


def test_pytest_agent_eval_judge_evaluators_with_a_completion_function() -> None:
    reply_judge = Flaky([PASS], failures=1)
    args_judge = Flaky([FAIL, PASS])
    turn = Turn(
        user="Book a morning slot",
        expect=Expect(
            evaluators=[
                JudgeEvaluator(rubric="Confirms a time.", retries=1, timeout=5, judge=reply_judge),
                ToolCallArgsJudgeEvaluator(
                    tool="book_slot", rubric="A morning time.", retries=0, judge=args_judge
                ),
            ]
        ),
    )
    case = TestCase(id="book", turns=[turn])
    result = evaluate_trace(case, booking())
    assert [s.passed for s in result.scores[-2:]] == [True, True]
    assert len(reply_judge.prompts) == 2  # retries=1: the hiccup, then the answer
    assert len(args_judge.prompts) == 2  # 7am failed, 10am passed


def test_bad_shapes_are_refused() -> None:
    with pytest.raises(ValueError, match="max_attempts must be at least 1"):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError, match="samples must be at least 1"):
        LLMJudgeEvaluator("tone", ScriptedJudge(), samples=0)
    with pytest.raises(TypeError, match="judge must be a function of the evaluation context"):
        LLMJudgeEvaluator("tone", 42)


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
