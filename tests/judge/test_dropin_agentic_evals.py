"""agentic-evals 0.9's documented judge examples, run with only the import changed.

Each test holds the code of one example of agentic-evals' README (and its
``examples/llm_rubric_judge.py``) that touches judges, evaluation contexts, registries, rubric
templates, scores or results, with ``from agentic_evals import ...`` changed to ``from
tooltrail import ...``, and asserts the result agentic-evals documents for it. Where the
example leaves the model call to the reader (``complete_fn``, ``call_your_model``), the
function asks the scripted OpenAI-compatible server on loopback (tests/judge_server.py)
through the real ``openai`` SDK. What tooltrail does differently on purpose is listed in
docs/judge.md ("agentic-evals and pytest-agent-eval code").
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import openai
import pytest
from judge_server import JudgeServer, judge_server_fixture, status, text, verdict  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


#: agentic-evals' examples/llm_rubric_judge.py, as written but for the import (a script: run in
#: a process of its own).
RUBRIC_EXAMPLE = '''from tooltrail import (
    FACTUALITY,
    EvalTrace,
    EvaluationSample,
    EvaluatorConfig,
    EvaluatorRegistry,
    LLMRubricEvaluator,
    TestCase,
    TestSuite,
    evaluate_suite,
)


def complete_fn(prompt: str) -> str:
    """Replace this with a real call to your model provider."""
    print("--- prompt sent to the model ---")
    print(prompt)
    print("--- end prompt ---\\n")
    return "(A) The submitted answer is fully consistent with the reference."


def main() -> None:
    registry = EvaluatorRegistry()
    registry.register(LLMRubricEvaluator("factuality", FACTUALITY, complete_fn))

    suite = TestSuite(
        name="factual-qa-demo",
        version="1",
        cases=[
            TestCase(
                id="capital-of-france",
                name="Answer states the correct capital",
                input="What is the capital of France?",
                evaluators=[
                    EvaluatorConfig(
                        name="factuality",
                        threshold=0.8,
                        config={"reference": "Paris is the capital of France."},
                    )
                ],
            )
        ],
    )
    sample = EvaluationSample(case_id="capital-of-france", output="Paris.", trace=EvalTrace())

    report = evaluate_suite(suite, [sample], registry=registry)
    score = report.cases[0].scores[0]
    print(f"verdict={score.metadata['verdict']}  value={score.value}  passed={score.passed}")


if __name__ == "__main__":
    main()
'''


def asking(server: JudgeServer) -> Any:
    """A ``complete_fn`` as agentic-evals' README leaves it to the reader: the prompt to a
    model through the openai SDK, the answer back as a ``JudgeResponse`` with its usage."""
    from tooltrail import JudgeResponse

    client = openai.OpenAI(base_url=server.openai_url, max_retries=0)

    def complete_fn(prompt: str) -> Any:
        answer = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
        return JudgeResponse(
            text=answer.choices[0].message.content or "",
            input_tokens=answer.usage.prompt_tokens,
            output_tokens=answer.usage.completion_tokens,
            cost_usd=0.001,
            model="gpt-4o-mini",
            provider="openai",
        )

    return complete_fn


# -- README: "Judge reliability and live resilience (0.9.0)" ----------------------------------


def test_factuality_with_retry_and_samples_records_cost_tokens_and_agreement(
    judge_server: JudgeServer,
) -> None:
    judge_server.script(status(503), text("A"), text("Verdict: A"), text("(B) adds detail"))
    complete_fn = asking(judge_server)

    # README, as written (only the import changed):
    from tooltrail import FACTUALITY, JudgeResponse, LLMRubricEvaluator, RetryPolicy  # noqa: F401

    judge = LLMRubricEvaluator(
        "factuality",
        FACTUALITY,
        complete_fn,  # may return JudgeResponse(text=..., cost_usd=...)
        retry=RetryPolicy(max_attempts=3, backoff_seconds=0.5),
        samples=3,  # judge three times, report agreement
    )

    from tooltrail import (
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        TestCase,
        TestSuite,
        evaluate_suite,
    )

    registry = EvaluatorRegistry()
    registry.register(judge)
    case = TestCase(
        id="capital",
        name="Capital of France",
        input="What is the capital of France?",
        evaluators=[
            EvaluatorConfig(
                name="factuality", threshold=0.8, config={"reference": "Paris is the capital."}
            )
        ],
    )
    report = evaluate_suite(
        TestSuite(name="qa", version="1", cases=[case]),
        [EvaluationSample(case_id="capital", output="Paris.")],
        registry=registry,
    )
    (score,) = report.cases[0].scores
    # two A's and a B: the mean of 1, 1 and 0.85, passing the threshold of 0.8
    assert score.value == pytest.approx((1 + 1 + 0.85) / 3) and score.passed
    metadata = score.metadata
    assert metadata["judge_status"] == "ok" and metadata["rubric"] == "factuality"
    assert metadata["judge_attempts"] == 4  # the 503, retried, then three samples
    assert metadata["judge_samples"] == 3
    assert metadata["judge_agreement"] == pytest.approx(2 / 3)
    assert metadata["judge_cost_usd"] == pytest.approx(0.003)  # the three answers' reported cost
    assert metadata["judge_input_tokens"] == 300 and metadata["judge_output_tokens"] == 60
    assert metadata["judge_model"] == "openai:gpt-4o-mini"
    assert score.evaluator == "factuality" and score.evaluator_type == "llm_rubric"
    # ... and totalled in summary.judge
    judged = report.summary.judge
    assert judged is not None
    assert (judged.judgements, judged.requests) == (1, 4)
    assert judged.cost_usd == pytest.approx(0.003)
    # the judge was shown the question, the reference and the reply, and the grades
    prompts = [r.prompt for r in judge_server.requests]
    assert all("What is the capital of France?" in p for p in prompts)
    assert all("Paris is the capital." in p and "Paris." in p for p in prompts)
    assert all("A = 1, B = 0.85, C = 0.6, D = 0, E = 0.3" in p for p in prompts)


def test_a_judge_that_fails_every_attempt_is_unavailable_and_never_passes(
    judge_server: JudgeServer,
) -> None:
    """README: "A judge that fails after its retries yields an explicit unavailable score
    that never passes"; "a rubric completion that cannot be parsed ... becomes an unavailable
    score: value 0 and never passing, with the error recorded"."""
    judge_server.script(text("I cannot decide."), text("No idea."))
    from tooltrail import (
        FACTUALITY,
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        LLMRubricEvaluator,
        RetryPolicy,
        TestCase,
        TestSuite,
        evaluate_suite,
    )

    registry = EvaluatorRegistry()
    registry.register(
        LLMRubricEvaluator(
            "factuality", FACTUALITY, asking(judge_server), retry=RetryPolicy(max_attempts=2)
        )
    )
    case = TestCase(id="c", name="c", evaluators=[EvaluatorConfig(name="factuality", threshold=0)])
    report = evaluate_suite(
        TestSuite(name="qa", version="1", cases=[case]),
        [EvaluationSample(case_id="c", output="Paris.")],
        registry=registry,
    )
    (score,) = report.cases[0].scores
    assert (score.value, score.passed, score.error) == (0.0, False, "JudgeUnavailable")
    assert score.metadata["judge_status"] == "unavailable"
    assert score.metadata["judge_attempts"] == 2
    assert "no grade (A, B, C, D, E) stated" in score.metadata["judge_error"]
    assert not report.passed
    assert len(judge_server.requests) == 2


