"""The rules a set of recorded runs all keep: the inverse of the checks (``tooltrail suggest``).

Given runs (``EvalTrace``), each case of the draft (``suite.draft.DraftCase``) gets only rules
that **every** run its ``match:`` selects passes, each computed with the check's own reading:

- ``required_tools``: the tools every run called (``required_tool``);
- ``required_tool_order``: the longest list of those tools whose first calls every run made in
  that order (``tool_order``'s first-call rule);
- ``expected_tool_arguments``: per required tool, the arguments with one value in every call
  of it in every run (``tool_arg_values``, value equality of ``equality``); a value the
  redaction would hide, or longer than ``MAX_VALUE_CHARS`` written out, is not pinned;
- ``required_tool_arguments``: the other argument names present in every such call
  (``tool_args``);
- ``tool_call_precision`` over the tools any run called, when every run called one;
- ``no_redundant_tool_calls`` when no run repeated a call (the scorer's own index,
  ``checks.view``);
- with a reference run, ``trajectory_match`` in the strictest mode and argument rule every run
  meets (``checks.reference.Matcher``), or none.

The case's ``match:`` is the first of agent name, service name and root span name that every
run has; a case is made per value, and its rules come from every run its ``match:`` selects
(``suite.match.Match``), so no case judges a run it did not learn from. Runs whose calls'
content was not captured (``EvalTrace.content_missing``) are left out: every call check gives
them an error score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.checks.reference import ArgRule, Matcher
from tooltrail.checks.view import trace_view
from tooltrail.equality import args_contain, values_equal
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.redact import DEFAULT_REDACTION, Redaction
from tooltrail.suite.draft import DraftCase, DraftReference, yaml_scalar
from tooltrail.suite.match import Match

#: ``match:`` keys tried in order, each with the metadata key it reads.
MATCH_KEYS = (("agent_name", "agent_name"), ("service_name", "service.name"),
              ("root_span_name", "root_span_name"))  # fmt: skip
#: A value longer than this, as YAML, is not pinned: the name alone is required.
MAX_VALUE_CHARS = 200
#: The trajectory modes, strictest first, with the argument rules tried for each.
REFERENCE_MODES = ("strict", "unordered", "superset", "subset")


@dataclass(slots=True)
class Suggestion:
    """The draft's cases, and what was left out of them (this module's words)."""

    cases: list[DraftCase] = field(default_factory=list)
    runs: int = 0
    notes: list[str] = field(default_factory=list)


class SuggestError(ValueError):
    """Nothing to suggest from (no usable run, an unknown reference)."""


def suggest_cases(
    traces: Sequence[EvalTrace],
    *,
    reference: str | None = None,
    redaction: Redaction = DEFAULT_REDACTION,
) -> Suggestion:
    """The cases every rule of which each run they select keeps. ``reference``: a trace id of
    ``traces`` whose calls become the reference trajectory of its case."""
    suggestion = Suggestion()
    usable = []
    for trace in traces:
        if trace.content_missing is not None:
            suggestion.notes.append("a run whose tool calls' content was not captured was left out")
        else:
            usable.append(trace)
    if not usable:
        raise SuggestError("no run to learn from (no trace, or none with its calls captured)")
    chosen: EvalTrace | None = None
    if reference is not None:
        chosen = next((t for t in usable if t.trace_id == reference), None)
        if chosen is None:
            raise SuggestError(f"--reference {reference!r} is not the trace id of an input run")
    suggestion.runs = len(usable)
    for match in _matches(usable):
        selected = [t for t in usable if match is None or _selector(match).selects(t)]
        case = case_rules(selected, _case_id(match, usable), match, redaction)
        if chosen is not None and any(t is chosen for t in selected):
            case.reference = reference_rules(chosen, selected, redaction)
            if case.reference is None:
                case.notes.append("no trajectory_match: no mode holds for every run")
        suggestion.cases.append(case)
    return suggestion


def _selector(match: dict[str, str]) -> Match:
    return Match(**match)  # type: ignore[arg-type]


def _matches(traces: Sequence[EvalTrace]) -> list[dict[str, str] | None]:
    """One ``match:`` per value of the first key every run has (in first-seen order); a list
    ``None`` (``match: all``) when none is."""
    for key, metadata_key in MATCH_KEYS:
        values = [_single(t.metadata.get(metadata_key)) for t in traces]
        if all(values):
            return [{key: v} for v in dict.fromkeys(v for v in values if v)]
    return [None]


def _single(value: Any) -> str | None:
    """A metadata value a ``match:`` can name: a string, or the first of a list of them."""
    if isinstance(value, (list, tuple)):
        value = value[0] if value else None
    return value if isinstance(value, str) and value else None


def _case_id(match: dict[str, str] | None, traces: Sequence[EvalTrace]) -> str:
    if match is None:
        return "suggested"
    return next(iter(match.values()))


def case_rules(
    traces: Sequence[EvalTrace],
    case_id: str,
    match: dict[str, str] | None,
    redaction: Redaction = DEFAULT_REDACTION,
) -> DraftCase:
    """The rules every one of ``traces`` keeps, as one case."""
    views = [trace_view(t) for t in traces]
    n = len(traces)
    case = DraftCase(id=case_id, match=match, runs=n)
    first_seen: dict[str, None] = {}
    for view in views:
        first_seen.update(dict.fromkeys(view.names))
    called_by = {tool: sum(1 for v in views if tool in v) for tool in first_seen}
    case.required_tools = [tool for tool, count in called_by.items() if count == n]
    case.tool_order = _order(case.required_tools, views)
    for tool in case.required_tools:
        calls = [call for view in views for call in view.calls_of(tool)]
        values, keys = _arguments(calls, redaction)
        if values:
            case.argument_values[tool] = values
        if keys:
            case.argument_keys[tool] = keys
    if all(view.size for view in views):
        case.allowed_tools = sorted(called_by.items())
    else:
        case.notes.append("no tool_call_precision: a run called no tool")
    case.no_redundant_calls = not any(view.duplicates() for view in views)
    return case


def _order(tools: list[str], views: Sequence[Any]) -> list[str]:
    """The longest list of ``tools`` that every run first called in that order (ties: the
    first run's order); empty when that is one tool or none."""
    if len(tools) < 2:
        return []
    firsts = [{tool: view.first(tool) for tool in tools} for view in views]
    base = sorted(tools, key=lambda t: firsts[0][t])

    def before(a: str, b: str) -> bool:
        return all(first[a] < first[b] for first in firsts)

    # Longest chain in the order "first called before, in every run" (a DAG over ``base``).
    best: dict[str, list[str]] = {}
    for tool in base:
        chains = [best[p] for p in base[: base.index(tool)] if before(p, tool)]
        longest = max(chains, key=len, default=[])
        best[tool] = [*longest, tool]
    chain = max(best.values(), key=len)
    return chain if len(chain) > 1 else []


def _arguments(calls: Sequence[ToolCall], redaction: Redaction) -> tuple[dict[str, Any], list[str]]:
    """Of the calls of one tool: the arguments with one value in all of them (writable, not
    hidden by the redaction), and the other names present in all of them."""
    if not calls or any(not isinstance(call.args, dict) for call in calls):
        return {}, []
    first = calls[0].args
    assert first is not None
    present = [k for k in first if all(k in (c.args or {}) for c in calls)]
    values: dict[str, Any] = {}
    for key in present:
        value = first[key]
        if not all(values_equal(value, (c.args or {})[key]) for c in calls):
            continue
        if not values_equal(value, value):  # NaN: equal to nothing, not even itself
            continue
        cleaned, changed = redaction.clean({key: value})
        if changed or len(yaml_scalar(value)) > MAX_VALUE_CHARS:
            continue
        values[key] = value
    assert all(args_contain(values, call.args) for call in calls)
    keys = [k for k in present if k not in values]
    return values, keys


def reference_rules(
    reference: EvalTrace, traces: Sequence[EvalTrace], redaction: Redaction = DEFAULT_REDACTION
) -> DraftReference | None:
    """``reference``'s calls (arguments redacted) and the strictest ``trajectory_match`` mode
    and argument rule all ``traces`` meet against them; ``None`` when no mode does."""
    calls = [
        ToolCall(name=call.name, args=_redacted_args(call.args, redaction))
        for call in reference.tool_calls
    ]
    varying = _varying_tools(calls, traces)
    rules_tried: list[tuple[str, dict[str, str]]] = [("exact", {})]
    if varying:
        rules_tried.append(("exact", dict.fromkeys(varying, "ignore")))
    rules_tried.append(("ignore", {}))
    for mode in REFERENCE_MODES:
        for args, tool_args in rules_tried:
            if all(_holds(mode, args, tool_args, calls, t.tool_calls) for t in traces):
                return DraftReference(
                    calls=[(c.name, c.args) for c in calls],
                    mode=mode,
                    args=args,
                    tool_args=tool_args,
                )
    return None


def _redacted_args(args: dict[str, Any] | None, redaction: Redaction) -> dict[str, Any] | None:
    if args is None:
        return None
    cleaned = redaction.clean(args)[0]
    return cleaned if isinstance(cleaned, dict) else None


def _varying_tools(reference: Sequence[ToolCall], traces: Sequence[EvalTrace]) -> list[str]:
    """Tools of the reference some run calls with arguments no reference call of it has."""
    by_tool: dict[str, list[dict[str, Any] | None]] = {}
    for call in reference:
        by_tool.setdefault(call.name, []).append(call.args)
    varying: dict[str, None] = {}
    for trace in traces:
        for call in trace.tool_calls:
            known = by_tool.get(call.name)
            if known is not None and not any(
                ref is None or (call.args is not None and _same(ref, call.args)) for ref in known
            ):
                varying[call.name] = None
    return list(varying)


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)


def _holds(
    mode: str,
    args: str,
    tool_args: dict[str, str],
    reference: Sequence[ToolCall],
    run: Sequence[ToolCall],
) -> bool:
    """Whether ``run`` matches ``reference`` in ``mode`` as ``trajectory_match`` decides."""
    matcher = Matcher(
        run=list(run),
        reference=list(reference),
        default=ArgRule(mode=args),
        rules={tool: ArgRule(mode=rule) for tool, rule in tool_args.items()},
    )
    if mode == "strict":
        return matcher.strict() is None
    return matcher.unmatched(mode) is None
