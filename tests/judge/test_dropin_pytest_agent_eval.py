"""pytest-agent-eval 0.3's documented evaluator and judge examples, run with only the import
changed.

Each test holds the code of one example of pytest-agent-eval's README and docs pages
(``docs/evaluators.md``, ``docs/python-api.md``, ``docs/configuration.md``) that touches
evaluators, turn contexts, results or the judge, with ``from pytest_agent_eval import ...``
changed to ``from tooltrail import ...``, and asserts the result pytest-agent-eval documents.
A judge model named by a string (``"openai:gpt-4o"``, or ``[tool.agent_eval] model``) is asked
through the real ``openai`` SDK, at the scripted server on loopback (tests/judge_server.py)
that ``OPENAI_BASE_URL`` points at. The turn runs through tooltrail's evaluation
(``evaluate_trace`` on a trace of the conversation), since the ``agent_eval`` fixture is
pytest-agent-eval's runner, not part of the evaluators (docs/judge.md lists it).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from judge_server import JudgeServer, judge_server_fixture, status, text, verdict  # noqa: F401

from tooltrail import EvalTrace, TestCase, ToolCall, evaluate_trace
from tooltrail.model import Turn as Recorded


def booking(
    reply: str, *calls: ToolCall, user: str = "Book me a slot tomorrow at 10am"
) -> EvalTrace:
    """One turn of a booking agent: the user's message, its calls and its reply."""
    for call in calls:
        call.turn = 1
    return EvalTrace(
        trace_id="t1", output=reply, tool_calls=list(calls), turns=[Recorded(1, user, reply)]
    )


def outcome(turn: Any, trace: EvalTrace) -> list[tuple[str, bool]]:
    result = evaluate_trace(TestCase(id="booking", turns=[turn]), trace)
    return [(score.name, score.passed) for score in result.scores]