# -- README: "A custom evaluator can mark a check as not applicable" ---------------------------


def test_a_custom_evaluator_that_skips_and_a_score_without_a_metric() -> None:
    from tooltrail import (
        CallableEvaluator,
        EvaluationContext,
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        Score,
        TestCase,
        TestSuite,
        evaluate_suite,
    )

    # README, as written (only the import changed):
    def cites_order_id(context: EvaluationContext) -> Score:
        order_id = context.case.metadata.get("order_id")
        if order_id is None:
            return Score.skip("cites_order_id", "Case has no order id to cite.")
        cited = order_id in context.sample.output
        return Score(
            name="cites_order_id",
            value=float(cited),
            passed=cited,
            explanation=f"Order id {order_id} cited: {cited}.",
        )

    registry = EvaluatorRegistry()
    registry.register(CallableEvaluator("cites_order_id", cites_order_id))
    cited = [EvaluatorConfig(name="cites_order_id")]
    suite = TestSuite(
        name="support",
        version="1",
        cases=[
            TestCase(id="with", name="w", metadata={"order_id": "A-7"}, evaluators=cited),
            TestCase(id="without", name="wo", evaluators=cited),
        ],
    )
    report = evaluate_suite(
        suite,
        [
            EvaluationSample(case_id="with", output="Your order A-7 ships today."),
            EvaluationSample(case_id="without", output="Your order ships today."),
        ],
        registry=registry,
    )
    with_id, without = (row.scores[0] for row in report.cases)
    assert (with_id.metric, with_id.value, with_id.passed) == ("cites_order_id", 1.0, True)
    assert with_id.explanation == "Order id A-7 cited: True."
    # a skipped score never fails the case and stays out of the metrics
    assert without.skipped and not without.failed and report.cases[1].passed
    assert report.summary.metrics["cites_order_id"].total == 1
    assert report.passed


