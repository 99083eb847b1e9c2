"""Per-turn expectations (pytest-agent-eval's ``Expect``), judged on one turn's calls only
(and, for ``judge``, that turn's reply).

``expect_checks`` compiles one ``Expect`` to check objects; they read the turn number and that
turn's call index from the context. A ``judge`` and a ``tool_calls_args`` entry's ``judge``
compile to the judge checks (``checks.judges``), ``evaluators`` run as given. Score names are
``turn{n}:{check}[:{tool}]`` and metrics the bare check name, so a report rolls
``tool_calls_exclude`` up over every turn while each failure still says which turn it was.
Every failure of a turn is reported, not just the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tooltrail.checks.argmatch import describe, matches
from tooltrail.checks.budgets import TurnMaxLatency
from tooltrail.checks.judges import LlmJudge, ToolArgsJudge
from tooltrail.checks.protocol import Check, CheckContext
from tooltrail.checks.registry import ConfiguredCheck
from tooltrail.checks.score import Score
from tooltrail.equality import args_contain, values_equal
from tooltrail.suite.argrules import CompareArgs
from tooltrail.suite.vocabulary import TURN_TERMS, is_set

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from tooltrail.suite.case import ArgsMode, Expect, ToolCallArgs


def expect_checks(expect: Expect) -> list[Check]:
    """The checks of one turn's ``Expect``, in the order their scores are reported (the
    order of ``suite.vocabulary.TURN_TERMS``)."""
    checks: list[Check] = []
    for key, build in TURN_BUILDERS:
        value = getattr(expect, key)
        if is_set(value):
            checks.extend(build(expect, value))
    return checks


def _turn(ctx: CheckContext) -> int:
    return ctx.turn if ctx.turn is not None else 1


@dataclass(slots=True, frozen=True)
class TurnIncludes:
    """``turn{n}:tool_calls_include:{tool}``: the tool was called in the turn."""

    tool: str

    def evaluate(self, ctx: CheckContext) -> Score:
        tool, view, turn = self.tool, ctx.view, _turn(ctx)
        name = f"turn{turn}:tool_calls_include:{tool}"
        first = view.first(tool)
        if first is not None:
            span_id = view.calls[first].span_id
            return Score.passing(
                name,
                "tool_calls_include",
                f"Tool {tool!r} was called",
                span_ids=(span_id,) if span_id else (),
                turn=turn,
            )
        return Score.failing(
            name, "tool_calls_include", f"Expected tool {tool!r} was not called", turn=turn
        )


@dataclass(slots=True, frozen=True)
class TurnExcludes:
    """``turn{n}:tool_calls_exclude:{tool}``: the tool was not called in the turn."""

    tool: str

    def evaluate(self, ctx: CheckContext) -> Score:
        tool, turn = self.tool, _turn(ctx)
        name = f"turn{turn}:tool_calls_exclude:{tool}"
        calls = ctx.view.calls_of(tool)
        if calls:
            return Score.failing(
                name,
                "tool_calls_exclude",
                f"Forbidden tool {tool!r} was called",
                span_ids=tuple(c.span_id for c in calls if c.span_id),
                turn=turn,
            )
        return Score.passing(
            name, "tool_calls_exclude", f"Forbidden tool {tool!r} was not called", turn=turn
        )


def is_subsequence(needles: list[str], names: list[str]) -> bool:
    """Whether ``needles`` occur in ``names`` in order; each needle consumes one call."""
    it = iter(names)
    return all(any(name == needle for name in it) for needle in needles)


@dataclass(slots=True, frozen=True)
class TurnOrdered:
    """``turn{n}:tool_calls_ordered``: the include list is an ordered subsequence of the calls."""

    tools: list[str]

    def evaluate(self, ctx: CheckContext) -> Score:
        include, turn = self.tools, _turn(ctx)
        names = [call.name for call in ctx.view.calls]
        name = f"turn{turn}:tool_calls_ordered"
        if is_subsequence(include, names):
            return Score.passing(
                name, "tool_calls_ordered", f"Tools {include} were called in order", turn=turn
            )
        return Score.failing(
            name,
            "tool_calls_ordered",
            f"Tools {include} were not called in order; the turn's calls were {names}",
            turn=turn,
        )


@dataclass(slots=True, frozen=True)
class TurnArgs:
    """``turn{n}:tool_calls_args:{tool}``: any call of the tool matches (subset or exact);
    ``compare`` (a tolerance, ignored paths, a nested subset: ``checks.argmatch``) loosens
    how values compare, and the texts' ``({mode})`` names it."""

    tool: str
    args: dict[str, Any]
    mode: ArgsMode = "subset"
    compare: CompareArgs | None = None

    def evaluate(self, ctx: CheckContext) -> Score:
        tool, expected, turn = self.tool, self.args, _turn(ctx)
        compare = self.compare if self.compare is not None and not self.compare.plain else None
        mode = self.mode if compare is None else describe(self.mode, compare)
        name = f"turn{turn}:tool_calls_args:{tool}"
        calls = ctx.view.calls_of(tool)
        if not calls:
            return Score.failing(
                name,
                "tool_calls_args",
                f"Tool {tool!r} was not called, so {expected} ({mode}) could not match",
                turn=turn,
            )
        for call in calls:
            if compare is not None:
                ok = (not expected and self.mode != "exact") or (
                    call.args is not None
                    and matches(
                        expected,
                        call.args,
                        "exact" if self.mode == "exact" else "contains",
                        compare,
                    )
                )
            elif self.mode == "exact":
                ok = call.args is not None and values_equal(expected, call.args)
            else:
                ok = args_contain(expected, call.args)
            if ok:
                return Score.passing(
                    name,
                    "tool_calls_args",
                    f"Tool {tool!r} was called with {expected} ({mode})",
                    span_ids=(call.span_id,) if call.span_id else (),
                    turn=turn,
                )
        return Score.failing(
            name,
            "tool_calls_args",
            f"No call of {tool!r} matched {expected} ({mode}); its calls had "
            f"{[c.args for c in calls]}",
            span_ids=tuple(c.span_id for c in calls if c.span_id),
            turn=turn,
        )


