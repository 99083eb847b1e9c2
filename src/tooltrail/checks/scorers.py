"""The built-in named scorers: check classes whose fields are their ``config`` keys.

``EvaluatorConfig(name="max_tool_calls", config={"max": 5})`` builds ``MaxToolCalls(max=5)``.
Their own ``passed`` is ``value >= 1.0``; an ``EvaluatorConfig.threshold`` overrides it.
A misconfiguration is a failing score with ``error="ConfigError"`` and the reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from tooltrail.checks.budgets import MaxToolCalls
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.score import Score, config_error

TRAJECTORY_MODES = ("exact", "in_order", "any_order")


def _tool_names(value: Any) -> list[str] | None:
    """``value`` as a list of tool names, or ``None`` when it is not one."""
    if isinstance(value, (list, tuple, set, frozenset)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _case_required_tools(ctx: CheckContext) -> list[str]:
    return ctx.case.required_tools if ctx.case is not None else []


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


@dataclass(slots=True, frozen=True)
class ToolCallPrecision:
    """Calls of allowed tools / all calls (repeats count); allowed = ``allowed_tools`` or the
    case's ``required_tools``."""

    allowed_tools: Any = None

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "tool_call_precision"
        given = self.allowed_tools
        allowed_list = _tool_names(given) if given is not None else _case_required_tools(ctx)
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
        view = ctx.view
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


@dataclass(slots=True, frozen=True)
class ToolCallRecall:
    """Required tools called / required tools; required = ``required_tools`` or the case's."""

    required_tools: Any = None

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "tool_call_recall"
        given = self.required_tools
        required = _tool_names(given) if given is not None else list(_case_required_tools(ctx))
        if required is None:
            return config_error(
                name, name, "config['required_tools'] must be a list of tool names."
            )
        required = list(dict.fromkeys(required))
        if not required:
            return config_error(
                name,
                name,
                "tool_call_recall needs required tools: set config['required_tools'] or the "
                "case's required_tools.",
            )
        view = ctx.view
        found = sum(1 for tool in required if tool in view)
        value = found / len(required)
        return Score(
            name=name,
            metric=name,
            value=value,
            passed=value >= 1.0,
            explanation=f"{found}/{len(required)} required tools were called.",
        )


@dataclass(slots=True, frozen=True)
class NoRedundantToolCalls:
    """1 - exact duplicates / calls; a duplicate repeats an earlier call's name and arguments."""

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "no_redundant_tool_calls"
        view = ctx.view
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


@dataclass(slots=True, frozen=True)
class TrajectoryMatch:
    """How well the call names match ``expected``: exact, in order (LCS F1) or any order
    (multiset F1)."""

    expected: Any = None
    mode: Any = "exact"

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "trajectory_match"
        expected = _tool_names(self.expected)
        if expected is None or isinstance(self.expected, (set, frozenset)):
            return config_error(name, name, "config['expected'] must be a list of tool names.")
        mode = self.mode
        if mode not in TRAJECTORY_MODES:
            return config_error(
                name,
                name,
                f"config['mode'] must be one of {list(TRAJECTORY_MODES)}, not {mode!r}.",
            )
        actual = [call.name for call in ctx.view.calls]
        if mode == "exact":
            ok = actual == expected
            verb = "matched" if ok else "did not match"
            return Score(
                name=name,
                metric=name,
                value=1.0 if ok else 0.0,
                passed=ok,
                explanation=(
                    f"Tool calls {actual} {verb} the expected trajectory {expected} exactly."
                ),
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
                f"Tool calls {actual} matched {common} of the expected trajectory {expected} "
                f"{how} (F1 {value:.2f})."
            ),
        )


#: name -> check class (its dataclass fields are the config keys it reads)
BUILTIN_SCORERS: dict[str, type] = {
    "tool_call_precision": ToolCallPrecision,
    "tool_call_recall": ToolCallRecall,
    "no_redundant_tool_calls": NoRedundantToolCalls,
    "trajectory_match": TrajectoryMatch,
    "max_tool_calls": MaxToolCalls,
}
