"""pytest-agent-eval's evaluator protocol: ``async def evaluate(ctx: TurnContext) ->
EvalResult``, beside tooltrail's ``evaluate(ctx: CheckContext) -> Score``.

A turn's ``Expect(evaluators=[...])`` takes both. An evaluator whose ``evaluate`` is a
coroutine function is pytest-agent-eval's: :func:`turn_check` makes it a check that builds the
turn's :class:`TurnContext` (the user's message, the reply, the turn's tool calls as names that
carry their arguments, the conversation before the reply in OpenAI's message format), awaits
it (``checks.peer_async``) and turns its ``EvalResult`` into a score named
``turn{n}:{evaluator}``. The other way round, tooltrail's peer evaluator classes (``Contains
Evaluator``, ``JudgeEvaluator``, ...) awaited on a ``TurnContext`` answer an ``EvalResult``
(:func:`awaited_result`), as pytest-agent-eval's own do.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tooltrail.checks.peer_async import resolved
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.score import Score
from tooltrail.checks.view import CallView
from tooltrail.model import EvalTrace, ToolCall, Turn


@dataclass
class EvalResult:
    """One evaluator's verdict on one turn (pytest-agent-eval's shape)."""

    passed: bool
    reasoning: str = ""


class CalledTool(str):
    """A tool's name that carries the arguments it was called with (pytest-agent-eval's
    ``ToolCall``): compares as the name (``"book_slot" in ctx.tool_calls``); ``args`` is
    ``None`` when they were not recorded."""

    args: dict[str, Any] | None

    def __new__(cls, name: str, args: dict[str, Any] | None = None) -> CalledTool:
        called = super().__new__(cls, name)
        called.args = args
        return called

    @property
    def name(self) -> str:
        return str(self)


@dataclass
class TurnContext:
    """What a pytest-agent-eval evaluator sees of one turn: the user's message, the reply,
    the turn's tool calls, and the history (OpenAI-format messages up to, not including,
    this turn's reply)."""

    user: str
    reply: str
    tool_calls: list[Any] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)


def turn_context_of(ctx: CheckContext) -> TurnContext:
    """The ``TurnContext`` of a tooltrail check context (a turn's, else the trace's last)."""
    turns = sorted(ctx.trace.turns, key=lambda t: t.number)
    last = max([t.number for t in turns] + [c.turn for c in ctx.trace.tool_calls] + [1])
    number = ctx.turn if ctx.turn is not None else last
    history: list[dict[str, Any]] = []
    for record in turns:
        if record.number >= number:
            break
        if record.input is not None:
            history.append({"role": "user", "content": record.input})
        if record.reply is not None:
            history.append({"role": "assistant", "content": record.reply})
    this = next((t for t in turns if t.number == number), None)
    user = this.input if this is not None and this.input is not None else ""
    reply = this.reply if this is not None else None
    if reply is None and number == last and ctx.output is not None:
        reply = ctx.output if isinstance(ctx.output, str) else str(ctx.output)
    history.append({"role": "user", "content": user})
    calls = [CalledTool(call.name, call.args) for call in ctx.view.calls]
    return TurnContext(user=user, reply=reply or "", tool_calls=calls, history=history)


def check_context_of(turn: TurnContext) -> CheckContext:
    """A tooltrail check context for a ``TurnContext``: its history as the earlier turns,
    the user's message, calls and reply as the last."""
    turns: list[Turn] = []
    for message in turn.history:
        role, content = message.get("role"), message.get("content")
        text = content if isinstance(content, str) else None
        if role == "user":
            turns.append(Turn(len(turns) + 1, input=text))
        elif role == "assistant" and turns:
            turns[-1].reply = text
    if not turns or turns[-1].reply is not None or turns[-1].input != turn.user:
        turns.append(Turn(len(turns) + 1, input=turn.user))
    number = turns[-1].number
    turns[-1].reply = turn.reply
    calls = [
        ToolCall(name=str(c), args=getattr(c, "args", None), turn=number, source="returned")
        for c in turn.tool_calls
    ]
    trace = EvalTrace(trace_id="", output=turn.reply, tool_calls=calls, turns=turns)
    return CheckContext(
        trace=trace, view=CallView(calls).turn(number), output=turn.reply, turn=number
    )


def awaited_result(
    evaluate: Callable[[CheckContext], Any], turn: TurnContext
) -> Awaitable[EvalResult]:
    """``evaluate`` on ``turn`` as pytest-agent-eval awaits an evaluator: an ``EvalResult``
    (passed when every score passes; the explanations as the reasoning), computed on a worker
    thread (a judge's request blocks)."""

    async def result() -> EvalResult:
        outcome = await asyncio.to_thread(evaluate, check_context_of(turn))
        scores = outcome if isinstance(outcome, list) else [outcome]
        return EvalResult(
            passed=all(s.passed for s in scores),
            reasoning="\n".join(s.explanation for s in scores),
        )

    return result()


def evaluator_label(evaluator: Any) -> str:
    """What a turn's evaluator is called: its ``name``, else its class."""
    name = getattr(evaluator, "name", None)
    return name if isinstance(name, str) and name else type(evaluator).__name__


def turn_check(evaluator: Any) -> Any:
    """``evaluator`` as a check of a turn's ``Expect``: pytest-agent-eval's (an ``async def
    evaluate``) wrapped in :class:`TurnEvaluatorCheck`, any other as it is."""
    if inspect.iscoroutinefunction(getattr(evaluator, "evaluate", None)):
        return TurnEvaluatorCheck(evaluator)
    return evaluator


@dataclass(frozen=True, slots=True)
class TurnEvaluatorCheck:
    """A pytest-agent-eval evaluator as a tooltrail check (see the module)."""

    evaluator: Any

    #: It reads the turn's message and reply (``score.needs``: ``reads_content``).
    reads_content: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> Score:
        label = evaluator_label(self.evaluator)
        name = f"turn{ctx.turn}:{label}" if ctx.turn is not None else label
        result = resolved(self.evaluator.evaluate(turn_context_of(ctx)))
        passed = getattr(result, "passed", None)
        if not isinstance(passed, bool):
            return Score.failing(
                name, label, f"Evaluator {label!r} returned {type(result).__name__}, not an "
                "EvalResult.", error="TypeError", turn=ctx.turn,
            )  # fmt: skip
        reasoning = getattr(result, "reasoning", "")
        text = (
            reasoning
            if isinstance(reasoning, str) and reasoning
            else (f"Evaluator {label!r} {'passed' if passed else 'failed'} the turn.")
        )
        return Score(name, label, 1.0 if passed else 0.0, passed, text, turn=ctx.turn)
