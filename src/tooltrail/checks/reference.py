"""Matching a run against a reference trajectory: call matching modes, argument rules, and
reading a recorded reference.

Modes (LangChain agentevals' vocabulary): ``strict`` the same calls in the same order;
``unordered`` the same calls in any order (the same multiset); ``subset`` every call of the run
is in the reference; ``superset`` every reference call is in the run. Two calls are the same
when their tool names are equal and their arguments match under the tool's rule: ``exact``,
``ignore``, ``subset`` (the run's arguments are a subset of the reference's), ``superset``
(the run's arguments hold every reference argument), or a registered argument comparator;
a rule may add a tolerance on numbers, ignored argument paths and ``nested`` (the subset or
superset at every depth), compared by ``checks.argmatch``. Unordered modes pair calls by a
maximum matching, so the verdict never depends on which of two candidate calls was tried first.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tooltrail.checks.argmatch import Difference, Mode, describe
from tooltrail.checks.argmatch import difference as args_difference
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.scope import scope_error, scope_problem, tool_scope
from tooltrail.checks.score import Score, config_error
from tooltrail.equality import values_equal
from tooltrail.hints import did_you_mean
from tooltrail.model import ToolCall
from tooltrail.suite.argrules import OPTION_KEYS, CompareArgs, RuleError, read_compare_args
from tooltrail.suite.reference import Reference
from tooltrail.suite.suite_error import SuiteError

if TYPE_CHECKING:
    from tooltrail.checks.entries import CheckLookup
    from tooltrail.model import EvalTrace
    from tooltrail.otlp import Diagnostic
    from tooltrail.suite.testsuite import TestSuite

#: Call matching modes against a reference (each gives 1.0 or 0.0).
MATCH_MODES = ("strict", "unordered", "subset", "superset")
#: How a run call's arguments are compared with its reference call's.
ARGS_MODES = ("exact", "ignore", "subset", "superset")
#: The keys of a ``tool_args`` entry that names a registered comparator.
COMPARATOR_KEYS = ("check", "config")
#: The keys of a ``tool_args`` entry that is a rule: a mode and how values compare (a key it
#: leaves out keeps the check's own).
RULE_KEYS = ("mode", *OPTION_KEYS)
#: An argument mode as ``checks.argmatch`` walks it (the reference is the expected side).
_WALK_MODES: dict[str, Mode] = {
    "exact": "exact",
    "superset": "contains",
    "subset": "within",
}
#: Calls of one tool past which unordered matching pairs calls greedily (first fit) instead
#: of by a maximum matching, whose worst case grows with the square of the calls.
MAX_MATCHED_CALLS = 500


class ArgsComparator:
    """Base of an argument comparator: a registered check class whose ``compare_args`` says
    whether a run call's arguments match its reference call's.

    Register a subclass like any check (``Registry.register``, a plug-in's
    ``TOOLTRAIL_CHECKS``, an entry point) and name it in ``trajectory_match``'s ``tool_args``:
    ``{issue_refund: {check: amount_close, config: {tolerance: 0.01}}}``. It is built with that
    ``config`` (its dataclass fields). ``compare_args`` must return a ``bool``; ``reference``
    or ``actual`` is ``None`` when arguments were not captured.
    """

    __slots__ = ()

    def compare_args(
        self, tool: str, reference: dict[str, Any] | None, actual: dict[str, Any] | None
    ) -> bool:
        raise NotImplementedError

    def evaluate(self, ctx: CheckContext) -> Score:
        name = type(self).__name__
        return config_error(
            name,
            name,
            f"{name} compares arguments for trajectory_match's tool_args; it is not a check "
            "on its own.",
        )


class ComparatorError(Exception):
    """A registered comparator raised, or returned something other than a bool."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class ArgRule:
    """How one tool's arguments are compared: an ``ARGS_MODES`` mode, or a comparator;
    ``compare`` (a tolerance, ignored paths, ``nested``) loosens a mode's rule."""

    mode: str = "exact"
    check: str | None = None
    comparator: Any = None
    compare: CompareArgs | None = None

    def __post_init__(self) -> None:
        if self.compare is not None and self.compare.plain:
            object.__setattr__(self, "compare", None)

    def describe(self) -> str:
        """The rule as explanations name it (``superset, nested, abs 0.01``)."""
        return describe(self.mode, self.compare)

    def difference(
        self, tool: str, reference: dict[str, Any] | None, actual: dict[str, Any] | None
    ) -> str | None:
        """``None`` when ``actual`` matches ``reference``; else the first difference."""
        if self.check is not None:
            try:
                same = self.comparator.compare_args(tool, reference, actual)
            except Exception as exc:  # a plug-in's bug becomes an error score, not a crash
                raise ComparatorError(
                    f"argument comparator {self.check!r} failed on {tool!r}: "
                    f"{type(exc).__name__}: {exc}",
                    type(exc).__name__,
                ) from exc
            if type(same) is not bool:
                raise ComparatorError(
                    f"argument comparator {self.check!r} returned {type(same).__name__}, not a "
                    "bool",
                    "TypeError",
                )
            return None if same else f"comparator {self.check!r} rejected its arguments"
        mode = self.mode
        if reference is None or mode == "ignore":
            return None
        if actual is None:
            return "its arguments were not captured"
        if self.compare is not None:
            found = args_difference(reference, actual, _WALK_MODES[mode], self.compare)
            return None if found is None else _explain(found)
        # Values are quoted as one-key dicts, as tool_arg_values quotes arguments, so that the
        # redaction of explanations (``key: value``) finds a secret argument's value.
        if mode != "subset":  # exact, superset: every reference argument, equal
            for key, value in reference.items():
                if key not in actual:
                    return f"argument {key!r} is missing (the reference has { ({key: value})!r})"
                if not values_equal(value, actual[key]):
                    return _differs(key, actual[key], value)
        if mode != "superset":  # exact, subset: no argument the reference lacks
            for key, value in actual.items():
                if key not in reference:
                    return f"argument { ({key: value})!r} is not in the reference"
                if mode == "subset" and not values_equal(reference[key], value):
                    return _differs(key, value, reference[key])
        return None


