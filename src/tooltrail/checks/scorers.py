"""The built-in named scorers. Each is a plain ``(trace, case, config) -> Score`` function.

Their own ``passed`` is ``value >= 1.0``; an ``EvaluatorConfig.threshold`` overrides it.
A misconfiguration is a failing score with ``error="ConfigError"`` and the reason.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from tooltrail.checks.score import Score, config_error
from tooltrail.checks.view import CallView, trace_view
from tooltrail.model import EvalTrace

if TYPE_CHECKING:
    from tooltrail.suite.case import TestCase

TRAJECTORY_MODES = ("exact", "in_order", "any_order")


def _view(trace: EvalTrace, case: TestCase) -> CallView:
    return trace_view(trace, ignore_failed=case.ignore_failed_calls)


def _tool_names(value: Any) -> list[str] | None:
    """``value`` as a list of tool names, or ``None`` when it is not one."""
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


_ALLOWED_SETS: dict[tuple[str, ...], tuple[frozenset[str], str]] = {}


def _allowed_set(tools: list[str]) -> tuple[frozenset[str], str]:
    """The allowed set and its sorted repr, memoized by content (cases reuse the same lists)."""
    key = tuple(tools)
    found = _ALLOWED_SETS.get(key)
    if found is None:
        if len(_ALLOWED_SETS) >= 1024:
            _ALLOWED_SETS.clear()
        allowed = frozenset(key)
        found = _ALLOWED_SETS[key] = (allowed, repr(sorted(allowed)))
    return found


def tool_call_precision(trace: EvalTrace, case: TestCase, config: dict[str, Any]) -> Score:
    """Calls of allowed tools / all calls (repeats count); allowed = config or required_tools."""
    name = "tool_call_precision"
    given = config.get("allowed_tools")
    allowed_list = _tool_names(given) if given is not None else case.required_tools
    if allowed_list is None:
        return config_error(name, name, "config['allowed_tools'] must be a list of tool names.")
    if not allowed_list:
        return config_error(
            name,
            name,
            "tool_call_precision needs an allowed set: set config['allowed_tools'] or the "
            "case's required_tools.",
        )
    allowed, shown = _allowed_set(allowed_list)
    view = _view(trace, case)
    total = view.size
    if not total:
        return Score.failing(
            name, name, f"No tool calls in the trace; expected calls from {shown}."
        )
    counts = view.counts
    ok = sum([counts.get(tool, 0) for tool in allowed])
    value = ok / total
    span_ids: tuple[str, ...] = ()
    if ok < total:  # the calls outside the allowed set are the evidence
        outside: list[int] = []
        for tool in counts:
            if tool not in allowed:
                outside.extend(view.positions(tool))
        outside.sort()
        calls = view.calls
        span_ids = tuple(s for s in [calls[i].span_id for i in outside] if s)
    return Score(
        name=name,
        metric=name,
        value=value,
        passed=value >= 1.0,
        explanation=f"{ok}/{total} tool calls were in the allowed set {shown}.",
        span_ids=span_ids,
    )


def tool_call_recall(trace: EvalTrace, case: TestCase, config: dict[str, Any]) -> Score:
    """Required tools called / required tools; required = config or the case's."""
    name = "tool_call_recall"
    given = config.get("required_tools")
    required = _tool_names(given) if given is not None else list(case.required_tools)
    if required is None:
        return config_error(name, name, "config['required_tools'] must be a list of tool names.")
    required = list(dict.fromkeys(required))
    if not required:
        return config_error(
            name,
            name,
            "tool_call_recall needs required tools: set config['required_tools'] or the "
            "case's required_tools.",
        )
    view = _view(trace, case)
    found = sum(1 for tool in required if tool in view)
    value = found / len(required)
    return Score(
        name=name,
        metric=name,
        value=value,
        passed=value >= 1.0,
        explanation=f"{found}/{len(required)} required tools were called.",
    )


def no_redundant_tool_calls(trace: EvalTrace, case: TestCase, config: dict[str, Any]) -> Score:
    """1 - exact duplicates / calls; a duplicate repeats an earlier call's name and arguments."""
    name = "no_redundant_tool_calls"
    view = _view(trace, case)
    total = view.size
    if not total:
        return Score.passing(name, name, "No tool calls in the trace, so none were redundant.")
    duplicates = view.duplicates()
    explanation = f"{len(duplicates)}/{total} tool calls exactly duplicated an earlier call."
    if not duplicates:
        return Score.passing(name, name, explanation)
    calls = view.calls
    return Score(
        name=name,
        metric=name,
        value=1.0 - len(duplicates) / total,
        passed=False,
        explanation=explanation,
        required=True,
        skipped=False,
        span_ids=tuple(s for s in [calls[i].span_id for i in duplicates] if s),
    )


def _lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence (O(len(a) * len(b)) time, O(len(b)) memory)."""
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b):
            current.append(previous[j] + 1 if x == y else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def trajectory_match(trace: EvalTrace, case: TestCase, config: dict[str, Any]) -> Score:
    """How well the call names match ``config["expected"]``: exact, in order (LCS F1) or any order
    (multiset F1)."""
    name = "trajectory_match"
    expected = _tool_names(config.get("expected"))
    if expected is None or isinstance(config.get("expected"), (set, frozenset)):
        return config_error(name, name, "config['expected'] must be a list of tool names.")
    mode = config.get("mode", "exact")
    if mode not in TRAJECTORY_MODES:
        return config_error(
            name, name, f"config['mode'] must be one of {list(TRAJECTORY_MODES)}, not {mode!r}."
        )
    actual = [call.name for call in _view(trace, case).calls]
    if mode == "exact":
        ok = actual == expected
        verb = "matched" if ok else "did not match"
        return Score(
            name=name,
            metric=name,
            value=1.0 if ok else 0.0,
            passed=ok,
            explanation=f"Tool calls {actual} {verb} the expected trajectory {expected} exactly.",
        )
    if not actual and not expected:
        value, common = 1.0, 0
    else:
        if mode == "in_order":
            common = _lcs_length(expected, actual)
        else:
            common = sum((Counter(expected) & Counter(actual)).values())
        value = 2 * common / (len(expected) + len(actual))
    how = "in order" if mode == "in_order" else "in any order"
    return Score(
        name=name,
        metric=name,
        value=value,
        passed=value >= 1.0,
        explanation=(
            f"Tool calls {actual} matched {common} of the expected trajectory {expected} {how} "
            f"(F1 {value:.2f})."
        ),
    )


def max_tool_calls(trace: EvalTrace, case: TestCase, config: dict[str, Any]) -> Score:
    """1 when the trace made at most ``config["max"]`` tool calls, else 0."""
    name = "max_tool_calls"
    limit = config.get("max")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        return config_error(
            name, name, f"config['max'] must be a non-negative integer, not {limit!r}."
        )
    view = _view(trace, case)
    count = view.size
    if count <= limit:
        return Score.passing(name, name, f"{count} tool calls are within the limit of {limit}.")
    return Score.failing(
        name,
        name,
        f"{count} tool calls exceed the limit of {limit}.",
        span_ids=tuple(c.span_id for c in view.calls[limit:] if c.span_id),
    )


#: name -> (scorer, the config keys it reads)
BUILTIN_SCORERS = {
    "tool_call_precision": (tool_call_precision, ("allowed_tools",)),
    "tool_call_recall": (tool_call_recall, ("required_tools",)),
    "no_redundant_tool_calls": (no_redundant_tool_calls, ()),
    "trajectory_match": (trajectory_match, ("expected", "mode")),
    "max_tool_calls": (max_tool_calls, ("max",)),
}
