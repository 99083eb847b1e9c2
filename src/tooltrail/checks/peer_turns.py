"""pytest-agent-eval's deterministic evaluators, as tooltrail checks of a turn's ``Expect``.

``ContainsEvaluator`` (substrings and regular expressions over the reply),
``ToolCallEvaluator`` (tools called, not called, in order) and ``ToolCallArgsEvaluator`` (a
call's arguments, subset or exact) take pytest-agent-eval's constructor arguments. In a turn's
``Expect(evaluators=[...])`` they judge that turn; awaited on a ``TurnContext`` they answer an
``EvalResult`` (``checks.peer_protocol``). The tool checks are the ``Expect`` fields' own
(``tool_calls_include``, ``tool_calls_exclude``, ``tool_calls_ordered``, ``tool_calls_args``:
``checks.turns``), so their scores, texts and argument equality are tooltrail's.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tooltrail.checks.peer_protocol import EvalResult, TurnContext, awaited_result
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.score import Score
from tooltrail.checks.turns import TurnArgs, TurnExcludes, TurnIncludes, TurnOrdered


def _turn_reply(ctx: CheckContext) -> str:
    """The reply of the context's turn (the trace's reply for the last turn), else ``""``."""
    number = ctx.turn
    if number is not None:
        for record in ctx.trace.turns:
            if record.number == number and record.reply is not None:
                return record.reply
        last = max(
            [t.number for t in ctx.trace.turns] + [c.turn for c in ctx.trace.tool_calls] + [1]
        )
        if number != last:
            return ""
    output = ctx.output
    return "" if output is None else output if isinstance(output, str) else str(output)


@dataclass
class ContainsEvaluator:
    """The reply contains substrings and matches regular expressions (``re.search``), case
    ignored unless ``case_sensitive``: one of ``any_of``, every one of ``all_of``, one of
    ``matches_any``, every one of ``matches_all``. A pattern that does not compile is a
    ``ValueError`` when the evaluator is made. One score, ``turn{n}:reply_contains``."""

    any_of: list[str] = field(default_factory=list)
    all_of: list[str] = field(default_factory=list)
    matches_any: list[str] = field(default_factory=list)
    matches_all: list[str] = field(default_factory=list)
    case_sensitive: bool = False

    #: It reads the reply (``score.needs``: ``reads_content``).
    reads_content: ClassVar[bool] = True

    def __post_init__(self) -> None:
        flags = 0 if self.case_sensitive else re.IGNORECASE
        for key in ("any_of", "all_of", "matches_any", "matches_all"):
            value = getattr(self, key)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise ValueError(
                    f"ContainsEvaluator {key} must be a list of strings, not {value!r}"
                )
        try:
            self._any = [re.compile(p, flags) for p in self.matches_any]
            self._all = [re.compile(p, flags) for p in self.matches_all]
        except re.error as exc:
            raise ValueError(
                f"ContainsEvaluator: pattern {exc.pattern!r} does not compile: {exc}"
            ) from None

    def evaluate(self, ctx: CheckContext | TurnContext) -> Score | Awaitable[EvalResult]:
        if isinstance(ctx, TurnContext):
            return awaited_result(self.evaluate, ctx)
        name = f"turn{ctx.turn}:reply_contains" if ctx.turn is not None else "reply_contains"
        reply = _turn_reply(ctx)
        fold = (lambda s: s) if self.case_sensitive else str.casefold
        text, turn = fold(reply), ctx.turn
        # The first unmet requirement fails the score, as pytest-agent-eval reports it.
        if self.any_of and not any(fold(s) in text for s in self.any_of):
            return Score.failing(
                name, "reply_contains", f"The reply contains none of {self.any_of!r}.", turn=turn
            )
        missing = [s for s in self.all_of if fold(s) not in text]
        if missing:
            return Score.failing(name, "reply_contains", f"The reply lacks {missing!r}.", turn=turn)
        if self._any and not any(p.search(reply) for p in self._any):
            return Score.failing(
                name,
                "reply_contains",
                f"The reply matches none of {self.matches_any!r}.",
                turn=turn,
            )
        unmatched = [p.pattern for p in self._all if not p.search(reply)]
        if unmatched:
            return Score.failing(
                name, "reply_contains", f"The reply does not match {unmatched!r}.", turn=turn
            )
        return Score.passing(
            name, "reply_contains", "The reply has every text and pattern asked for.", turn=turn
        )


@dataclass
class ToolCallEvaluator:
    """Tools the turn called (``must_include``; in that order with ``ordered``) and did not
    (``must_exclude``): the checks of ``Expect(tool_calls_include=..., tool_calls_exclude=...,
    tool_calls_ordered=...)``, one score per tool and one for the order."""

    must_include: list[str] = field(default_factory=list)
    must_exclude: list[str] = field(default_factory=list)
    ordered: bool = False

    def evaluate(self, ctx: CheckContext | TurnContext) -> list[Score] | Awaitable[EvalResult]:
        if isinstance(ctx, TurnContext):
            return awaited_result(self.evaluate, ctx)
        checks: list[Any] = [TurnIncludes(tool) for tool in self.must_include]
        checks += [TurnExcludes(tool) for tool in self.must_exclude]
        if self.ordered and self.must_include:
            checks.append(TurnOrdered(list(self.must_include)))
        return [check.evaluate(ctx) for check in checks]


@dataclass
class ToolCallArgsEvaluator:
    """A call of ``tool`` in the turn had ``args``: ``mode="subset"`` (those top-level keys
    with equal values) or ``"exact"`` (equal arguments); any call may match. The check of an
    ``Expect(tool_calls_args=[...])`` entry."""

    tool: str
    args: dict[str, Any]
    mode: str = "subset"

    def __post_init__(self) -> None:
        if self.mode not in ("subset", "exact"):
            raise ValueError(
                f"ToolCallArgsEvaluator mode must be 'subset' or 'exact', not {self.mode!r}"
            )
        if not isinstance(self.args, dict):
            raise ValueError(f"ToolCallArgsEvaluator args must be a mapping, not {self.args!r}")

    def evaluate(self, ctx: CheckContext | TurnContext) -> Score | Awaitable[EvalResult]:
        if isinstance(ctx, TurnContext):
            return awaited_result(self.evaluate, ctx)
        return TurnArgs(self.tool, self.args, self.mode).evaluate(ctx)  # type: ignore[arg-type]
