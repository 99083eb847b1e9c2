"""The built-in named scorers: check classes whose fields are their ``config`` keys.

``EvaluatorConfig(name="max_tool_calls", config={"max": 5})`` builds ``MaxToolCalls(max=5)``.
Their own ``passed`` is ``value >= 1.0``; an ``EvaluatorConfig.threshold`` overrides it.
A misconfiguration is a failing score with ``error="ConfigError"`` and the reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tooltrail.checks.budgets import MaxToolCalls
from tooltrail.checks.judges import JUDGE_CHECKS
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.reference import (
    MATCH_MODES,
    ComparatorError,
    Matcher,
    ReferenceCheck,
)
from tooltrail.checks.scope import ToolScope, scope_of, scope_problem
from tooltrail.checks.score import Score, config_error
from tooltrail.checks.similarity import TrajectorySimilarity
from tooltrail.checks.tool_errors import TOOL_ERROR_CHECKS
from tooltrail.checks.view import CallView
from tooltrail.hints import did_you_mean

if TYPE_CHECKING:
    from tooltrail.checks.entries import CheckLookup

#: The scoring modes of ``trajectory_match`` over tool names (an F1 for the ordered pair).
TRAJECTORY_MODES = ("exact", "in_order", "any_order")
#: Every ``trajectory_match`` mode: the name modes, then the reference modes.
ALL_TRAJECTORY_MODES = TRAJECTORY_MODES + MATCH_MODES


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


def _scope_field() -> Any:
    """A scorer's ``tools`` / ``exclude_tools`` key (``checks.scope``): keyword-only, so that
    its own keys keep their places by position."""
    return field(default=None, kw_only=True)


def _worked_out() -> Any:
    """The scope worked out once (``checks.scope.scope_of``): not a config key."""
    return field(default=None, init=False, repr=False, compare=False)


def _in_scope(scope: ToolScope, ctx: CheckContext) -> tuple[CallView, str]:
    """The context's calls in ``scope``, and how explanations name it (a check without a
    scope reads ``ctx.view`` itself, inline: this is every trace's path)."""
    return scope.view(ctx.view), scope.text