@pytest.fixture
def openai_at(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    """``OPENAI_BASE_URL`` at the scripted server, as a user's shell would set it."""
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    return judge_server


# -- docs/evaluators.md: ContainsEvaluator ----------------------------------------------------


def test_contains_evaluator_examples() -> None:
    from tooltrail import ContainsEvaluator, Expect, Turn

    reply = booking("Booking confirmed! Your reference number: BK-1234 for tomorrow at 10am.")
    passing = [
        # Pass if reply contains at least one of these
        ContainsEvaluator(any_of=["confirmed", "booked"]),
        # Pass if reply contains ALL of these
        ContainsEvaluator(all_of=["booking", "reference number"]),
        # Regex patterns (evaluated with re.search)
        ContainsEvaluator(matches_any=[r"ref(erence)? number[:# ]*[A-Z]{2}-\d+"]),
        ContainsEvaluator(matches_all=[r"\d{1,2}(am|pm)", r"tomorrow"]),
        # Substring and regex checks compose freely
        ContainsEvaluator(
            any_of=["confirmed", "booked"],
            matches_all=[r"BK-\d+"],
        ),
        # Exact-case matching
        ContainsEvaluator(all_of=["Booking"], case_sensitive=True),
    ]
    for evaluator in passing:
        assert outcome(Turn(user="Book", expect=Expect(evaluators=[evaluator])), reply) == [
            ("turn1:reply_contains", True)
        ], evaluator
    failing = [
        ContainsEvaluator(any_of=["cancelled"]),
        ContainsEvaluator(all_of=["booking", "refund"]),
        ContainsEvaluator(matches_any=[r"REF-\d+"]),
        ContainsEvaluator(all_of=["booking"], case_sensitive=True),
    ]
    for evaluator in failing:
        assert outcome(Turn(user="Book", expect=Expect(evaluators=[evaluator])), reply) == [
            ("turn1:reply_contains", False)
        ], evaluator
    # "Invalid regex patterns raise ValueError at construction time"
    with pytest.raises(ValueError, match="does not compile"):
        ContainsEvaluator(matches_any=["BK-(\\d+"])


# -- docs/evaluators.md: ToolCallEvaluator, ToolCallArgsEvaluator -----------------------------


def test_tool_call_evaluator_examples() -> None:
    from tooltrail import Expect, ToolCallEvaluator, Turn

    calls = booking(
        "Booked.", ToolCall(name="authenticate"), ToolCall(name="fetch_availability"),
        ToolCall(name="create_booking"), ToolCall(name="book_slot"),
    )  # fmt: skip
    # Require a tool and forbid another
    required = ToolCallEvaluator(
        must_include=["book_slot"],
        must_exclude=["cancel_slot"],
    )
    # Enforce call order
    ordered = ToolCallEvaluator(
        must_include=["authenticate", "fetch_availability", "create_booking"],
        ordered=True,
    )
    turn = Turn(user="Book", expect=Expect(evaluators=[required, ordered]))
    assert all(passed for _, passed in outcome(turn, calls))
    backwards = ToolCallEvaluator(must_include=["create_booking", "authenticate"], ordered=True)
    forbidden = ToolCallEvaluator(must_exclude=["book_slot"])
    turn = Turn(user="Book", expect=Expect(evaluators=[backwards, forbidden]))
    assert outcome(turn, calls) == [
        ("turn1:tool_calls_include:create_booking", True),
        ("turn1:tool_calls_include:authenticate", True),
        ("turn1:tool_calls_ordered", False),
        ("turn1:tool_calls_exclude:book_slot", False),
    ]


def test_tool_call_args_evaluator_examples() -> None:
    from tooltrail import Expect, ToolCallArgsEvaluator, Turn

    calls = booking(
        "Booked.",
        ToolCall(name="book_slot", args={"time": "9am", "date": "today"}),
        ToolCall(name="book_slot", args={"time": "10am", "date": "tomorrow", "opts": {"a": 1}}),
    )
    # Subset (default): expected top-level keys/values must appear; extra observed keys are fine
    subset = ToolCallArgsEvaluator(tool="book_slot", args={"time": "10am"})
    # Exact: observed args must equal the expected dict exactly
    exact = ToolCallArgsEvaluator(
        tool="book_slot", args={"time": "10am", "date": "tomorrow"}, mode="exact"
    )
    nested = ToolCallArgsEvaluator(tool="book_slot", args={"opts": {}})  # nested: compared whole
    never = ToolCallArgsEvaluator(tool="cancel_slot", args={"time": "10am"})
    turn = Turn(user="Book", expect=Expect(evaluators=[subset, exact, nested, never]))
    assert outcome(turn, calls) == [
        ("turn1:tool_calls_args:book_slot", True),  # any call may match
        ("turn1:tool_calls_args:book_slot", False),  # the 10am call has an extra key
        ("turn1:tool_calls_args:book_slot", False),
        ("turn1:tool_calls_args:cancel_slot", False),
    ]
    with pytest.raises(ValueError, match="'subset' or 'exact'"):
        ToolCallArgsEvaluator(tool="book_slot", args={}, mode="fuzzy")


# -- docs/evaluators.md: JudgeEvaluator, ToolCallArgsJudgeEvaluator ---------------------------


def test_judge_evaluator_with_a_model_string_asks_that_model(openai_at: JudgeServer) -> None:
    openai_at.script(status(500), verdict(True, 0.9, "Confirms with a reference and a time."))
    from tooltrail import Expect, JudgeEvaluator, Turn

    # docs/evaluators.md, as written (only the import changed):
    judge = JudgeEvaluator(
        rubric=(
            "The reply must confirm the booking, include a reference number, "
            "mention the date and time, and have a friendly professional tone."
        ),
        model="openai:gpt-4o",  # optional; falls back to [tool.agent_eval] model
        retries=2,  # retry API failures
        timeout=30.0,  # per-call timeout in seconds
    )

    reply = "Booking confirmed! Reference BK-1234, tomorrow at 10am. See you then!"
    result = evaluate_trace(
        TestCase(id="b", turns=[Turn(user="Book", expect=Expect(evaluators=[judge]))]),
        booking(reply),
    )
    (score,) = result.scores
    assert (score.name, score.passed, score.value) == ("turn1:llm_judge", True, 0.9)
    assert score.judge is not None and score.judge["attempts"] == 2  # the 500, retried
    first, second = openai_at.requests
    assert first.body["model"] == second.body["model"] == "gpt-4o"
    assert "include a reference number" in second.text and reply in second.text


def test_a_model_that_cannot_be_served_is_a_no_judge_score_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    from tooltrail import Expect, JudgeEvaluator, Turn

    judge = JudgeEvaluator(rubric="Polite.", model="openai:gpt-4o")
    turn = Turn(user="Book", expect=Expect(evaluators=[judge]))
    (score,) = evaluate_trace(TestCase(id="b", turns=[turn]), booking("Done.")).scores
    assert (score.passed, score.error) == (False, "NoJudge")
    assert score.explanation.startswith("Judge model 'openai:gpt-4o' cannot be used: ")
    assert "OPENAI_API_KEY" in score.explanation


def test_tool_call_args_judge_evaluator(
    openai_at: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_at.script(verdict(False, 0.1, "7am is early."), verdict(True, 1.0, "10am."))
    (tmp_path / "pyproject.toml").write_text(
        '[tool.agent_eval]\nmodel = "openai:gpt-4o-mini"\n', encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    from tooltrail import Expect, ToolCallArgsJudgeEvaluator, Turn

    # docs/evaluators.md, as written (only the import changed):
    judge = ToolCallArgsJudgeEvaluator(
        tool="book_slot",
        rubric="The booking time must be within business hours (9am-5pm).",
    )
    no_calls = ToolCallArgsJudgeEvaluator(tool="cancel_slot", rubric="Any reason.")

    calls = booking(
        "Booked 10am.",
        ToolCall(name="book_slot", args={"time": "7am"}),
        ToolCall(name="book_slot", args={"time": "10am"}),
    )
    turn = Turn(user="Book", expect=Expect(evaluators=[judge, no_calls]))
    assert outcome(turn, calls) == [
        ("turn1:tool_args_judge:book_slot", True),  # passes if any call satisfies the rubric
        ("turn1:tool_args_judge:cancel_slot", False),
    ]
    # never-called fails before any LLM call: two requests, both for book_slot
    assert [json.dumps(r.body).count("cancel_slot") for r in openai_at.requests] == [0, 0]
    assert '"time":"7am"' in openai_at.requests[0].text.replace(" ", "")
    assert [r.body["model"] for r in openai_at.requests] == ["gpt-4o-mini"] * 2


def test_without_a_model_the_judge_is_the_one_of_tool_agent_eval(
    openai_at: JudgeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    openai_at.script(status(503), verdict(True, 1.0, "Has a reference number."))
    # docs/configuration.md's "Complete example"
    (tmp_path / "pyproject.toml").write_text(
        """\
[tool.agent_eval]
model     = "openai:gpt-4o"
threshold = 0.8
runs      = 3
retries   = 2
timeout   = 30
yaml_dirs = ["tests/evals"]
live      = false
""",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    from tooltrail import Expect, JudgeConfig, JudgeEvaluator, Turn

    turn = Turn(
        user="Book me a slot tomorrow at 10am",
        expect=Expect(
            evaluators=[JudgeEvaluator(rubric="Reply must include a reference number.")],
            judge=JudgeConfig(rubric="Reply must confirm the booking."),  # YAML's judge:
        ),
    )
    assert outcome(turn, booking("Confirmed, reference BK-1234.")) == [
        ("turn1:llm_judge", True),
        ("turn1:llm_judge", True),
    ]
    assert [r.body["model"] for r in openai_at.requests] == ["gpt-4o"] * 3  # one retried


def test_a_bad_tool_agent_eval_table_is_an_error_naming_file_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agent_eval]\nmodel = 4\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    from tooltrail import Expect, JudgeEvaluator, Turn

    turn = Turn(user="Book", expect=Expect(evaluators=[JudgeEvaluator(rubric="Polite.")]))
    result = evaluate_trace(TestCase(id="b", turns=[turn]), booking("Done."))
    (score,) = result.scores
    assert not score.passed and score.error == "JudgeUnavailable"
    assert f"{tmp_path / 'pyproject.toml'}: [tool.agent_eval] model must be a model string" in (
        score.explanation
    )


# -- docs/evaluators.md: "Writing a custom evaluator" ----------------------------------------


async def compute_sentiment(reply: str) -> float:
    """The example's ``# your own logic``: a stand-in that dislikes one word."""
    await asyncio.sleep(0)
    return 0.1 if "unfortunately" in reply.lower() else 0.9


def test_a_custom_evaluator_of_the_turn_context_protocol() -> None:
    # docs/evaluators.md, as written (only the import changed):
    from tooltrail import EvalResult, TurnContext

    class SentimentEvaluator:
        """Fail if the reply has negative sentiment."""

        def __init__(self, threshold: float = 0.5):
            self.threshold = threshold

        async def evaluate(self, ctx: TurnContext) -> EvalResult:
            # ctx.reply:      the agent's string reply
            # ctx.user:       the user message for this turn
            # ctx.tool_calls: list of tool names called
            # ctx.history:    OpenAI-format message history

            score = await compute_sentiment(ctx.reply)  # your own logic
            passed = score >= self.threshold
            return EvalResult(
                passed=passed,
                reasoning=f"Sentiment score {score:.2f} vs threshold {self.threshold:.2f}",
            )

    from tooltrail import Expect, Turn

    turn = Turn(
        user="How was your experience?",
        expect=Expect(evaluators=[SentimentEvaluator(threshold=0.6)]),
    )
    happy = evaluate_trace(TestCase(id="c", turns=[turn]), booking("Great, thanks!"))
    sad = evaluate_trace(TestCase(id="c", turns=[turn]), booking("Unfortunately, no."))
    assert [(s.name, s.passed, s.explanation) for s in happy.scores] == [
        ("turn1:SentimentEvaluator", True, "Sentiment score 0.90 vs threshold 0.60")
    ]
    assert [(s.passed, s.explanation) for s in sad.scores] == [
        (False, "Sentiment score 0.10 vs threshold 0.60")
    ]


def test_the_turn_context_an_evaluator_sees() -> None:
    from tooltrail import EvalResult, Expect, TurnContext
    from tooltrail import Turn as ConversationTurn

    seen: list[TurnContext] = []

    class Spy:
        async def evaluate(self, ctx: TurnContext) -> EvalResult:
            seen.append(ctx)
            return EvalResult(passed="book_slot" in ctx.tool_calls)

    trace = EvalTrace(
        trace_id="t",
        output="Booked 10am.",
        tool_calls=[ToolCall(name="book_slot", args={"time": "10am"}, turn=2)],
        turns=[
            Recorded(1, "Any slots?", "There is 10am."),
            Recorded(2, "10am please", "Booked 10am."),
        ],
    )
    turns = [
        ConversationTurn(user="Any slots?"),
        ConversationTurn(user="10am please", expect=Expect(evaluators=[Spy()])),
    ]
    result = evaluate_trace(TestCase(id="c", turns=turns), trace)
    assert [(s.name, s.passed) for s in result.scores] == [("turn2:Spy", True)]
    (ctx,) = seen
    assert (ctx.user, ctx.reply) == ("10am please", "Booked 10am.")
    assert ctx.tool_calls == ["book_slot"] and ctx.tool_calls[0].args == {"time": "10am"}
    assert ctx.history == [
        {"role": "user", "content": "Any slots?"},
        {"role": "assistant", "content": "There is 10am."},
        {"role": "user", "content": "10am please"},
    ]


def test_built_in_evaluators_awaited_on_a_turn_context_answer_an_eval_result(
    openai_at: JudgeServer,
) -> None:
    """pytest-agent-eval's evaluators are ``async def evaluate(ctx: TurnContext) ->
    EvalResult``; tooltrail's, awaited the same way, answer the same."""
    openai_at.script(verdict(False, 0.2, "No reference number."))
    from tooltrail import (
        ContainsEvaluator,
        EvalResult,
        JudgeEvaluator,
        ToolCallEvaluator,
        TurnContext,
    )

    ctx = TurnContext(
        user="Book me a slot tomorrow at 10am",
        reply="Booking confirmed for tomorrow at 10am.",
        tool_calls=["create_booking"],
        history=[{"role": "user", "content": "Book me a slot tomorrow at 10am"}],
    )

    async def main() -> list[EvalResult]:
        return list(
            await asyncio.gather(
                ContainsEvaluator(any_of=["confirmed", "booked"]).evaluate(ctx),
                ToolCallEvaluator(must_include=["create_booking"]).evaluate(ctx),
                JudgeEvaluator(
                    rubric="Reply must include a reference number.", model="openai:gpt-4o"
                ).evaluate(ctx),
            )
        )

    contains, tools, judged = asyncio.run(main())
    assert isinstance(contains, EvalResult) and contains.passed
    assert tools.passed
    assert (judged.passed, judged.reasoning) == (
        False,
        "Judge failed the reply (custom): No reference number.",
    )
    (request,) = openai_at.requests
    assert "Booking confirmed for tomorrow at 10am." in request.text


# -- README: "Python API" / docs/python-api.md: the turn's evaluators ------------------------


def test_the_python_api_turn_with_its_three_evaluators(openai_at: JudgeServer) -> None:
    openai_at.script(verdict(True, 1.0, "Has BK-1234 and the time."))
    from tooltrail import ContainsEvaluator, Expect, JudgeEvaluator, ToolCallEvaluator, Turn

    # README's Python API turn, as written (only the import changed), with the judge model of
    # [tool.agent_eval] (here given on the evaluator):
    turns = [
        Turn(
            user="Book me a slot tomorrow at 10am",
            expect=Expect(evaluators=[
                ContainsEvaluator(any_of=["confirmed", "booked"]),
                ToolCallEvaluator(must_include=["create_booking"]),
                JudgeEvaluator(
                    rubric="Reply must include a reference number.", model="openai:gpt-4o"
                ),
            ]),
        )
    ]  # fmt: skip
    reply = "Booking confirmed! Reference: BK-1234 for tomorrow at 10am."
    result = evaluate_trace(
        TestCase(id="booking", turns=turns), booking(reply, ToolCall(name="create_booking"))
    )
    assert [(s.name, s.passed) for s in result.scores] == [
        ("turn1:reply_contains", True),
        ("turn1:tool_calls_include:create_booking", True),
        ("turn1:llm_judge", True),
    ]
    assert result.passed


# -- examples/judge/pytest_agent_eval/ -------------------------------------------------------


def test_the_migration_example_runs_under_pytest(judge_server: JudgeServer) -> None:
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    judge_server.script(verdict(True, 1.0, "Has BK-1234."))
    env = dict(os.environ, PYTHONPATH=str(root / "src"), OPENAI_BASE_URL=judge_server.openai_url)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=root / "examples" / "judge" / "pytest_agent_eval",
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    # the judge model of [tool.agent_eval], through the SDK; the second and third runs' equal
    # prompts are answered by the verdict cache
    assert [r.body["model"] for r in judge_server.requests] == ["gpt-4o-mini"]
    assert "BK-1234" in judge_server.requests[0].text