def _tool_call_args_checks(item: ToolCallArgs) -> list[Check]:
    """An entry's argument check (when it has ``args``), then its judge (when it has one)."""
    checks: list[Check] = []
    if item.args is not None:
        compare = item.compare
        checks.append(TurnArgs(item.tool, item.args, item.mode, None if compare.plain else compare))
    judge = item.judge
    if judge is not None:
        checks.append(
            ToolArgsJudge(tool=item.tool, rubric=judge.rubric, model=judge.model, judge=judge.judge)
        )
    return checks


def _evaluator_name(evaluator: Any) -> str:
    """What a turn's evaluator object is called when it fails: its ``name``, else its class."""
    name = getattr(evaluator, "name", None)
    return name if isinstance(name, str) and name else type(evaluator).__name__


#: ``Expect`` key -> the checks a value of it compiles to (``expect``, value) -> checks.
_BUILD: dict[str, Callable[[Expect, Any], Iterable[Check]]] = {
    "tool_calls_include": lambda expect, tools: [TurnIncludes(tool) for tool in tools],
    "tool_calls_exclude": lambda expect, tools: [TurnExcludes(tool) for tool in tools],
    "tool_calls_ordered": lambda expect, ordered: (
        [TurnOrdered(expect.tool_calls_include)] if expect.tool_calls_include else []
    ),
    "tool_calls_args": lambda expect, wanted: [
        check for item in wanted for check in _tool_call_args_checks(item)
    ],
    "max_latency_ms": lambda expect, limit: [TurnMaxLatency(limit)],
    "judge": lambda expect, judge: [
        LlmJudge(rubric=judge.rubric, model=judge.model, judge=judge.judge)
    ],
    "evaluators": lambda expect, evaluators: _evaluator_checks(evaluators),
}


def _evaluator_checks(evaluators: Sequence[Any]) -> list[Check]:
    """A turn's ``evaluators:`` as checks. ``peer_protocol`` is imported here, not with this
    module: it loads asyncio (10 ms of ``tooltrail eval``'s start-up), which only a turn that
    names evaluators needs."""
    from tooltrail.checks.peer_protocol import turn_check

    return [
        ConfiguredCheck(name=_evaluator_name(evaluator), check=turn_check(evaluator))
        for evaluator in evaluators
    ]


#: The builders in the table's order (a key without a builder is an import error here).
TURN_BUILDERS = tuple((term.key, _BUILD[term.key]) for term in TURN_TERMS)
