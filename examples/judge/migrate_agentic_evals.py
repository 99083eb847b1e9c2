"""agentic-evals judge code, moved to tooltrail by changing its import, then run on recorded runs.

Before, with agentic-evals 0.9::

    from agentic_evals import (FACTUALITY, EvaluationContext, EvaluationSample, EvaluatorConfig,
                               EvaluatorRegistry, JudgeResponse, LLMJudgeEvaluator,
                               LLMRubricEvaluator, RetryPolicy, Score, TestCase, TestSuite,
                               evaluate_suite)

After: the same names ``from tooltrail import ...``; nothing else in the first half changes.
The second half is what tooltrail adds: the same registry over the agent's recorded OTLP runs
(``runs.otlp.jsonl``), where the judge sees the calls and tool results, not only the reply.

The judge model is asked through the OpenAI SDK: set ``OPENAI_API_KEY`` (and
``OPENAI_BASE_URL`` for an OpenAI-compatible server). Run::

    python examples/judge/migrate_agentic_evals.py
"""

from __future__ import annotations

from pathlib import Path

import openai

from tooltrail import (
    FACTUALITY,
    EvaluationContext,
    EvaluationSample,
    EvaluatorConfig,
    EvaluatorRegistry,
    JudgeResponse,
    LLMJudgeEvaluator,
    LLMRubricEvaluator,
    RetryPolicy,
    Score,
    TestCase,
    TestSuite,
    evaluate_suite,
)

client = openai.OpenAI(max_retries=0)


def complete_fn(prompt: str) -> JudgeResponse:
    """agentic-evals never calls a model itself: this is the caller's model call."""
    answer = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
    )
    usage = answer.usage
    return JudgeResponse(
        text=answer.choices[0].message.content or "",
        input_tokens=usage.prompt_tokens if usage else None,
        output_tokens=usage.completion_tokens if usage else None,
        model="gpt-4o-mini",
        provider="openai",
    )


def cites_the_time(context: EvaluationContext) -> Score:
    """A judge function of the evaluation context, as agentic-evals' LLMJudgeEvaluator takes."""
    wanted = context.case.metadata.get("time")
    if wanted is None:
        return Score.skip("cites_the_time", "Case names no time.")
    cited = wanted in context.sample.output
    return Score(
        name="cites_the_time",
        value=1.0 if cited else 0.0,
        passed=cited,
        explanation=f"The reply {'names' if cited else 'does not name'} {wanted}.",
    )


registry = EvaluatorRegistry()
registry.register(
    LLMRubricEvaluator(
        "factuality", FACTUALITY, complete_fn, retry=RetryPolicy(max_attempts=3), samples=1
    )
)
registry.register(LLMJudgeEvaluator("cites_the_time", cites_the_time, version="v1"))

suite = TestSuite(
    name="booking-migrated",
    version="1",
    cases=[
        TestCase(
            id="booking",
            name="Books the slot the user asked for",
            input="Book me the 10am slot tomorrow.",
            metadata={"time": "10am"},
            evaluators=[
                EvaluatorConfig(
                    name="factuality",
                    threshold=0.6,
                    config={"reference": "The 10am slot tomorrow is booked."},
                ),
                EvaluatorConfig(name="cites_the_time"),
            ],
        )
    ],
)


def main() -> None:
    # agentic-evals' way: a sample holds the reply
    report = evaluate_suite(
        suite, [EvaluationSample(case_id="booking", output="Booked: tomorrow, 10am.")],
        registry=registry,
    )  # fmt: skip
    for score in report.cases[0].scores:
        print(f"sample    {score.name:15} {score.value:.2f} {'PASS' if score.passed else 'FAIL'}")

    # tooltrail's addition: the recorded runs themselves, each reply with its calls and results
    from tooltrail.convert import read_traces

    runs = Path(__file__).with_name("runs.otlp.jsonl")
    samples = [
        EvaluationSample(case_id="booking", trace=trace, label=trace.trace_id[:8])
        for trace in read_traces(runs, content=True)
    ]
    report = evaluate_suite(suite, samples, registry=registry)
    for row in report.cases:
        for score in row.scores:
            verdict = "PASS" if score.passed else "FAIL"
            print(f"{row.label:9} {score.name:15} {score.value:.2f} {verdict}  {score.explanation}")
    if report.summary.judge is not None:
        print(report.summary.judge.line())


if __name__ == "__main__":
    main()
