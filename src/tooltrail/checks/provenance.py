"""``args_from``: where each value of a tool's arguments came from (docs/checks.md,
"Argument provenance").

A case's ``args_from: {TOOL: {ARGUMENT: SOURCES}}`` says, per argument path, where its value
must be found in the recorded run: ``user`` (a user message of the run, up to the call's
turn), ``result_of: T`` (the recorded result of an earlier call of ``T`` that did not fail, at
``path`` or anywhere in it), ``literal`` (one of the listed values); several sources: any one.
Every call of the tool is checked, every value an argument path names in it (``items[*].sku``
names one per item); a value found in none of its sources fails the check: an amount the
model invented, though a lookup returned the real one. Values compare with the argument
checks' equality and the case's ``compare_args`` tolerance; text (a user message, a result
that is text) holds a string when the string occurs in it, and a number when a number written
in it equals it (``$1,250.00`` holds ``1250``).

Sources that were not recorded (the run's user messages or the tool's results: content
capture off, or a trace read without content) give no verdict: the score is
``ContentNotCaptured``, unless another value of the run fails outright. The check says it
reads content when a source is ``user`` or ``result_of``, so a run reads results and user
messages only for a suite that asks (``score.needs``: ``reads_content``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from tooltrail.checks.argmatch import values_at
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.score import Score, config_error
from tooltrail.checks.uncaptured import CONTENT_NOT_CAPTURED
from tooltrail.equality import Tolerance, numbers_close, values_close, values_equal
from tooltrail.model import ToolCall
from tooltrail.suite.argrules import (
    ArgSource,
    CompareArgs,
    RuleError,
    parse_path,
    read_sources,
    show_path,
)

#: Values a passing explanation lists before it says how many more there were.
MAX_LISTED = 5
#: A number written in text: digits, with thousands separators or not, a decimal part; a
#: minus sign only where no word goes before it (``ORD-7731`` writes 7731).
_NUMBER = re.compile(r"(?<![\w.])(?:(?<![\w-])-)?(?:\d{1,3}(?:[,_']\d{3})+|\d+)(?:\.\d+)?(?!\d)")
_SEPARATORS = str.maketrans("", "", ",_'")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _numbers_in(text: str) -> list[int | float]:
    found: list[int | float] = []
    for match in _NUMBER.finditer(text):
        spelled = match.group().translate(_SEPARATORS)
        found.append(float(spelled) if "." in spelled else int(spelled))
    return found


def appears(value: Any, text: str, tolerance: Tolerance | None) -> bool:
    """Whether text holds ``value``: a string occurring in it, a number written in it (within
    ``tolerance``), a list or object whose every string and number does; booleans and null
    have no written form."""
    if isinstance(value, str):
        return value in text
    if _is_number(value):
        return any(
            values_equal(value, number)
            or (tolerance is not None and numbers_close(value, number, tolerance))
            for number in _numbers_in(text)
        )
    leaves = [leaf for leaf in _leaves(value) if isinstance(leaf, str) or _is_number(leaf)]
    return bool(leaves) and all(appears(leaf, text, tolerance) for leaf in leaves)


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _anywhere(result: Any) -> list[Any]:
    """The result and every value inside it, at any depth."""
    found = [result]
    if isinstance(result, dict):
        for item in result.values():
            found += _anywhere(item)
    elif isinstance(result, (list, tuple)):
        for item in result:
            found += _anywhere(item)
    return found


@dataclass(frozen=True, slots=True)
class Search:
    """What looking for one value in its sources found: the place it came from, or what was
    searched and what was not recorded."""

    found: str | None = None
    looked: tuple[str, ...] = ()
    unrecorded: tuple[str, ...] = ()


def _numbers(positions: list[int]) -> str:
    return str([p + 1 for p in positions])


@dataclass(slots=True, frozen=True)
class ArgsFrom:
    """``args_from:{tool}``: every value of the named argument paths of every call of
    ``tool`` came from one of its sources (module docstring)."""

    tool: str
    #: argument path -> its sources (``suite.argrules.read_sources``: ``ArgSource`` objects,
    #: or the mappings a suite file writes).
    arguments: Any
    #: The case's ``compare_args`` (only its tolerance applies here).
    compare: CompareArgs | None = None
    #: The sources read (path -> (steps, sources)), or why they cannot be.
    read: Any = field(default=None, init=False, repr=False, compare=False)
    score_name: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "score_name", f"args_from:{self.tool}")
        object.__setattr__(self, "read", self._read())

    def _read(self) -> dict[str, tuple[Any, tuple[ArgSource, ...]]] | str:
        where = f"args_from[{self.tool!r}]"
        if not isinstance(self.arguments, dict) or not self.arguments:
            return f"{where} must be a mapping of argument path -> sources."
        read = {}
        for path, sources in self.arguments.items():
            try:
                steps = parse_path(path)
            except ValueError as exc:
                return f"{where}: {exc}."
            try:
                read[path] = (steps, read_sources(sources))
            except RuleError as exc:
                at = f"[{path!r}]" + "".join(f"[{part!r}]" for part in exc.where)
                return f"{where}{at}: {exc.message}."
        return read

    @property
    def reads_content(self) -> bool:
        """Whether a source is a user message or a result: traces are read with content."""
        read = self.read
        return isinstance(read, dict) and any(
            source.kind != "literal" for _, sources in read.values() for source in sources
        )

    def evaluate(self, ctx: CheckContext) -> Score:
        name, tool, read = self.score_name, self.tool, self.read
        if isinstance(read, str):
            return config_error(name, "args_from", read)
        view = ctx.view
        positions = view.positions(tool)
        names = list(read)
        if not positions:
            return Score.passing(
                name,
                "args_from",
                f"Tool {tool!r} was not called, so no argument's source was checked.",
            )
        tolerance = self.compare.tolerance if self.compare is not None else None
        calls = view.calls
        found: list[str] = []
        #: The first value that could not be checked: its call's position, the explanation.
        unrecorded: tuple[int, str] | None = None
        for position in positions:
            call = calls[position]
            k = position + 1
            span = (call.span_id,) if call.span_id else ()
            if call.args is None:
                if unrecorded is None:
                    unrecorded = (
                        position,
                        f"Content not captured: call {k} {tool!r} records no arguments, so the "
                        f"sources of {names} could not be checked.",
                    )
                continue
            for steps, sources in read.values():
                for at, value in values_at(call.args, steps):
                    pair = {show_path(at): value}
                    search = self._search(value, sources, ctx, position, call, tolerance)
                    if search.found is not None:
                        found.append(f"call {k} {pair} from {search.found}")
                    elif not search.unrecorded:
                        return Score.failing(
                            name,
                            "args_from",
                            f"Call {k} {tool!r}: argument {pair} has no recorded source: "
                            f"looked in {'; '.join(search.looked)}.",
                            span_ids=span,
                        )
                    elif unrecorded is None:
                        unrecorded = (
                            position,
                            f"Content not captured: call {k} {tool!r}: the sources of argument "
                            f"{pair} were not recorded ({'; '.join(search.unrecorded)}).",
                        )
        if unrecorded is not None:
            call = calls[unrecorded[0]]
            return Score.failing(
                name,
                "args_from",
                unrecorded[1],
                span_ids=(call.span_id,) if call.span_id else (),
                error=CONTENT_NOT_CAPTURED,
            )
        span_ids = tuple([s for s in [calls[p].span_id for p in positions] if s])
        if not found:
            return Score.passing(
                name,
                "args_from",
                f"Tool {tool!r} was called without the arguments {names}, so no source was "
                "checked.",
                span_ids=span_ids,
            )
        listed = "; ".join(found[:MAX_LISTED])
        if len(found) > MAX_LISTED:
            listed += f"; and {len(found) - MAX_LISTED} more"
        return Score.passing(
            name,
            "args_from",
            f"Arguments {names} of {tool!r} came from their sources: {listed}.",
            span_ids=span_ids,
        )

    def _search(
        self,
        value: Any,
        sources: tuple[ArgSource, ...],
        ctx: CheckContext,
        position: int,
        call: ToolCall,
        tolerance: Tolerance | None,
    ) -> Search:
        looked: list[str] = []
        unrecorded: list[str] = []
        for source in sources:
            if source.kind == "literal":
                if any(values_close(v, value, tolerance) for v in source.values):
                    return Search(found=f"the literals {list(source.values)}")
                looked.append(f"the literals {list(source.values)}")
            elif source.kind == "user":
                turns = [t for t in ctx.trace.turns if t.number <= call.turn]
                said = [t for t in turns if t.input is not None]
                for turn in said:
                    if appears(value, turn.input, tolerance):  # type: ignore[arg-type]
                        return Search(found=f"the user message of turn {turn.number}")
                if said:
                    looked.append(f"the user messages of turns {[t.number for t in said]}")
                missing = [t.number for t in turns if t.input is None]
                if not turns:
                    unrecorded.append("the run's user messages")
                elif missing:
                    unrecorded.append(f"the user messages of turns {missing}")
            else:
                place = self._result(value, source, ctx, position, tolerance)
                if place.found is not None:
                    return place
                looked += place.looked
                unrecorded += place.unrecorded
        return Search(looked=tuple(looked), unrecorded=tuple(unrecorded))

    @staticmethod
    def _result(
        value: Any,
        source: ArgSource,
        ctx: CheckContext,
        position: int,
        tolerance: Tolerance | None,
    ) -> Search:
        """``value`` in the results of the calls of ``source.tool`` before ``position``."""
        tool = str(source.tool)
        view = ctx.view
        at = f" at {source.path!r}" if source.path is not None else ""
        earlier = [p for p in view.positions(tool) if p < position]
        usable = [p for p in earlier if view.calls[p].status != "error"]
        if not usable:
            failed = " that did not fail" if earlier else ""
            return Search(looked=(f"no earlier call of {tool!r}{failed}",))
        recorded = []
        for p in usable:
            result = view.calls[p].result
            if result is None:
                continue
            recorded.append(p)
            if source.steps is not None:
                candidates = [v for _, v in values_at(result, source.steps)]
                if any(values_close(v, value, tolerance) for v in candidates):
                    return Search(found=f"the result of {tool!r} (call {p + 1}){at}")
            elif isinstance(result, str):
                if appears(value, result, tolerance):
                    return Search(found=f"the result of {tool!r} (call {p + 1})")
            elif any(values_close(v, value, tolerance) for v in _anywhere(result)):
                return Search(found=f"the result of {tool!r} (call {p + 1})")
        missing = [p for p in usable if p not in recorded]
        return Search(
            looked=(f"the results of {tool!r} (calls {_numbers(recorded)}){at}",)
            if recorded
            else (),
            unrecorded=(f"the results of {tool!r} (calls {_numbers(missing)})",) if missing else (),
        )
