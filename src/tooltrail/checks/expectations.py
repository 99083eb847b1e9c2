"""The case expectations of CHECKS.md: one score each, value 1.0 or 0.0, exact texts.

Score order inside a case: contains, required_tool, forbidden_tool, tool_args,
tool_arg_values, tool_order, turn_count_threshold (scorers follow, run by the registry).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tooltrail.checks.score import Score, config_error
from tooltrail.checks.view import CallView
from tooltrail.equality import args_contain
from tooltrail.model import EvalTrace, ToolCall

if TYPE_CHECKING:
    from tooltrail.suite.case import TestCase


def expectation_scores(
    case: TestCase, trace: EvalTrace, view: CallView, output: Any
) -> list[Score]:
    """Every case-expectation score of ``case`` on one trace, in the contract's order."""
    scores: list[Score] = []
    if case.expected_contains:
        scores.extend(contains_scores(case.expected_contains, output))
    for tool in case.required_tools:
        scores.append(required_tool_score(tool, view))
    for tool in case.forbidden_tools:
        scores.append(forbidden_tool_score(tool, view))
    for tool, keys in case.required_tool_arguments.items():
        scores.append(tool_args_score(tool, keys, view))
    for tool, expected in case.expected_tool_arguments.items():
        scores.append(tool_arg_values_score(tool, expected, view))
    if case.required_tool_order:
        scores.append(tool_order_score(case.required_tool_order, view))
    if case.max_turns is not None:
        scores.append(turn_count_score(case.max_turns, trace))
    return scores


def _span_ids(calls: list[ToolCall]) -> tuple[str, ...]:
    return tuple(c.span_id for c in calls if c.span_id)


def contains_scores(needles: list[str], output: Any) -> list[Score]:
    """``contains:{text}``: the casefolded text occurs in the stripped, casefolded reply."""
    if output is None:
        reply = ""
    else:
        reply = (output if isinstance(output, str) else str(output)).strip().casefold()
    scores = []
    for text in needles:
        if str(text).casefold() in reply:
            score = Score.passing(
                f"contains:{text}", "contains", f"Output contains required text: {text!r}."
            )
        else:
            score = Score.failing(
                f"contains:{text}", "contains", f"Output is missing required text: {text!r}."
            )
        scores.append(score)
    return scores


def required_tool_score(tool: str, view: CallView) -> Score:
    """``required_tool:{t}``: ``t`` was called (the first call is the evidence)."""
    if tool in view.counts:
        span_id = view.calls[view.names.index(tool)].span_id
        return Score.passing(
            f"required_tool:{tool}",
            "required_tool",
            f"Required tool {tool!r} was called.",
            span_ids=(span_id,) if span_id else (),
        )
    return Score.failing(
        f"required_tool:{tool}", "required_tool", f"Required tool {tool!r} was not called."
    )


def forbidden_tool_score(tool: str, view: CallView) -> Score:
    """``forbidden_tool:{t}``: ``t`` was not called (every call of it is evidence against)."""
    name = f"forbidden_tool:{tool}"
    if tool in view:
        return Score.failing(
            name,
            "forbidden_tool",
            f"Forbidden tool {tool!r} was called.",
            span_ids=_span_ids(view.calls_of(tool)),
        )
    return Score.passing(name, "forbidden_tool", f"Forbidden tool {tool!r} was not called.")


def tool_args_score(tool: str, keys: list[str], view: CallView) -> Score:
    """``tool_args:{t}``: some call of ``t`` has every listed argument name (presence only)."""
    name = f"tool_args:{tool}"
    if isinstance(keys, (str, bytes)) or not isinstance(keys, (list, tuple)):
        return config_error(
            name, "tool_args", f"required_tool_arguments[{tool!r}] must be a list of names."
        )
    for call in view.iter_calls(tool):
        args = call.args
        if not keys or (args is not None and all(k in args for k in keys)):
            return Score.passing(
                name,
                "tool_args",
                f"Tool {tool!r} included required arguments {keys}.",
                span_ids=(call.span_id,) if call.span_id else (),
            )
    return Score.failing(
        name,
        "tool_args",
        f"Tool {tool!r} did not include required arguments {keys}.",
        span_ids=_span_ids(view.calls_of(tool)),
    )


