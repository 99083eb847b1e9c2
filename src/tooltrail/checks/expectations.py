"""The case expectations of docs/checks.md: one check class each, one score per check, exact
texts.

``case_checks`` compiles a case's fields to these checks in the contract's order: contains,
required_tool, forbidden_tool, tool_args, tool_arg_values, args_from (``checks.provenance``),
tool_order, turn_count_threshold, then the budgets (``checks.budgets``): max_latency_ms,
max_tool_calls, max_llm_calls, max_tokens, max_cost_usd (scorers follow, built by the
registry).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from tooltrail.checks.agents import allowed_agents_checks
from tooltrail.checks.argmatch import matches
from tooltrail.checks.budgets import MaxCost, MaxLatency, MaxLlmCalls, MaxTokens, MaxToolCalls
from tooltrail.checks.handoffs import handoff_checks
from tooltrail.checks.protocol import Check, CheckContext
from tooltrail.checks.provenance import ArgsFrom
from tooltrail.checks.score import Score, config_error
from tooltrail.equality import args_contain
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.suite.argrules import CompareArgs
from tooltrail.suite.contains import ContainsOptions
from tooltrail.suite.vocabulary import CASE_TERMS, is_set

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from tooltrail.suite.case import TestCase


def case_checks(case: TestCase) -> list[Check]:
    """The checks of ``case``'s expectation fields, in the contract's order (the order of
    ``suite.vocabulary.CASE_TERMS``)."""
    checks: list[Check] = []
    for key, build in CASE_BUILDERS:
        value = getattr(case, key)
        if is_set(value):
            checks.extend(build(case, value))
    return checks


def _span_ids(calls: list[ToolCall]) -> tuple[str, ...]:
    return tuple(c.span_id for c in calls if c.span_id)


def _spell(check: object, **texts: str) -> None:
    """Set a frozen check's texts, spelled once when it is built. A batch task keeps its
    checks for every trace (``score.CasePlans``): a text spelled per trace costs an
    f-string and a ``repr`` each time, and makes a new string that the row's redaction hashes
    and the task's ``RowCompactor`` looks up again; one spelled here is one object in every
    score (5% of the instructions of a trace's checks and row, ``benchmarks/bench_rows.py``).
    The configuration is not changed once the check is built."""
    for name, text in texts.items():
        object.__setattr__(check, name, text)


#: A text of a check spelled once (``_spell``): not an argument, not shown, not compared.
def _text() -> Any:
    return field(init=False, repr=False, compare=False)


@dataclass(slots=True, frozen=True)
class Contains:
    """``contains:{text}``: the casefolded text occurs in the stripped, casefolded reply; with
    ``options`` (``suite.contains.ContainsOptions``), in any reply of the run, and with the
    normalisation they ask for."""

    text: str
    options: ContainsOptions | None = None
    #: It reads the reply, not the calls (``checks.uncaptured``).
    reads_calls: ClassVar[bool] = False
    reads_reply: ClassVar[bool] = True
    score_name: str = _text()
    passed_text: str = _text()
    failed_text: str = _text()
    folded: str = _text()

    def __post_init__(self) -> None:
        text, options = self.text, self.options
        if options is not None and options.plain:
            object.__setattr__(self, "options", None)
            options = None
        every = options is not None and options.replies == "all"
        _spell(
            self,
            score_name=f"contains:{text}",
            passed_text=(
                f"A reply of the run contains required text: {text!r}."
                if every
                else f"Output contains required text: {text!r}."
            ),
            failed_text=(
                f"No reply of the run contains required text: {text!r}."
                if every
                else f"Output is missing required text: {text!r}."
            ),
            folded=str(text).casefold() if options is None else options.normalise(str(text)),
        )

    @property
    def reads_content(self) -> bool:
        """Every reply of the run is each turn's (``EvalTrace.turns``): read with content."""
        return self.options is not None and self.options.replies == "all"

    def evaluate(self, ctx: CheckContext) -> Score:
        options = self.options
        if options is not None:
            return self._normalised(ctx, options)
        output = ctx.output
        if output is None:
            reply = ""
        else:
            reply = (output if isinstance(output, str) else str(output)).strip().casefold()
        if self.folded in reply:
            return Score.passing(self.score_name, "contains", self.passed_text)
        return Score.failing(self.score_name, "contains", self.failed_text)

    def _normalised(self, ctx: CheckContext, options: ContainsOptions) -> Score:
        replies = [ctx.output]
        if options.replies == "all":
            replies = [turn.reply for turn in ctx.trace.turns] + replies
        wanted = self.folded
        for reply in replies:
            if reply is not None:
                text = reply if isinstance(reply, str) else str(reply)
                if wanted in options.normalise(text):
                    return Score.passing(self.score_name, "contains", self.passed_text)
        return Score.failing(self.score_name, "contains", self.failed_text)


@dataclass(slots=True, frozen=True)
class RequiredTool:
    """``required_tool:{t}``: ``t`` was called (the first call is the evidence)."""

    tool: str
    score_name: str = _text()
    passed_text: str = _text()
    failed_text: str = _text()

    def __post_init__(self) -> None:
        tool = self.tool
        _spell(
            self,
            score_name=f"required_tool:{tool}",
            passed_text=f"Required tool {tool!r} was called.",
            failed_text=f"Required tool {tool!r} was not called.",
        )

    def evaluate(self, ctx: CheckContext) -> Score:
        tool = self.tool
        view = ctx.view
        if tool in view.counts:
            span_id = view.calls[view.names.index(tool)].span_id
            return Score.passing(
                self.score_name,
                "required_tool",
                self.passed_text,
                span_ids=(span_id,) if span_id else (),
            )
        return Score.failing(self.score_name, "required_tool", self.failed_text)


@dataclass(slots=True, frozen=True)
class ForbiddenTool:
    """``forbidden_tool:{t}``: ``t`` was not called (every call of it is evidence against)."""

    tool: str
    score_name: str = _text()
    passed_text: str = _text()
    failed_text: str = _text()

    def __post_init__(self) -> None:
        tool = self.tool
        _spell(
            self,
            score_name=f"forbidden_tool:{tool}",
            passed_text=f"Forbidden tool {tool!r} was not called.",
            failed_text=f"Forbidden tool {tool!r} was called.",
        )

    def evaluate(self, ctx: CheckContext) -> Score:
        tool = self.tool
        view = ctx.view
        if tool in view:
            return Score.failing(
                self.score_name,
                "forbidden_tool",
                self.failed_text,
                span_ids=_span_ids(view.calls_of(tool)),
            )
        return Score.passing(self.score_name, "forbidden_tool", self.passed_text)


@dataclass(slots=True, frozen=True)
class ToolArgs:
    """``tool_args:{t}``: some call of ``t`` has every listed argument name (presence only)."""

    tool: str
    keys: list[str]
    #: ``keys`` as the texts show it, spelled once (as ``ToolArgValues.shown``).
    shown: str = _text()
    score_name: str = _text()
    passed_text: str = _text()
    failed_text: str = _text()

    def __post_init__(self) -> None:
        tool, shown = self.tool, str(self.keys)
        _spell(
            self,
            shown=shown,
            score_name=f"tool_args:{tool}",
            passed_text=f"Tool {tool!r} included required arguments {shown}.",
            failed_text=f"Tool {tool!r} did not include required arguments {shown}.",
        )

    def evaluate(self, ctx: CheckContext) -> Score:
        tool, keys, view = self.tool, self.keys, ctx.view
        name = self.score_name
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
                    self.passed_text,
                    span_ids=(call.span_id,) if call.span_id else (),
                )
        return Score.failing(
            name, "tool_args", self.failed_text, span_ids=_span_ids(view.calls_of(tool))
        )


