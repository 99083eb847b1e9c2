"""Converted traces for a person to read: ``tooltrail convert --format table`` and ``tree``.

One block per trace (or conversation): a header line (trace id, service, agent, case, calls,
wall time), then each call with its turn, agent, tool, arguments, status, duration and, when
content was read, a summary of its result; each turn's user input (with content) and the
reply. ``table`` lines the calls up in columns; ``tree`` nests them under their turn (and
agent, when a trace has several).

Everything a trace carries is untrusted text: it is redacted (``Redaction.clean`` for
arguments and results, ``redact_text`` for free text, the caller's rules) and written through
``pipeline.console.console_safe``, so a value cannot start a line, draw a column or colour the
terminal; only this module's own separators do. Cells are cut to the width given (the
terminal's), never wrapped. Colour (bold headers, red errors) only when asked: the command
asks on a terminal without ``NO_COLOR``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from tooltrail.model import EvalTrace, ToolCall
from tooltrail.pipeline.console import console_safe
from tooltrail.redact import DEFAULT_REDACTION, Redaction

#: The narrowest layout the views make; a narrower terminal gets lines of this width.
MIN_WIDTH = 60
#: Widest tool and agent columns (longer names are cut).
MAX_NAME = 32
#: Characters of a value read before it is cut for a cell (the cell is narrower still).
_READ_CHARS = 2000
_BOLD, _DIM, _RED, _RESET = "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[0m"


@dataclass(frozen=True, slots=True)
class ViewStyle:
    """How a view is drawn: ``width`` in characters, ``color`` (ANSI), ``content`` (results,
    inputs; the trace must be read with ``content=True``), ``ascii`` (no box-drawing
    characters, for a stream that cannot encode them) and the ``redaction`` rules."""

    width: int = 100
    color: bool = False
    content: bool = False
    ascii: bool = False
    redaction: Redaction = DEFAULT_REDACTION


def iter_view(traces: Iterable[EvalTrace], view: str, style: ViewStyle) -> Iterator[str]:
    """The lines (each ending in a newline) of ``view`` (``table`` or ``tree``), a blank line
    between two traces."""
    render = trace_table if view == "table" else trace_tree
    for n, trace in enumerate(traces):
        if n:
            yield "\n"
        for line in render(trace, style):
            yield (line.replace("µs", "us") if style.ascii else line) + "\n"


# -- cells ---------------------------------------------------------------------------------


def fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, ``...`` marking the cut."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return text[: max(width - 3, 0)] + "..."[: min(3, width)]


def safe(text: str, limit: int = _READ_CHARS) -> str:
    """Untrusted text on one line, escaped (``console_safe``)."""
    return console_safe(text, limit)


def value_text(value: Any) -> str:
    """A value as a person reads it: text quoted as JSON does, numbers and booleans as JSON,
    lists and mappings as compact JSON."""
    try:
        return orjson.dumps(value).decode()
    except (TypeError, orjson.JSONEncodeError):  # integers past 64 bits, odd objects
        return str(value)


def arguments_text(args: dict[str, Any] | None, rules: Redaction) -> str:
    """``key=value, ...`` of redacted arguments; ``(not captured)`` for ``None``."""
    if args is None:
        return "(not captured)"
    cleaned = rules.clean(args)[0]
    if not isinstance(cleaned, dict):
        return safe(value_text(cleaned))
    return safe(", ".join(f"{key}={value_text(value)}" for key, value in cleaned.items()))


def result_text(result: Any, rules: Redaction) -> str:
    """A call's result, redacted, on one line; empty when the trace does not record it."""
    if result is None:
        return ""
    if isinstance(result, str):
        return safe(rules.redact_text(result[:_READ_CHARS]))
    return safe(value_text(rules.clean(result)[0]))


def free_text(text: str | None, rules: Redaction) -> str:
    """A reply, an input or an error: redacted, its surrounding white space dropped, escaped."""
    return "" if text is None else safe(rules.redact_text(text[:_READ_CHARS]).strip())


def duration_text(call: ToolCall) -> str:
    """The call's wall time (``-`` when the trace has no times for it: a model-side call)."""
    if call.end_ns <= call.start_ns or call.start_ns <= 0:
        return "-"
    return milliseconds_text((call.end_ns - call.start_ns) / 1e6)


def milliseconds_text(ms: float) -> str:
    """``0.21 ms``, ``37 µs``, ``12 ms``, ``1.52 s``: three significant figures at most."""
    if not math.isfinite(ms) or ms < 0:
        return "-"
    if ms >= 1000:
        return f"{ms / 1000:.3g} s"
    if ms >= 1:
        return f"{ms:.3g} ms"
    return f"{ms * 1000:.3g} µs"


