"""pytest-agent-eval evaluators, moved to tooltrail by changing their import.

Before, with pytest-agent-eval 0.3 (and pytest-asyncio)::

    from pytest_agent_eval import (ContainsEvaluator, EvalResult, Expect, JudgeEvaluator,
                                   ToolCallEvaluator, Turn, TurnContext)

    @pytest.mark.agent_eval(threshold=0.8, runs=3)
    async def test_booking(agent_eval):
        result = await agent_eval.run(agent=booking_agent, turns=TURNS)
        result.assert_threshold()

After: the same names ``from tooltrail import ...``, the same ``Turn``/``Expect``/evaluators
and the custom evaluator unchanged. What changes is the runner: tooltrail's ``trail``
fixture runs the agent (``trail.run_turns``, which fails the test below the threshold) and the
agent takes the user's message (tooltrail keeps the conversation), returning its reply and
calls. The judge model is ``[tool.agent_eval] model`` of ``pyproject.toml``, asked through
the OpenAI SDK: set ``OPENAI_API_KEY`` (and ``OPENAI_BASE_URL`` for a compatible server), then
run ``python -m pytest`` here. Unlike pytest-agent-eval, the tests are not skipped without
``--agent-eval-live``: tooltrail runs what it collects.
"""

from __future__ import annotations

import asyncio

import pytest

from tooltrail import (
    ContainsEvaluator,
    EvalResult,
    Expect,
    JudgeEvaluator,
    ToolCallEvaluator,
    Turn,
    TurnContext,
)


class PoliteEvaluator:
    """A custom evaluator of pytest-agent-eval's protocol: async, a TurnContext in, an
    EvalResult out."""

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        await asyncio.sleep(0)
        rude = any(word in ctx.reply.lower() for word in ("obviously", "as i said"))
        return EvalResult(passed=not rude, reasoning="rude" if rude else "polite")


TURNS = [
    Turn(
        user="Book me a slot tomorrow at 10am",
        expect=Expect(
            evaluators=[
                ContainsEvaluator(any_of=["confirmed", "booked"]),
                ToolCallEvaluator(must_include=["create_booking"]),
                JudgeEvaluator(rubric="Reply must include a reference number."),
                PoliteEvaluator(),
            ]
        ),
    ),
    Turn(
        user="Can you send me a confirmation email?",
        expect=Expect(
            evaluators=[
                ToolCallEvaluator(must_include=["send_email"], must_exclude=["create_booking"])
            ]
        ),
    ),
]


async def booking_agent(user: str) -> dict:
    """The agent under test (scripted here): the user's message in, its reply and calls out."""
    if "email" in user:
        return {"output": "Sent!", "tool_calls": [{"name": "send_email", "args": {}}]}
    call = {"name": "create_booking", "args": {"date": "tomorrow", "time": "10am"}}
    return {
        "output": "Booking confirmed! Reference BK-1234, tomorrow at 10am.",
        "tool_calls": [call],
    }


@pytest.mark.tooltrail(threshold=0.8, runs=3)
def test_booking(trail):
    result = trail.run_turns(booking_agent, TURNS)
    assert result.passed_runs == 3
