"""Matching a run against a reference trajectory: call matching modes, argument rules, and
reading a recorded reference.

Modes (LangChain agentevals' vocabulary): ``strict`` the same calls in the same order;
``unordered`` the same calls in any order (the same multiset); ``subset`` every call of the run
is in the reference; ``superset`` every reference call is in the run. Two calls are the same
when their tool names are equal and their arguments match under the tool's rule: ``exact``,
``ignore``, ``subset`` (the run's arguments are a subset of the reference's), ``superset``
(the run's arguments hold every reference argument), or a registered argument comparator.
Unordered modes pair calls by a maximum matching, so the verdict never depends on which of two
candidate calls was tried first.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.score import Score, config_error
from tooltrail.equality import values_equal
from tooltrail.hints import did_you_mean
from tooltrail.model import ToolCall
from tooltrail.suite.errors import SuiteError
from tooltrail.suite.reference import Reference

if TYPE_CHECKING:
    from tooltrail.checks.registry import Registry
    from tooltrail.model import EvalTrace
    from tooltrail.otlp import Diagnostic
    from tooltrail.suite.testsuite import TestSuite

#: Call matching modes against a reference (each gives 1.0 or 0.0).
MATCH_MODES = ("strict", "unordered", "subset", "superset")
#: How a run call's arguments are compared with its reference call's.
ARGS_MODES = ("exact", "ignore", "subset", "superset")
#: The keys of a ``tool_args`` entry that names a registered comparator.
COMPARATOR_KEYS = ("check", "config")
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
    """How one tool's arguments are compared: an ``ARGS_MODES`` mode, or a comparator."""

    mode: str = "exact"
    check: str | None = None
    comparator: Any = None

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


def rules_problem(
    args: Any, tool_args: Any, registry: Registry | None
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


def build_rules(tool_args: Mapping[str, Any] | None, registry: Registry) -> dict[str, ArgRule]:
    """The per-tool rules of a valid ``tool_args``, comparators built from ``registry``."""
    rules: dict[str, ArgRule] = {}
    for tool, rule in (tool_args or {}).items():
        if isinstance(rule, str):
            rules[tool] = ArgRule(mode=rule)
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