def status_text(call: ToolCall) -> str:
    """``ok`` (the span recorded no error, whether its status was set or not) or ``error``."""
    return "error" if call.status == "error" else "ok"


def _paint(style: ViewStyle, code: str, text: str) -> str:
    return f"{code}{text}{_RESET}" if style.color and text else text


def header(trace: EvalTrace, style: ViewStyle) -> str:
    """``trace ID  service S  agent A  case C  N calls  T ms`` (and what is partial)."""
    metadata = trace.metadata
    parts = [f"trace {safe(str(trace.trace_id), 80)}"]
    for label, key in (("case", "case_id"), ("service", "service.name"), ("agent", "agent_name")):
        found = metadata.get(key)
        if isinstance(found, (list, tuple)):
            found = ",".join(str(x) for x in found)
        if found:
            parts.append(f"{label} {safe(str(found), MAX_NAME * 2)}")
    calls = len(trace.tool_calls)
    parts.append(f"{calls} call{'' if calls == 1 else 's'}")
    latency = metadata.get("total_latency_ms")
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        parts.append(milliseconds_text(float(latency)))
    if trace.partial:
        parts.append("partial")
    width = max(style.width, MIN_WIDTH)
    lines = [_paint(style, _BOLD, line) for line in _fold(parts, width)]
    if trace.content_missing is not None:
        note = f"  content not captured: {safe(trace.content_missing)}"
        lines.append(_paint(style, _DIM, fit(note, width)))
    return "\n".join(lines)


def _fold(parts: Sequence[str], width: int) -> list[str]:
    """``parts`` joined by two spaces, folded onto more lines (indented) where one is full."""
    lines: list[str] = []
    current = ""
    for part in parts:
        joined = f"{current}  {part}" if current else part
        if current and len(joined) > width:
            lines.append(current)
            current = f"  {part}"
        else:
            current = joined
    lines.append(current)
    return [fit(line, width) for line in lines]


# -- table ---------------------------------------------------------------------------------


def trace_table(trace: EvalTrace, style: ViewStyle) -> list[str]:
    """One trace as a header and a table of its calls, then its turns' inputs and reply."""
    rules = style.redaction
    width = max(style.width, MIN_WIDTH)
    calls = trace.tool_calls
    turns = len({call.turn for call in calls}) > 1 or len(trace.turns) > 1
    agents = len({call.agent for call in calls}) > 1  # one agent: the header names it
    rows = [
        _row(n, call, rules, style.content, turns=turns, agents=agents)
        for n, call in enumerate(calls, 1)
    ]
    titles = ["#"] + (["turn"] if turns else []) + (["agent"] if agents else [])
    titles += ["tool", "arguments", "status", "time"] + (["result"] if style.content else [])
    lines = [header(trace, style)]
    if rows:
        widths = _widths(titles, rows, width)
        lines.append(_paint(style, _DIM, _line(titles, widths)))
        for cells, call in zip(rows, calls, strict=True):
            line = _line(cells, widths)
            lines.append(_paint(style, _RED, line) if call.status == "error" else line)
            if call.error and call.status == "error":
                lines.append(fit(f"   error: {free_text(call.error, rules)}", width))
    else:
        lines.append("  (no tool calls)")
    lines.extend(_turn_lines(trace, style, width, rules))
    return lines


def _row(
    n: int, call: ToolCall, rules: Redaction, content: bool, *, turns: bool, agents: bool
) -> list[str]:
    cells = [str(n)]
    if turns:
        cells.append(str(call.turn))
    if agents:
        cells.append(safe(call.agent or "", MAX_NAME))
    cells += [
        safe(call.name, MAX_NAME),
        arguments_text(call.args, rules),
        status_text(call),
        duration_text(call),
    ]
    if content:
        cells.append(result_text(call.result, rules))
    return cells