def _differs(key: str, actual: Any, expected: Any) -> str:
    return f"argument { ({key: actual})!r} where the reference has { ({key: expected})!r}"


def _explain(found: Difference) -> str:
    """A difference ``checks.argmatch`` found, in the texts of the plain rule (a nested
    value's key is its path: ``{'items[0].sku': 'X'}``)."""
    where = found.where
    if found.kind == "missing":
        return f"argument {where!r} is missing (the reference has { ({where: found.expected})!r})"
    if found.kind == "extra":
        return f"argument { ({where: found.actual})!r} is not in the reference"
    return _differs(where, found.actual, found.expected)


def rules_problem(
    args: Any, tool_args: Any, registry: CheckLookup | None
) -> tuple[tuple[Any, ...], str] | None:
    """The first problem of ``args`` and ``tool_args`` as (config key path, message), or
    ``None``. Comparator names are looked up in ``registry`` when one is given."""
    if args not in ARGS_MODES:
        return ("args",), f"must be one of {', '.join(ARGS_MODES)}, not {args!r}" + did_you_mean(
            str(args), ARGS_MODES
        )
    if tool_args is None:
        return None
    if not isinstance(tool_args, Mapping):
        return ("tool_args",), "expected a mapping of tool name -> argument rule"
    for tool, rule in tool_args.items():
        at: tuple[Any, ...] = ("tool_args", tool)
        if not isinstance(tool, str) or not tool:
            return ("tool_args",), f"tool names must be non-empty strings, not {tool!r}"
        if isinstance(rule, str):
            if rule not in ARGS_MODES:
                return at, (
                    f"must be one of {', '.join(ARGS_MODES)} or {{check: NAME}}, not {rule!r}"
                    + did_you_mean(rule, ARGS_MODES)
                )
            continue
        if not isinstance(rule, Mapping):
            return at, f"expected one of {', '.join(ARGS_MODES)} or {{check: NAME, config: {{}}}}"
        if "check" not in rule and not (set(rule) & set(COMPARATOR_KEYS)):
            problem = _rule_problem(rule)
            if problem is not None:
                return (*at, *problem[0]), problem[1]
            continue
        for key in rule:
            if key not in COMPARATOR_KEYS:
                return at + (key,), (
                    f"unknown key {key!r}{did_you_mean(str(key), COMPARATOR_KEYS)}; allowed "
                    f"keys: {', '.join(COMPARATOR_KEYS)}"
                )
        name = rule.get("check")
        if not isinstance(name, str) or not name:
            return at + ("check",), "expected the name of a registered argument comparator"
        config = rule.get("config", {})
        if not isinstance(config, Mapping):
            return at + ("config",), "expected a config mapping"
        if registry is not None:
            registered = registry.get(name)
            if registered is None:
                return at + ("check",), (
                    f"no registered check {name!r}{did_you_mean(name, registry.names())}"
                )
            if not callable(getattr(registered, "compare_args", None)):
                return at + ("check",), (
                    f"check {name!r} is not an argument comparator: it has no "
                    "compare_args(tool, reference, actual) method"
                )
            entry = registry.entry(name)
            keys = entry.config_keys if entry is not None else None
            unknown = [key for key in config if keys is not None and key not in keys]
            if unknown and keys is not None:
                key = unknown[0]
                return at + ("config", key), (
                    f"unknown config key {key!r} for comparator {name!r}"
                    f"{did_you_mean(str(key), keys)}; it reads {sorted(keys)}"
                )
    return None