# -- README: "LLM-as-judge" ---------------------------------------------------------------


def test_llm_as_judge_calls_the_judge_with_the_context_and_stamps_the_version() -> None:
    # README, as written (only the import changed):
    from tooltrail import (
        EvaluationContext,
        EvaluatorConfig,
        EvaluatorRegistry,
        LLMJudgeEvaluator,
        Score,
        TestCase,
    )

    def judge(context: EvaluationContext) -> Score:
        # Call whatever model/provider you like here.
        correct = "42" in context.sample.output
        return Score(
            name="answer_quality",
            value=0.95 if correct else 0.1,
            passed=correct,
            explanation="Judged against the rubric in context.config.config.",
        )

    registry = EvaluatorRegistry()
    registry.register(LLMJudgeEvaluator("answer_quality_judge", judge, version="quality-prompt-v2"))

    case = TestCase(
        id="case-1",
        name="Answer quality",
        evaluators=[EvaluatorConfig(name="answer_quality_judge", threshold=0.8)],
    )

    # ... run as the README's TestSuite quickstart runs a suite
    from tooltrail import EvaluationSample, TestSuite, evaluate_suite

    suite = TestSuite(name="support-answers", version="1", cases=[case])
    good = evaluate_suite(suite, [EvaluationSample(case_id="case-1", output="It is 42.")],
                          registry=registry)  # fmt: skip
    bad = evaluate_suite(suite, [EvaluationSample(case_id="case-1", output="About 40.")],
                         registry=registry)  # fmt: skip
    (score,) = good.cases[0].scores
    assert (score.name, score.value, score.passed) == ("answer_quality", 0.95, True)
    assert good.summary.pass_rate == 1.0 and bad.summary.pass_rate == 0.0
    # "Which evaluator produced each score": the registry name and its version
    assert (score.evaluator, score.evaluator_version) == (
        "answer_quality_judge",
        "quality-prompt-v2",
    )
    assert score.metadata["judge_status"] == "ok" and score.metadata["judge_attempts"] == 1
    assert "judge_latency_ms" in score.metadata
    assert good.summary.judge is not None and good.summary.judge.judgements == 1