def tool_arg_values_score(tool: str, expected: dict[str, Any], view: CallView) -> Score:
    """``tool_arg_values:{t}``: some call of ``t`` has the expected arguments (subset)."""
    name = f"tool_arg_values:{tool}"
    if not isinstance(expected, dict):
        return config_error(
            name, "tool_arg_values", f"expected_tool_arguments[{tool!r}] must be a mapping."
        )
    count = view.counts.get(tool, 0)
    if not count:
        return Score.failing(
            name, "tool_arg_values", f"Tool {tool!r} was not called, so {expected} was not passed."
        )
    index = view.names.index
    calls = view.calls
    at = -1
    for _ in range(count):  # stop at the first call that matches
        at = index(tool, at + 1)
        call = calls[at]
        if args_contain(expected, call.args):
            span_id = call.span_id
            return Score.passing(
                name,
                "tool_arg_values",
                f"Tool {tool!r} was called with {expected}.",
                span_ids=(span_id,) if span_id else (),
            )
    matched = view.calls_of(tool)
    seen = [call.args for call in matched]
    return Score.failing(
        name,
        "tool_arg_values",
        f"Tool {tool!r} was called with {seen}, not {expected}.",
        span_ids=_span_ids(matched),
    )


def tool_order_score(order: list[str], view: CallView) -> Score:
    """``tool_order``: each listed tool's first call comes after the previous one's first call."""
    counts = view.counts
    missing: list[str] = []
    for tool in order:
        if tool not in counts and tool not in missing:
            missing.append(tool)
    if missing:
        return Score.failing(
            "tool_order", "tool_order", f"Required order {order} not met: {missing} never called."
        )
    index = view.names.index  # every listed tool was called: each has a first position
    firsts = [index(tool) for tool in order]
    for n in range(1, len(firsts)):
        first_b = firsts[n]
        if first_b <= firsts[n - 1]:
            span_id = view.calls[first_b].span_id
            return Score.failing(
                "tool_order",
                "tool_order",
                f"Required order {order} not met: {order[n]!r} was called before {order[n - 1]!r}.",
                span_ids=(span_id,) if span_id else (),
            )
    return Score.passing(
        "tool_order", "tool_order", f"Tools were first called in the required order {order}."
    )


def trace_turn_count(trace: EvalTrace) -> int | None:
    """The trace's turn count: ``metadata["turn_count"]`` when present, else the highest turn
    among its calls. ``None`` when the metadata value is not a positive int (a bool is not a
    count) or when there is nothing to derive it from."""
    if "turn_count" in trace.metadata:
        return trace.turn_count
    if trace.tool_calls:
        highest = max(call.turn for call in trace.tool_calls)
        return highest if isinstance(highest, int) and highest > 0 else None
    return None


def turn_count_score(max_turns: int, trace: EvalTrace) -> Score:
    """``turn_count_threshold``: the trace took at most ``max_turns`` turns."""
    name = "turn_count_threshold"
    if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 0:
        return config_error(
            name, name, f"max_turns must be a non-negative integer, not {max_turns!r}."
        )
    count = trace_turn_count(trace)
    if count is None:
        return Score.failing(
            name,
            name,
            "Trace metadata is missing a positive integer turn_count, so the max_turns check "
            "could not be evaluated.",
        )
    if count <= max_turns:
        return Score.passing(name, name, f"Turn count {count} meets the {max_turns} turn limit.")
    return Score.failing(name, name, f"Turn count {count} exceeds the {max_turns} turn limit.")