def _rule_problem(rule: Mapping[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    """The first problem of a ``tool_args`` entry that is a rule mapping (``RULE_KEYS``)."""
    for key in rule:
        if key not in RULE_KEYS:
            return (key,), (
                f"unknown key {key!r}{did_you_mean(str(key), RULE_KEYS + COMPARATOR_KEYS)}; "
                f"allowed keys: {', '.join(RULE_KEYS)} (or check, config for a comparator)"
            )
    mode = rule.get("mode", "exact")
    if mode not in ARGS_MODES:
        return ("mode",), f"must be one of {', '.join(ARGS_MODES)}, not {mode!r}" + did_you_mean(
            str(mode), ARGS_MODES
        )
    try:
        read_compare_args({k: v for k, v in rule.items() if k != "mode"})
    except RuleError as exc:
        return exc.where, exc.message
    return None


def options_problem(config: Mapping[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    """The first problem of a check's own ``abs``, ``rel``, ``ignore`` and ``nested``."""
    try:
        read_compare_args({k: config[k] for k in OPTION_KEYS if config.get(k) is not None})
    except RuleError as exc:
        return exc.where, exc.message
    return None


def mode_rules(
    args: str, tool_args: Mapping[str, Any] | None, compare: CompareArgs | None
) -> tuple[ArgRule, dict[str, ArgRule]]:
    """The default rule (``args`` with the check's ``compare``) and the per-tool rules of
    a valid ``tool_args`` that names no comparator: a mode, or a rule mapping whose keys
    replace the check's own."""
    rules: dict[str, ArgRule] = {}
    for tool, rule in (tool_args or {}).items():
        rules[tool] = _mode_rule(rule, args, compare)
    return ArgRule(mode=args, compare=compare), rules


def _mode_rule(rule: Any, args: str, compare: CompareArgs | None) -> ArgRule:
    if isinstance(rule, str):
        return ArgRule(mode=rule, compare=compare)
    options = {k: v for k, v in rule.items() if k != "mode"}
    return ArgRule(mode=rule.get("mode", args), compare=read_compare_args(options, base=compare))


def is_comparator(rule: Any) -> bool:
    """Whether a valid ``tool_args`` entry names a registered comparator."""
    return isinstance(rule, Mapping) and "check" in rule


def build_rules(
    tool_args: Mapping[str, Any] | None,
    registry: CheckLookup,
    args: str = "exact",
    compare: CompareArgs | None = None,
) -> dict[str, ArgRule]:
    """The per-tool rules of a valid ``tool_args``, comparators built from ``registry``."""
    rules: dict[str, ArgRule] = {}
    for tool, rule in (tool_args or {}).items():
        if not is_comparator(rule):
            rules[tool] = _mode_rule(rule, args, compare)
            continue
        name = rule["check"]
        entry = registry.entry(name)
        assert entry is not None  # rules_problem looked
        comparator = entry.build(dict(rule.get("config") or {}))
        rules[tool] = ArgRule(mode="check", check=name, comparator=comparator)
    return rules


@dataclass(slots=True)
class Matcher:
    """Compares the calls of a run with a reference's, caching each pair's difference."""

    run: Sequence[ToolCall]
    reference: Sequence[ToolCall]
    default: ArgRule
    rules: Mapping[str, ArgRule]
    #: (run call, reference call) -> the comparator's difference (``None``: the same call).
    cache: dict[tuple[int, int], str | None] = field(default_factory=dict)

    def difference(self, i: int, j: int) -> str | None:
        """Why run call ``i`` is not reference call ``j`` (their names are equal), or ``None``.
        A comparator's answers are cached (it is called once per pair); the built-in rules
        are cheaper to compute again than to keep for every pair of a long trajectory."""
        call, ref = self.run[i], self.reference[j]
        rule = self.rules.get(call.name, self.default)
        if rule.check is None:
            return rule.difference(call.name, ref.args, call.args)
        key = (i, j)
        if key in self.cache:
            return self.cache[key]
        found = self.cache[key] = rule.difference(call.name, ref.args, call.args)
        return found

    def names_only(self) -> bool:
        """Whether tool names alone decide: no reference call has arguments and no comparator
        is asked (the older modes then keep their fast paths over names)."""
        if any(ref.args is not None for ref in self.reference):
            return False
        return self.default.check is None and all(r.check is None for r in self.rules.values())

    def same(self, i: int, j: int) -> bool:
        return self.run[i].name == self.reference[j].name and self.difference(i, j) is None

    def strict(self) -> tuple[str, int | None] | None:
        """The first difference in order, with the run call it is about; ``None``: equal."""
        run, reference = self.run, self.reference
        for k in range(max(len(run), len(reference))):
            if k >= len(run):
                return f"reference call {k + 1} {reference[k].name!r} is missing", None
            if k >= len(reference):
                return f"call {k + 1} {run[k].name!r} is not in the reference", k
            actual, wanted = run[k].name, reference[k].name
            if actual == wanted:
                diff = self.difference(k, k)
                if diff is not None:
                    return f"call {k + 1} {actual!r}: {diff}", k
                continue
            if Counter(c.name for c in run) == Counter(c.name for c in reference):
                order = f"out of order at call {k + 1}: {actual!r} where the reference has"
                return f"{order} {wanted!r}", k
            return f"call {k + 1} is {actual!r}, the reference has {wanted!r}", k
        return None

    def pairs(self) -> dict[int, int]:
        """A maximum matching run call -> reference call (same tool, matching arguments)."""
        by_tool: dict[str, tuple[list[int], list[int]]] = {}
        for i, call in enumerate(self.run):
            by_tool.setdefault(call.name, ([], []))[0].append(i)
        for j, ref in enumerate(self.reference):
            if ref.name in by_tool:
                by_tool[ref.name][1].append(j)
        matched: dict[int, int] = {}
        for runs, refs in by_tool.values():
            if refs:
                matched.update(self._match(runs, refs))
        return matched

    def _match(self, runs: list[int], refs: list[int]) -> dict[int, int]:
        owner: dict[int, int] = {}  # reference call -> run call

        def augment(i: int, seen: set[int]) -> bool:
            for j in refs:
                if j not in seen and self.difference(i, j) is None:
                    seen.add(j)
                    if j not in owner or augment(owner[j], seen):
                        owner[j] = i
                        return True
            return False

        greedy = len(runs) > MAX_MATCHED_CALLS or len(refs) > MAX_MATCHED_CALLS
        for i in runs:
            if greedy:
                for j in refs:
                    if j not in owner and self.difference(i, j) is None:
                        owner[j] = i
                        break
            else:
                augment(i, set())
        return {i: j for j, i in owner.items()}

    def unmatched(self, mode: str) -> tuple[str, int | None] | None:
        """The first difference under an unordered ``mode``, or ``None`` when it holds."""
        pairs = self.pairs()
        taken = set(pairs.values())
        free_run = [i for i in range(len(self.run)) if i not in pairs]
        free_ref = [j for j in range(len(self.reference)) if j not in taken]
        if mode in ("unordered", "superset") and free_ref:
            j = free_ref[0]
            tool = self.reference[j].name
            for i in free_run:
                if self.run[i].name == tool:
                    return f"call {i + 1} {tool!r}: {self.difference(i, j)}", i
            return f"reference call {j + 1} {tool!r} is missing", None
        if mode in ("unordered", "subset") and free_run:
            i = free_run[0]
            tool = self.run[i].name
            for j in free_ref:
                if self.reference[j].name == tool:
                    return f"call {i + 1} {tool!r}: {self.difference(i, j)}", i
            return f"call {i + 1} {tool!r} is not in the reference", i
        return None

    def lcs(self) -> int:
        """The longest common subsequence of matching calls (``in_order``'s F1)."""
        if not self.run or not self.reference:
            return 0
        previous = [0] * (len(self.reference) + 1)
        for i in range(len(self.run)):
            current = [0]
            for j in range(len(self.reference)):
                current.append(
                    previous[j] + 1 if self.same(i, j) else max(previous[j + 1], current[j])
                )
            previous = current
        return previous[-1]


# -- checks against a reference: trajectory_match, trajectory_similarity ---------------------


def _names_list(value: Any) -> list[str] | None:
    """``value`` as a list of tool names (not a set: a reference has an order)."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def config_problem_text(where: tuple[Any, ...], message: str) -> str:
    """``config['tool_args']['a']: message.``: a config problem as a score explains it."""
    return f"config{''.join(f'[{part!r}]' for part in where)}: {message}."


@dataclass(frozen=True, slots=True)
class Against:
    """What a check against a reference works on: the run's calls in scope, the reference's,
    how their arguments compare, and how the scope is named (``checks.scope``)."""

    matcher: Matcher
    scope: str


@dataclass(slots=True, frozen=True)
class ReferenceCheck:
    """The configuration every check against a reference shares (``trajectory_match``,
    ``trajectory_similarity``): the reference (``expected`` tool names, else the case's
    ``reference``), the argument rules (``args``, ``tool_args``, and ``abs``, ``rel``,
    ``ignore``, ``nested`` for every rule that is a mode), the scope (``tools``,
    ``exclude_tools``) and ``ignore_failed_calls``, which leaves failed calls out of the run
    and the reference alike. Subclasses say what they score."""

    expected: Any = None
    #: Keyword-only, so that a subclass's own first key (``TrajectoryMatch.mode``) comes
    #: second by position, as it always did.
    args: Any = field(default="exact", kw_only=True)
    tool_args: Any = field(default=None, kw_only=True)
    tools: Any = field(default=None, kw_only=True)
    exclude_tools: Any = field(default=None, kw_only=True)
    ignore_failed_calls: Any = field(default=False, kw_only=True)
    abs: Any = field(default=None, kw_only=True)
    rel: Any = field(default=None, kw_only=True)
    ignore: Any = field(default=None, kw_only=True)
    nested: Any = field(default=None, kw_only=True)
    #: The default and per-tool rules (comparators bound by ``bind_registry``), or why they
    #: cannot be built.
    rules: Any = field(default=None, init=False, repr=False, compare=False)
    #: The scope (``checks.scope``), worked out once.
    scope: Any = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rules", self._unbound_rules())
        if scope_error(self.tools, self.exclude_tools) is None:
            drop = self.ignore_failed_calls is True
            object.__setattr__(self, "scope", tool_scope(self.tools, self.exclude_tools, drop))

    @property
    def metric(self) -> str:
        raise NotImplementedError

    def _options(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in OPTION_KEYS if getattr(self, key) is not None}

    def _own_problem(self, registry: CheckLookup | None) -> str | None:
        """Why the check's configuration (beyond its own keys) cannot run, as a score says."""
        problem = scope_error(self.tools, self.exclude_tools)
        if problem is not None:
            return problem
        if not isinstance(self.ignore_failed_calls, bool):
            return (
                "config['ignore_failed_calls'] must be true or false, not "
                f"{self.ignore_failed_calls!r}."
            )
        found = options_problem(self._options())
        if found is not None:
            return config_problem_text(*found)
        found = rules_problem(self.args, self.tool_args, registry)
        if found is not None:
            return config_problem_text(*found)
        return None

    def bind_registry(self, registry: CheckLookup) -> ReferenceCheck:
        """This check with its ``tool_args`` comparators built from ``registry``."""
        bound = replace(self)
        problem = self._own_problem(registry)
        if problem is not None:
            rules: Any = problem
        else:
            compare = read_compare_args(self._options())
            rules = (
                ArgRule(mode=self.args, compare=compare),
                build_rules(self.tool_args, registry, self.args, compare),
            )
        object.__setattr__(bound, "rules", rules)
        return bound

    @property
    def runs_plugins(self) -> bool:
        """Whether a registered comparator (code from outside tooltrail) runs in this check."""
        rules = self.rules
        return isinstance(rules, tuple) and any(r.check is not None for r in rules[1].values())

    @classmethod
    def shared_config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """The first problem of the shared keys of a suite's config (key path under
        ``config``, message), for ``Registry.check``."""
        expected = config.get("expected")
        if expected is not None and _names_list(expected) is None:
            return ("expected",), "expected a list of tool names"
        found = scope_problem(config)
        if found is not None:
            return found
        if not isinstance(config.get("ignore_failed_calls", False), bool):
            return ("ignore_failed_calls",), "expected true or false"
        found = options_problem(config)
        if found is not None:
            return found
        return rules_problem(config.get("args", "exact"), config.get("tool_args"), registry)

    def _unbound_rules(self) -> tuple[ArgRule, dict[str, ArgRule]] | str:
        """The rules of a check no registry built: those of its modes (comparators come from
        a registry), or why there are none."""
        problem = self._own_problem(None)
        if problem is not None:
            return problem
        tool_args = self.tool_args or {}
        if any(is_comparator(rule) for rule in tool_args.values()):
            return (
                "config['tool_args'] names a comparator, which only a check built by a "
                "registry can use (Registry.build, or bind_registry)."
            )
        return mode_rules(self.args, tool_args, read_compare_args(self._options()))

    def against(self, ctx: CheckContext) -> Against | Score:
        """The run and its reference in scope, or the config error score that stops it."""
        name = self.metric
        given = self.expected
        expected = None
        if given is not None:
            expected = _names_list(given)
            if expected is None:
                return config_error(name, name, "config['expected'] must be a list of tool names.")
        rules = self.rules
        if isinstance(rules, str):
            return config_error(name, name, rules)
        default, per_tool = rules
        scope = self.scope
        if expected is not None:
            reference: tuple[ToolCall, ...] = tuple(ToolCall(name=t) for t in expected)
        else:
            found = ctx.case.reference if ctx.case is not None else None
            if found is None:
                return config_error(
                    name,
                    name,
                    f"{name} needs a reference: set config['expected'] (tool names), "
                    "the case's reference (calls, or a recorded file and trace id), or "
                    "`tooltrail eval --reference FILE`.",
                )
            try:
                reference = recorded_calls(found)
            except SuiteError as exc:
                return config_error(name, name, f"Reference {found.label}: {exc.message}.")
            if ctx.case is not None and ctx.case.ignore_failed_calls:
                reference = tuple(c for c in reference if c.status != "error")
        run = scope.view(ctx.view).calls
        if scope.narrows:
            reference = tuple(scope.calls(reference))
        matcher = Matcher(run=run, reference=reference, default=default, rules=per_tool)
        return Against(matcher=matcher, scope=scope.text)


# -- recorded references ------------------------------------------------------------------

#: (path, size, mtime) -> trace id -> calls, for the recorded references read so far.
_RECORDINGS: dict[tuple[str, int, int], dict[str, tuple[ToolCall, ...]]] = {}
#: Recordings kept at most (a suite names a handful; a long-lived process must not grow).
MAX_RECORDINGS = 16


def recorded_calls(reference: Reference) -> tuple[ToolCall, ...]:
    """The calls of ``reference``: inline, or its trace's, read from its file once per
    process (again when the file changes). ``SuiteError`` when the file cannot be read or
    holds no trace with that id."""
    if reference.calls is not None:
        return reference.calls
    path, trace_id = str(reference.file), str(reference.trace_id)
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise SuiteError(f"cannot read the reference file {path}: {exc.strerror or exc}") from None
    key = (path, stat.st_size, stat.st_mtime_ns)
    traces = _RECORDINGS.get(key)
    if traces is None:
        traces = {trace.trace_id: tuple(trace.tool_calls) for trace in _read(path)}
        if len(_RECORDINGS) >= MAX_RECORDINGS:
            _RECORDINGS.clear()
        _RECORDINGS[key] = traces
    found = traces.get(trace_id)
    if found is None:
        held = sorted(traces)
        shown = f"{held[:5]}{' ...' if len(held) > 5 else ''}"
        raise SuiteError(
            f"the reference file {path} holds no trace {trace_id!r}"
            f"{did_you_mean(trace_id, held)}; it holds {len(held)}: {shown}"
        )
    return found


def _read(path: str) -> list[EvalTrace]:
    """Every trace of a recording; a record that cannot be read is a ``SuiteError``: a gate
    must not pass against half a reference."""
    from tooltrail.convert import read_traces  # the one reader of recorded traces

    diagnostics: list[Diagnostic] = []
    traces = list(read_traces(path, two_pass=False, diagnostics=diagnostics))
    if diagnostics:
        raise SuiteError(f"the reference file cannot be read: {diagnostics[0]}")
    return traces


def with_references(
    suite: TestSuite, traces: Iterable[EvalTrace], source: str
) -> tuple[TestSuite, list[str]]:
    """``suite`` whose cases take their reference from recorded ``traces`` (``eval
    --reference``): a trace is the reference of every case that would evaluate it
    (``suite.cases_for``: its ``tooltrail.case_id`` tag, or a policy's ``match:``); it
    replaces the case's own. Two traces for one case are a ``SuiteError``. Also returns a
    note per trace no case takes."""
    chosen: dict[str, EvalTrace] = {}
    notes: list[str] = []
    for trace in traces:
        cases = suite.cases_for(trace)
        if not cases:
            notes.append(f"reference {source}: trace {trace.trace_id} matches no case: not used")
        for case in cases:
            earlier = chosen.get(case.id)
            if earlier is not None:
                raise SuiteError(
                    f"reference {source}: case {case.id!r} matches two recorded traces "
                    f"({earlier.trace_id} and {trace.trace_id}); keep one good run per case, "
                    "or tag each with tooltrail.case_id"
                )
            chosen[case.id] = trace
    cases = [
        replace(
            case,
            reference=Reference(
                calls=tuple(chosen[case.id].tool_calls),
                file=source,
                trace_id=chosen[case.id].trace_id,
            ),
        )
        if case.id in chosen
        else case
        for case in suite.cases
    ]
    return replace(suite, cases=cases), notes


def load_references(suite: TestSuite) -> TestSuite:
    """``suite`` with every recorded reference read (its calls filled in), so that a missing
    trace is a ``SuiteError`` naming the case before any trace is evaluated, and the workers
    of a batch do not read the file again."""
    cases = []
    for case in suite.cases:
        reference = case.reference
        if reference is not None and reference.calls is None:
            try:
                calls = recorded_calls(reference)
            except SuiteError as exc:
                raise SuiteError(f"case {case.id!r}: reference: {exc.message}") from None
            case = replace(case, reference=replace(reference, calls=calls))
        cases.append(case)
    return replace(suite, cases=cases)