def test_a_judge_function_that_raises_is_retried_then_unavailable() -> None:
    """README, "Judge cost, retries and agreement": "A judge that raises ... no longer aborts
    the suite. After the last attempt it becomes an unavailable score"."""
    from tooltrail import (
        EvaluationContext,
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        LLMJudgeEvaluator,
        RetryPolicy,
        Score,
        TestCase,
        TestSuite,
        evaluate_suite,
    )

    calls: list[str] = []

    def judge(context: EvaluationContext) -> Score:
        calls.append(context.sample.output)
        raise TimeoutError("provider timed out")

    registry = EvaluatorRegistry()
    registry.register(LLMJudgeEvaluator("quality", judge, retry=RetryPolicy(max_attempts=3)))
    case = TestCase(id="c", name="c", evaluators=[EvaluatorConfig(name="quality", threshold=0)])
    report = evaluate_suite(
        TestSuite(name="s", version="1", cases=[case]),
        [EvaluationSample(case_id="c", output="42")],
        registry=registry,
    )
    (score,) = report.cases[0].scores
    assert (score.value, score.passed) == (0.0, False)
    assert score.metadata["judge_status"] == "unavailable"
    assert score.metadata["judge_error"] == "TimeoutError: provider timed out"
    assert (
        score.explanation
        == "Judge unavailable after 3 attempt(s): TimeoutError: provider timed out."
    )
    assert calls == ["42", "42", "42"]


# -- README: "Built-in scorers" and examples/llm_rubric_judge.py -------------------------------


def test_the_rubric_example_script_grades_a_letter_answer(judge_server: JudgeServer) -> None:
    """examples/llm_rubric_judge.py: ``complete_fn`` answers ``(A) ...``; the script prints
    ``verdict=A  value=1.0  passed=True``."""
    script = RUBRIC_EXAMPLE
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("verdict=A  value=1.0  passed=True")
    shown = done.stdout.split("--- end prompt ---")[0]
    for part in ("What is the capital of France?", "Paris is the capital of France.", "Paris."):
        assert part in shown