def _scope_config_problem(config: dict[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    return scope_problem(config)


@dataclass(slots=True, frozen=True)
class ToolCallPrecision:
    """Calls of allowed tools / all calls (repeats count); allowed = ``allowed_tools`` or the
    case's ``required_tools``. ``tools`` / ``exclude_tools`` count only the calls in scope."""

    allowed_tools: Any = None
    tools: Any = _scope_field()
    exclude_tools: Any = _scope_field()
    scope: Any = _worked_out()

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", scope_of(self.tools, self.exclude_tools))

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """A suite file's bad scope, for ``Registry.check`` (file, line and key)."""
        return _scope_config_problem(config)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "tool_call_precision"
        scope = self.scope
        if scope is not None and type(scope) is str:
            return config_error(name, name, scope)
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
        view, scoped = (ctx.view, "") if scope is None else _in_scope(scope, ctx)
        total = view.size
        if not total:
            return Score.failing(
                name, name, f"No tool calls{scoped} in the trace; expected calls from {shown}."
            )
        counts = view.counts
        ok = sum([counts.get(tool, 0) for tool in allowed])
        value = ok / total
        span_ids: tuple[str, ...] = ()
        if ok < total:  # the calls outside the allowed set are the evidence, in call order
            span_ids = tuple(
                [call.span_id for call in view.calls if call.span_id and call.name not in allowed]
            )
        explanation = f"{ok}/{total} tool calls{scoped} were in the allowed set {shown}."
        # Positional, as ``Score.passing`` builds its scores (a keyword call costs 2.5x).
        return Score(name, name, value, value >= 1.0, explanation, True, False, span_ids)


@dataclass(slots=True, frozen=True)
class ToolCallRecall:
    """Required tools called / required tools; required = ``required_tools`` or the case's.
    ``tools`` / ``exclude_tools`` look only at the calls in scope."""

    required_tools: Any = None
    tools: Any = _scope_field()
    exclude_tools: Any = _scope_field()
    scope: Any = _worked_out()

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", scope_of(self.tools, self.exclude_tools))

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """A suite file's bad scope, for ``Registry.check`` (file, line and key)."""
        return _scope_config_problem(config)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "tool_call_recall"
        scope = self.scope
        if scope is not None and type(scope) is str:
            return config_error(name, name, scope)
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
        view, scoped = (ctx.view, "") if scope is None else _in_scope(scope, ctx)
        found = sum(1 for tool in required if tool in view)
        value = found / len(required)
        return Score(
            name=name,
            metric=name,
            value=value,
            passed=value >= 1.0,
            explanation=f"{found}/{len(required)} required tools were called{scoped}.",
        )


@dataclass(slots=True, frozen=True)
class NoRedundantToolCalls:
    """1 - exact duplicates / calls; a duplicate repeats an earlier call's name and arguments.
    ``tools`` / ``exclude_tools`` look only at the calls in scope."""

    tools: Any = _scope_field()
    exclude_tools: Any = _scope_field()
    scope: Any = _worked_out()

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", scope_of(self.tools, self.exclude_tools))

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """A suite file's bad scope, for ``Registry.check`` (file, line and key)."""
        return _scope_config_problem(config)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "no_redundant_tool_calls"
        scope = self.scope
        if scope is not None and type(scope) is str:
            return config_error(name, name, scope)
        view, scoped = (ctx.view, "") if scope is None else _in_scope(scope, ctx)
        total = view.size
        if not total:
            return Score.passing(
                name, name, f"No tool calls{scoped} in the trace, so none were redundant."
            )
        duplicates = view.duplicates()
        explanation = (
            f"{len(duplicates)}/{total} tool calls{scoped} exactly duplicated an earlier call."
        )
        if not duplicates:
            return Score.passing(name, name, explanation)
        calls = view.calls
        span_ids = tuple([s for s in [calls[i].span_id for i in duplicates] if s])
        value = 1.0 - len(duplicates) / total
        # Positional, as ``Score.failing`` builds its scores (a keyword call costs 2.5x).
        return Score(name, name, value, False, explanation, True, False, span_ids)


@dataclass(slots=True, frozen=True)
class TrajectoryMatch(ReferenceCheck):
    """How well the calls match a reference: ``expected`` (tool names), else the case's
    ``reference`` (calls with arguments, inline or recorded).

    ``mode``: ``exact`` (1/0), ``in_order`` (LCS F1), ``any_order`` (multiset F1), or a
    reference mode of ``checks.reference`` (``strict``, ``unordered``, ``subset``,
    ``superset``; 1/0, naming the first difference). ``args`` compares each call's arguments
    with its reference call's; ``tool_args`` overrides it per tool, with a mode, a rule
    mapping or a registered comparator (``{check: NAME, config: {...}}``), which the registry
    binds when it builds the check (``bind_registry``). The scope, ``ignore_failed_calls``
    and the value rules are ``ReferenceCheck``'s.
    """

    mode: Any = "exact"

    @property
    def metric(self) -> str:
        return "trajectory_match"

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """The first problem of a suite's config (key path under ``config``, message), for
        ``Registry.check``: modes, argument rules, comparator names, the scope."""
        expected = config.get("expected")
        if expected is not None and (
            _tool_names(expected) is None or isinstance(expected, (set, frozenset))
        ):
            return ("expected",), "expected a list of tool names"
        mode = config.get("mode", "exact")
        if mode not in ALL_TRAJECTORY_MODES:
            return ("mode",), (
                f"must be one of {', '.join(ALL_TRAJECTORY_MODES)}, not {mode!r}"
                + did_you_mean(str(mode), ALL_TRAJECTORY_MODES)
            )
        return cls.shared_config_problem(config, registry)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "trajectory_match"
        mode = self.mode
        given = self.expected
        if given is not None and (
            _tool_names(given) is None or isinstance(given, (set, frozenset))
        ):
            return config_error(name, name, "config['expected'] must be a list of tool names.")
        if mode not in ALL_TRAJECTORY_MODES:
            return config_error(
                name,
                name,
                f"config['mode'] must be one of {list(ALL_TRAJECTORY_MODES)}, not {mode!r}.",
            )
        found = self.against(ctx)
        if isinstance(found, Score):
            return found
        matcher = found.matcher
        if (
            given is not None
            and mode in TRAJECTORY_MODES
            and all(r.check is None for r in matcher.rules.values())
        ):  # names alone decide: the fast paths of the older modes
            view = ctx.view
            actual = view.names if matcher.run is view.calls else [c.name for c in matcher.run]
            return _score_names(name, mode, actual, list(given), found.scope)
        try:
            return _score(name, mode, matcher.default.describe(), matcher, found.scope)
        except ComparatorError as exc:
            return Score.failing(name, name, f"Trajectory not matched: {exc}.", error=exc.kind)


def _score_names(
    name: str, mode: str, actual: list[str], expected: list[str], scope: str = ""
) -> Score:
    """The older modes over tool names alone (``expected``, or a reference without
    arguments): list equality, the LCS of names, the multiset of names."""
    if mode == "exact":
        ok = actual == expected
        verb = "matched" if ok else "did not match"
        return Score(
            name=name,
            metric=name,
            value=1.0 if ok else 0.0,
            passed=ok,
            explanation=(
                f"Tool calls {actual}{scope} {verb} the expected trajectory {expected} exactly."
            ),
        )
    if mode == "in_order":
        common = _lcs_length(expected, actual)
    else:
        common = sum((Counter(expected) & Counter(actual)).values())
    return _f1_score(name, mode, actual, expected, common, scope)


def _f1_score(
    name: str, mode: str, actual: list[str], expected: list[str], common: int, scope: str = ""
) -> Score:
    """The ``in_order`` / ``any_order`` score: the F1 of ``common`` calls matched (two empty
    trajectories match)."""
    total = len(expected) + len(actual)
    value = 2 * common / total if total else 1.0
    how = "in order" if mode == "in_order" else "in any order"
    return Score(
        name=name,
        metric=name,
        value=value,
        passed=value >= 1.0,
        explanation=(
            f"Tool calls {actual}{scope} matched {common} of the expected trajectory "
            f"{expected} {how} (F1 {value:.2f})."
        ),
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


def _score(name: str, mode: str, args: str, matcher: Matcher, scope: str = "") -> Score:
    actual = [call.name for call in matcher.run]
    expected = [call.name for call in matcher.reference]
    if mode in MATCH_MODES:
        found = matcher.strict() if mode == "strict" else matcher.unmatched(mode)
        if found is None:
            return Score.passing(
                name,
                name,
                f"Tool calls {actual}{scope} matched the reference {expected} ({mode}, arguments "
                f"{args}).",
            )
        difference, at = found
        span_id = matcher.run[at].span_id if at is not None else None
        return Score.failing(
            name,
            name,
            f"Tool calls {actual}{scope} did not match the reference {expected} ({mode}, "
            f"arguments {args}): {difference}.",
            span_ids=(span_id,) if span_id else (),
        )
    if mode in TRAJECTORY_MODES and matcher.names_only():
        return _score_names(name, mode, actual, expected, scope)  # a reference without arguments
    if mode == "exact":
        found = matcher.strict()
        ok = found is None
        verb = "matched" if ok else "did not match"
        detail = f": {found[0]}" if found is not None and actual == expected else ""
        return Score(
            name=name,
            metric=name,
            value=1.0 if ok else 0.0,
            passed=ok,
            explanation=(
                f"Tool calls {actual}{scope} {verb} the expected trajectory {expected} "
                f"exactly{detail}."
            ),
        )
    if not actual and not expected:
        common = 0
    else:
        common = matcher.lcs() if mode == "in_order" else len(matcher.pairs())
    return _f1_score(name, mode, actual, expected, common, scope)


#: name -> check class (its dataclass fields are the config keys it reads)
BUILTIN_SCORERS: dict[str, type] = {
    "tool_call_precision": ToolCallPrecision,
    "tool_call_recall": ToolCallRecall,
    "no_redundant_tool_calls": NoRedundantToolCalls,
    "trajectory_match": TrajectoryMatch,
    "trajectory_similarity": TrajectorySimilarity,
    "max_tool_calls": MaxToolCalls,
    **JUDGE_CHECKS,  # llm_judge, tool_args_judge, trajectory_judge
    **TOOL_ERROR_CHECKS,  # tool_errors, tool_errors_recovered, claims_success_after_error
}