@dataclass(slots=True, frozen=True)
class ToolArgValues:
    """``tool_arg_values:{t}``: some call of ``t`` has the expected arguments (subset)."""

    tool: str
    expected: dict[str, Any]
    #: The case's ``compare_args``: a tolerance, ignored paths, a nested subset
    #: (``checks.argmatch``); ``None`` (or the plain rule): the plain subset.
    compare: CompareArgs | None = None
    #: ``expected`` as the texts show it, spelled once per check, not per trace: ``str`` of
    #: ``{"order_id": "ORD-7731", "amount": 49.99}`` costs about 2 us, as much as the rest of
    #: the check, and a batch task keeps its checks for every trace (``score.CasePlans``).
    #: The configuration is not changed once the check is built.
    shown: str = _text()
    score_name: str = _text()
    passed_text: str = _text()
    #: The text when ``tool`` was not called (the other failure shows the calls' arguments).
    missing_text: str = _text()

    def __post_init__(self) -> None:
        tool, shown = self.tool, str(self.expected)
        if self.compare is not None and self.compare.plain:
            object.__setattr__(self, "compare", None)
        _spell(
            self,
            shown=shown,
            score_name=f"tool_arg_values:{tool}",
            passed_text=f"Tool {tool!r} was called with {shown}.",
            missing_text=f"Tool {tool!r} was not called, so {shown} was not passed.",
        )

    def evaluate(self, ctx: CheckContext) -> Score:
        tool, expected, view = self.tool, self.expected, ctx.view
        name = self.score_name
        if not isinstance(expected, dict):
            return config_error(
                name, "tool_arg_values", f"expected_tool_arguments[{tool!r}] must be a mapping."
            )
        count = view.counts.get(tool, 0)
        if not count:
            return Score.failing(name, "tool_arg_values", self.missing_text)
        index = view.names.index
        calls = view.calls
        contains = args_contain if self.compare is None else self._contains
        at = -1
        for _ in range(count):  # stop at the first call that matches
            at = index(tool, at + 1)
            call = calls[at]
            if contains(expected, call.args):
                span_id = call.span_id
                return Score.passing(
                    name,
                    "tool_arg_values",
                    self.passed_text,
                    span_ids=(span_id,) if span_id else (),
                )
        matched = view.calls_of(tool)
        seen = [call.args for call in matched]
        return Score.failing(
            name,
            "tool_arg_values",
            f"Tool {tool!r} was called with {seen}, not {self.shown}.",
            span_ids=_span_ids(matched),
        )

    def _contains(self, expected: dict[str, Any], args: dict[str, Any] | None) -> bool:
        """``args_contain`` under the case's ``compare_args`` (``checks.argmatch``)."""
        if not expected:
            return True
        compare = self.compare
        assert compare is not None  # chosen only when there is one
        return args is not None and matches(expected, args, "contains", compare)