def test_factuality_registered_on_the_default_registry(judge_server: JudgeServer) -> None:
    """README, "Built-in scorers": a rubric scorer registered on ``default_registry()``. Run in
    a process of its own: tooltrail's default registry is the process-wide one."""
    judge_server.script(text("C"))
    script = textwrap.dedent(
        """
        import openai
        from tooltrail import FACTUALITY, LLMRubricEvaluator, default_registry
        from tooltrail import EvaluationSample, EvaluatorConfig, TestCase, TestSuite, evaluate_suite

        client = openai.OpenAI(max_retries=0)

        def call_your_model(prompt):
            answer = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
            )
            return answer.choices[0].message.content

        # README, as written (only the import changed):
        registry = default_registry()
        registry.register(LLMRubricEvaluator("factuality", FACTUALITY, complete_fn=call_your_model))

        case = TestCase(id="c", name="c", input="Capital of France?",
                        evaluators=[EvaluatorConfig(name="factuality", threshold=0.5,
                                                    config={"reference": "Paris."})])
        report = evaluate_suite(TestSuite(name="s", version="1", cases=[case]),
                                [EvaluationSample(case_id="c", output="Paris")], registry=registry)
        score = report.cases[0].scores[0]
        print(score.metadata["verdict"], score.value, score.passed)
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OPENAI_BASE_URL=judge_server.openai_url)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["C", "0.6", "True"]  # C = 0.6, over the threshold of 0.5
    (request,) = judge_server.requests
    assert request.body["model"] == "gpt-4o-mini"


def test_make_rubric_builds_letter_graded_templates(judge_server: JudgeServer) -> None:
    """README: "``make_rubric()`` builds the template -- the prompt, the verdict letters and
    their scores"; "The default scale is pass/fail"."""
    judge_server.script(text("A"), text("Verdict: B"))
    client = openai.OpenAI(base_url=judge_server.openai_url, max_retries=0)

    def call_your_model(prompt: str) -> str:
        answer = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
        return answer.choices[0].message.content or ""

    from tooltrail import EvaluatorRegistry

    registry = EvaluatorRegistry()

    # README, as written (only the import changed):
    from tooltrail import LLMRubricEvaluator, make_rubric

    concise = make_rubric("concise", "The answer is at most two sentences and has no preamble.")

    tone = make_rubric(
        "tone",
        "The reply is courteous and does not blame the reader.",
        levels=[  # best first; scores in [0, 1]
            ("Courteous throughout.", 1.0),
            ("Neutral: neither courteous nor rude.", 0.5),
            ("Rude, dismissive, or blames the reader.", 0.0),
        ],
    )

    registry.register(LLMRubricEvaluator("concise", concise, complete_fn=call_your_model))
    registry.register(LLMRubricEvaluator("tone", tone, complete_fn=call_your_model))

    from tooltrail import EvaluationSample, EvaluatorConfig, TestCase, TestSuite, evaluate_suite

    evaluators = [EvaluatorConfig(name="concise"), EvaluatorConfig(name="tone", threshold=0.5)]
    case = TestCase(id="c", name="c", evaluators=evaluators)
    report = evaluate_suite(
        TestSuite(name="s", version="1", cases=[case]),
        [EvaluationSample(case_id="c", output="Sure, here you go.")],
        registry=registry,
    )
    first, second = report.cases[0].scores
    assert (first.name, first.value, first.passed, first.metadata["verdict"]) == (
        "concise", 1.0, True, "A",
    )  # fmt: skip
    assert (second.name, second.value, second.passed, second.metadata["verdict"]) == (
        "tone", 0.5, True, "B",
    )  # fmt: skip
    concise_prompt, tone_prompt = (r.prompt for r in judge_server.requests)
    assert "A = 1, B = 0." in concise_prompt  # pass/fail by default
    assert "(B) Neutral: neither courteous nor rude." in tone_prompt
    assert "A = 1, B = 0.5, C = 0." in tone_prompt


def test_with_reference_shows_the_configured_reference(judge_server: JudgeServer) -> None:
    """README: "Pass ``with_reference=True`` to show the judge a reference next to the output;
    it is read from ``EvaluatorConfig.config["reference"]``"."""
    from tooltrail import (
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        LLMRubricEvaluator,
        TestCase,
        TestSuite,
        evaluate_suite,
        make_rubric,
    )

    judge_server.script(text("A"))
    same = make_rubric("same_total", "The answer states the same total.", with_reference=True)
    registry = EvaluatorRegistry()
    registry.register(LLMRubricEvaluator("same_total", same, asking(judge_server)))
    config = {"reference": "The combined total is 42."}
    case = TestCase(
        id="c", name="c", evaluators=[EvaluatorConfig(name="same_total", config=config)]
    )
    report = evaluate_suite(
        TestSuite(name="s", version="1", cases=[case]),
        [EvaluationSample(case_id="c", output="42 in all.")],
        registry=registry,
    )
    assert report.cases[0].scores[0].passed
    assert "Reference: The combined total is 42." in judge_server.requests[0].prompt


def test_a_named_template_is_resolved_not_taken_as_rubric_text(judge_server: JudgeServer) -> None:
    """``"factuality"`` names the template (its grades), in an evaluator and in a suite's
    ``llm_judge`` config alike."""
    from tooltrail import (
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        LLMRubricEvaluator,
        TestCase,
        TestSuite,
        evaluate_suite,
    )

    judge_server.script(text("B"))
    registry = EvaluatorRegistry()
    registry.register(LLMRubricEvaluator("facts", "factuality", asking(judge_server)))
    case = TestCase(id="c", name="c", evaluators=[EvaluatorConfig(name="facts", threshold=0.8)])
    report = evaluate_suite(
        TestSuite(name="s", version="1", cases=[case]),
        [EvaluationSample(case_id="c", output="Paris, on the Seine.")],
        registry=registry,
    )
    (score,) = report.cases[0].scores
    assert (score.value, score.passed) == (0.85, True)
    assert score.explanation.startswith("Judge failed the reply (factuality): ")  # B is not A
    assert "A = 1, B = 0.85" in judge_server.requests[0].prompt

    from tooltrail.checks.rubrics import resolve_rubric

    label, rubric = resolve_rubric("factuality")
    assert label == "factuality" and rubric != "factuality" and "E = 0.3" in rubric


def test_judge_response_is_agentic_evals_shape() -> None:
    from tooltrail import JudgeResponse

    response = JudgeResponse(text="A", input_tokens=812, output_tokens=3, cost_usd=0.0002)
    assert response.usage_metadata() == {
        "judge_input_tokens": 812,
        "judge_output_tokens": 3,
        "judge_cost_usd": 0.0002,
        "judge_cost_source": "estimated",
    }
    with pytest.raises(ValueError, match="input_tokens"):
        JudgeResponse(text="A", input_tokens=-1)


# -- README: "aevaluate_suite ... await async def evaluators" --------------------------------


def test_aevaluate_suite_awaits_an_async_judge_on_the_callers_loop(
    judge_server: JudgeServer,
) -> None:
    judge_server.script(verdict(True, 0.9, "Cites the total."), verdict(False, 0.2, "No total."))
    from tooltrail import (
        EvaluationContext,
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        LLMJudgeEvaluator,
        Score,
        TestCase,
        TestSuite,
        aevaluate_suite,
    )

    async def main() -> Any:
        client = openai.AsyncOpenAI(base_url=judge_server.openai_url, max_retries=0)
        loop = asyncio.get_running_loop()
        loops: list[bool] = []

        async def judge(context: EvaluationContext) -> Score:
            loops.append(asyncio.get_running_loop() is loop)
            answer = await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": f"Judge: {context.sample.output}"}],
            )
            found = json.loads(answer.choices[0].message.content or "{}")
            return Score(
                name="quality",
                value=found["score"],
                passed=found["passed"],
                explanation=found["reasoning"],
            )

        registry = EvaluatorRegistry()
        registry.register(LLMJudgeEvaluator("quality", judge))
        case = TestCase(
            id="c", name="c", evaluators=[EvaluatorConfig(name="quality", threshold=0.5)]
        )
        suite = TestSuite(name="s", version="1", cases=[case])
        samples = [
            EvaluationSample(case_id="c", output="The total is 42."),
            EvaluationSample(case_id="c", output="I don't know."),
        ]
        report = await aevaluate_suite(suite, samples, registry=registry)
        await client.close()
        return report, loops

    report, loops = asyncio.run(main())
    assert [row.scores[0].passed for row in report.cases] == [True, False]
    assert [row.scores[0].explanation for row in report.cases] == ["Cites the total.", "No total."]
    assert loops == [True, True]  # awaited on the caller's loop, where its client belongs
    assert [r.prompt for r in judge_server.requests] == [
        "Judge: The total is 42.",
        "Judge: I don't know.",
    ]