def _widths(titles: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[int]:
    """Each column as wide as its widest cell (names capped), the free text columns
    (arguments, result) sharing what the others leave of ``width``."""
    free = [i for i, t in enumerate(titles) if t in ("arguments", "result")]
    widths = [
        min(max(len(titles[i]), *(len(r[i]) for r in rows)), MAX_NAME) for i in range(len(titles))
    ]
    fixed = sum(w for i, w in enumerate(widths) if i not in free) + 2 * (len(titles) - 1) + 2
    room = max(width - fixed, 12 * len(free))
    wanted = [max(len(titles[i]), *(len(r[i]) for r in rows)) for i in free]
    if sum(wanted) <= room:
        shares = wanted
    elif len(free) == 2:
        first = min(wanted[0], max(room - wanted[1], room * 3 // 5))
        shares = [first, room - first]
    else:
        shares = [room]
    for i, share in zip(free, shares, strict=True):
        widths[i] = max(share, len(titles[i]))
    return widths


def _line(cells: Sequence[str], widths: Sequence[int]) -> str:
    padded = [fit(cell, w).ljust(w) for cell, w in zip(cells, widths, strict=True)]
    return ("  " + "  ".join(padded)).rstrip()


def _turn_lines(trace: EvalTrace, style: ViewStyle, width: int, rules: Redaction) -> list[str]:
    """With content, each turn's user input and reply; else the trace's reply."""
    lines: list[str] = []
    if style.content and trace.turns:
        several = len(trace.turns) > 1
        for turn in trace.turns:
            label = f"turn {turn.number} " if several else ""
            if turn.input is not None:
                lines.append(fit(f"  {label}user: {free_text(turn.input, rules)}", width))
            if turn.reply is not None:
                lines.append(fit(f"  {label}reply: {free_text(turn.reply, rules)}", width))
        return lines
    reply = "(no reply in the trace)" if trace.output is None else free_text(trace.output, rules)
    return [fit(f"  reply: {reply}", width)]


# -- tree ----------------------------------------------------------------------------------


def trace_tree(trace: EvalTrace, style: ViewStyle) -> list[str]:
    """One trace as a tree: turns, then (with several agents) agents, then calls, each call
    ``tool(arguments)  status  time`` and, with content, its result below it."""
    rules = style.redaction
    width = max(style.width, MIN_WIDTH)
    branch, last, pipe, blank = (
        ("|-- ", "`-- ", "|   ", "    ") if style.ascii else ("├── ", "└── ", "│   ", "    ")
    )
    agents = len({call.agent for call in trace.tool_calls if call.agent}) > 1
    numbers = sorted({call.turn for call in trace.tool_calls} | {t.number for t in trace.turns})
    turns = {t.number: t for t in trace.turns}
    lines = [header(trace, style)]

    def add(prefix: str, is_last: bool, text: str, code: str | None = None) -> str:
        line = fit(prefix + (last if is_last else branch) + text, width)
        lines.append(_paint(style, code, line) if code else line)
        return prefix + (blank if is_last else pipe)

    for t_index, number in enumerate(numbers or [1]):
        inner = add("", t_index == len(numbers or [1]) - 1, f"turn {number}")
        children: list[tuple[str, Any]] = []
        turn = turns.get(number)
        if style.content and turn is not None and turn.input is not None:
            children.append(("user", turn.input))
        calls = [call for call in trace.tool_calls if call.turn == number]
        if agents:
            for agent in dict.fromkeys(call.agent or "" for call in calls):
                children.append(("agent", (agent, [c for c in calls if (c.agent or "") == agent])))
        else:
            children.extend(("call", call) for call in calls)
        reply = turn.reply if style.content and turn is not None else None
        if reply is None and number == (numbers or [1])[-1] and not (style.content and turns):
            reply = trace.output
        if reply is not None:
            children.append(("reply", reply))
        if not children:
            children.append(("note", "(no tool calls)"))
        for c_index, (kind, value) in enumerate(children):
            is_last = c_index == len(children) - 1
            if kind == "agent":
                agent, its_calls = value
                below = add(inner, is_last, f"agent {safe(agent, MAX_NAME) or '(unnamed)'}")
                for k, call in enumerate(its_calls):
                    _tree_call(add, below, k == len(its_calls) - 1, call, style)
            elif kind == "call":
                _tree_call(add, inner, is_last, value, style)
            elif kind == "note":
                add(inner, is_last, value)
            else:
                add(inner, is_last, f"{kind}: {free_text(value, rules)}")
    return lines


def _tree_call(add: Any, prefix: str, is_last: bool, call: ToolCall, style: ViewStyle) -> None:
    """``tool(arguments)  status  time``, the arguments cut so that the status and the time
    always fit the width; then the error and (with content) the result below it."""
    rules = style.redaction
    name = safe(call.name, MAX_NAME)
    tail = f")  {status_text(call)}  {duration_text(call)}"
    room = max(style.width, MIN_WIDTH) - len(prefix) - 4 - len(name) - 1 - len(tail)
    arguments = fit(arguments_text(call.args, rules), max(room, 12))
    below = add(
        prefix, is_last, f"{name}({arguments}{tail}", _RED if call.status == "error" else None
    )
    details: list[str] = []
    if call.status == "error" and call.error:
        details.append(f"error: {free_text(call.error, rules)}")
    if style.content and call.result is not None:
        details.append(f"-> {result_text(call.result, rules)}")
    for k, detail in enumerate(details):
        add(below, k == len(details) - 1, detail)