@dataclass(slots=True, frozen=True)
class ToolOrder:
    """``tool_order``: each listed tool's first call comes after the previous one's first call."""

    order: list[str]
    #: ``order`` as the texts show it, spelled once (as ``ToolArgValues.shown``).
    shown: str = _text()
    passed_text: str = _text()

    def __post_init__(self) -> None:
        shown = str(self.order)
        _spell(
            self,
            shown=shown,
            passed_text=f"Tools were first called in the required order {shown}.",
        )

    def evaluate(self, ctx: CheckContext) -> Score:
        order, view = self.order, ctx.view
        counts = view.counts
        missing: list[str] = []
        for tool in order:
            if tool not in counts and tool not in missing:
                missing.append(tool)
        if missing:
            return Score.failing(
                "tool_order",
                "tool_order",
                f"Required order {self.shown} not met: {missing} never called.",
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
                    f"Required order {self.shown} not met: {order[n]!r} was called before "
                    f"{order[n - 1]!r}.",
                    span_ids=(span_id,) if span_id else (),
                )
        return Score.passing("tool_order", "tool_order", self.passed_text)


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


@dataclass(slots=True, frozen=True)
class TurnCount:
    """``turn_count_threshold``: the trace took at most ``max_turns`` turns."""

    max_turns: int
    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        max_turns = self.max_turns
        name = "turn_count_threshold"
        if isinstance(max_turns, bool) or not isinstance(max_turns, int) or max_turns < 0:
            return config_error(
                name, name, f"max_turns must be a non-negative integer, not {max_turns!r}."
            )
        count = trace_turn_count(ctx.trace)
        if count is None:
            return Score.failing(
                name,
                name,
                "Trace metadata is missing a positive integer turn_count, so the max_turns "
                "check could not be evaluated.",
            )
        if count <= max_turns:
            return Score.passing(
                name, name, f"Turn count {count} meets the {max_turns} turn limit."
            )
        return Score.failing(name, name, f"Turn count {count} exceeds the {max_turns} turn limit.")


#: Expectation field -> the checks a value of it compiles to (``case``, value) -> checks.
_BUILD: dict[str, Callable[[TestCase, Any], Iterable[Check]]] = {
    "expected_contains": lambda case, texts: [
        Contains(text, case.contains_options) for text in texts
    ],
    "required_tools": lambda case, tools: [RequiredTool(tool) for tool in tools],
    "forbidden_tools": lambda case, tools: [ForbiddenTool(tool) for tool in tools],
    "required_tool_arguments": lambda case, tools: [
        ToolArgs(tool, keys) for tool, keys in tools.items()
    ],
    "expected_tool_arguments": lambda case, tools: [
        ToolArgValues(tool, expected, case.compare_args) for tool, expected in tools.items()
    ],
    "args_from": lambda case, tools: [
        ArgsFrom(tool, arguments, case.compare_args) for tool, arguments in tools.items()
    ],
    "required_tool_order": lambda case, order: [ToolOrder(order)],
    "allowed_agents": allowed_agents_checks,
    "handoffs": handoff_checks,
    "max_turns": lambda case, limit: [TurnCount(limit)],
    "max_latency_ms": lambda case, limit: [MaxLatency(limit)],
    "max_tool_calls": lambda case, limit: [MaxToolCalls(limit)],
    "max_llm_calls": lambda case, limit: [MaxLlmCalls(limit)],
    "max_tokens": lambda case, limit: [MaxTokens(limit)],
    "max_cost_usd": lambda case, limit: [MaxCost(limit, case.prices)],
}
#: The builders in the table's order (a field without a builder is an import error here).
CASE_BUILDERS = tuple((term.key, _BUILD[term.key]) for term in CASE_TERMS)