def test_an_async_judge_also_runs_under_the_synchronous_evaluate_suite() -> None:
    from tooltrail import (
        EvaluationContext,
        EvaluationSample,
        EvaluatorConfig,
        EvaluatorRegistry,
        LLMJudgeEvaluator,
        Score,
        TestCase,
        TestSuite,
        evaluate_suite,
    )

    async def judge(context: EvaluationContext) -> Score:
        await asyncio.sleep(0)
        return Score(name="q", value=1.0, passed=True, explanation="ok")

    registry = EvaluatorRegistry()
    registry.register(LLMJudgeEvaluator("q", judge, samples=2))
    case = TestCase(id="c", name="c", evaluators=[EvaluatorConfig(name="q")])
    report = evaluate_suite(
        TestSuite(name="s", version="1", cases=[case]),
        [EvaluationSample(case_id="c", output="x")],
        registry=registry,
    )
    (score,) = report.cases[0].scores
    assert score.passed and score.metadata["judge_agreement"] == 1.0
    assert score.explanation == "2 of 2 samples agreed on 1.0 (agreement 100%): ok"


# -- examples/judge/migrate_agentic_evals.py ---------------------------------------------------


def test_the_migration_example_runs_against_a_model_server(judge_server: JudgeServer) -> None:
    judge_server.script(text("A"), text("(A) The booking is the one asked for."), text("D"))
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OPENAI_BASE_URL=judge_server.openai_url)
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "judge" / "migrate_agentic_evals.py")],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["sample", "factuality", "1.00", "PASS"]
    assert lines[1].split() == ["sample", "cites_the_time", "1.00", "PASS"]
    graded = [line.split()[1:4] for line in lines[2:6]]
    assert graded == [
        ["factuality", "1.00", "PASS"],
        ["cites_the_time", "1.00", "PASS"],
        ["factuality", "0.00", "FAIL"],  # the run that booked 7am, graded D
        ["cites_the_time", "1.00", "PASS"],
    ]
    assert lines[6].startswith("judge: 4 judgements")
    # the recorded runs' tool calls and results reached the judge, the card number did not
    run_prompts = [r.prompt for r in judge_server.requests[1:]]
    assert all("book_slot" in p for p in run_prompts)
    assert not any("4111" in r.text for r in judge_server.requests)


