"""Per-turn expectations (pytest-agent-eval's ``Expect``), judged on one turn's calls only.

Score names are ``turn{n}:{check}[:{tool}]`` and metrics the bare check name, so a report rolls
``tool_calls_exclude`` up over every turn while each failure still says which turn it was.
Every failure of a turn is reported, not just the first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.checks.score import Score
from tooltrail.checks.view import CallView
from tooltrail.equality import args_contain, values_equal

if TYPE_CHECKING:
    from tooltrail.suite.case import Expect, ToolCallArgs, Turn


def turn_scores(turns: list[Turn], view: CallView) -> list[Score]:
    """The scores of every turn's expectations; turn ``n`` (1-based) sees calls with turn ``n``."""
    scores: list[Score] = []
    for number, turn in enumerate(turns, start=1):
        scores.extend(expect_scores(turn.expect, view.turn(number), number))
    return scores


def expect_scores(expect: Expect, view: CallView, turn: int) -> list[Score]:
    """The scores of one ``Expect`` over the calls in ``view`` (one turn's calls)."""
    prefix = f"turn{turn}:"
    scores: list[Score] = []
    for tool in expect.tool_calls_include:
        first = view.first(tool)
        if first is not None:
            span_id = view.calls[first].span_id
            scores.append(
                Score.passing(
                    f"{prefix}tool_calls_include:{tool}",
                    "tool_calls_include",
                    f"Tool {tool!r} was called",
                    span_ids=(span_id,) if span_id else (),
                    turn=turn,
                )
            )
        else:
            scores.append(
                Score.failing(
                    f"{prefix}tool_calls_include:{tool}",
                    "tool_calls_include",
                    f"Expected tool {tool!r} was not called",
                    turn=turn,
                )
            )
    for tool in expect.tool_calls_exclude:
        calls = view.calls_of(tool)
        if calls:
            scores.append(
                Score.failing(
                    f"{prefix}tool_calls_exclude:{tool}",
                    "tool_calls_exclude",
                    f"Forbidden tool {tool!r} was called",
                    span_ids=tuple(c.span_id for c in calls if c.span_id),
                    turn=turn,
                )
            )
        else:
            scores.append(
                Score.passing(
                    f"{prefix}tool_calls_exclude:{tool}",
                    "tool_calls_exclude",
                    f"Forbidden tool {tool!r} was not called",
                    turn=turn,
                )
            )
    if expect.tool_calls_ordered and expect.tool_calls_include:
        scores.append(ordered_score(expect.tool_calls_include, view, turn))
    for wanted in expect.tool_calls_args:
        scores.append(args_score(wanted, view, turn))
    return scores


def is_subsequence(needles: list[str], names: list[str]) -> bool:
    """Whether ``needles`` occur in ``names`` in order; each needle consumes one call."""
    it = iter(names)
    return all(any(name == needle for name in it) for needle in needles)


def ordered_score(include: list[str], view: CallView, turn: int) -> Score:
    """``turn{n}:tool_calls_ordered``: the include list is an ordered subsequence of the calls."""
    names = [call.name for call in view.calls]
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


def args_score(wanted: ToolCallArgs, view: CallView, turn: int) -> Score:
    """``turn{n}:tool_calls_args:{tool}``: any call of the tool matches (subset or exact)."""
    tool, expected, mode = wanted.tool, wanted.args, wanted.mode
    name = f"turn{turn}:tool_calls_args:{tool}"
    calls = view.calls_of(tool)
    if not calls:
        return Score.failing(
            name,
            "tool_calls_args",
            f"Tool {tool!r} was not called, so {expected} ({mode}) could not match",
            turn=turn,
        )
    for call in calls:
        if mode == "exact":
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
        f"No call of {tool!r} matched {expected} ({mode}); its calls had {[c.args for c in calls]}",
        span_ids=tuple(c.span_id for c in calls if c.span_id),
        turn=turn,
    )