def test_a_score_with_agentic_evals_fields_survives_pickling_and_json() -> None:
    import pickle

    from tooltrail import Score

    score = Score(
        name="q", value=0.5, passed=False, explanation="half", metadata={"verdict": "C"},
        evaluator="q", evaluator_type="llm_rubric", evaluator_version="v3",
    )  # fmt: skip
    assert score.metric == "q"
    assert pickle.loads(pickle.dumps(score)) == score
    assert Score.from_dict(json.loads(json.dumps(score.to_dict()))) == score
    plain = Score.passing("required_tool:a", "required_tool", "Required tool 'a' was called.")
    assert "metadata" not in plain.to_dict() and "evaluator" not in plain.to_dict()
    with pytest.raises(TypeError, match="missing required argument"):
        Score(name="q", value=1.0)


def test_an_evaluator_is_awaited_with_aevaluate_on_a_context() -> None:
    """agentic-evals' evaluators have ``evaluate(context)`` and ``aevaluate(context)``."""
    from tooltrail import (
        EvalTrace,
        EvaluationContext,
        EvaluationSample,
        EvaluatorConfig,
        LLMJudgeEvaluator,
        RetryPolicy,
        Score,
        TestCase,
    )

    attempts: list[int] = []

    async def judge(context: EvaluationContext) -> Score:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        cited = context.case.metadata["order"] in context.sample.output
        return Score(name="cites", value=float(cited), passed=cited, explanation="checked")

    evaluator = LLMJudgeEvaluator("cites", judge, retry=RetryPolicy(max_attempts=2))
    config = EvaluatorConfig(name="cites", threshold=0.5)
    case = TestCase(id="c", name="c", metadata={"order": "A-7"}, evaluators=[config])
    context = EvaluationContext(
        case=case,
        sample=EvaluationSample(case_id="c", output="Order A-7 ships.", trace=EvalTrace()),
        config=config,
    )
    (score,) = asyncio.run(evaluator.aevaluate(context))
    assert (score.passed, score.metadata["judge_attempts"]) == (True, 2)
    assert score.evaluator == "cites" and score.evaluator_type == "llm_judge"
    (again,) = evaluator.evaluate(context)
    assert again.passed and again.metadata["judge_attempts"] == 1
