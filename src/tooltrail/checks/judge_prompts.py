"""The exact text a judge check sends: one builder per check, redacted, bounded, deterministic.

A judge's verdicts are cached by prompt, so a prompt depends on nothing but what it shows:
arguments and structured results are canonical JSON (sorted keys), turns and calls keep the
trajectory's order, and nothing carries a time. What leaves the process goes through the run's
``Redaction`` first: tool arguments and results as arguments are (secret keys hidden at any
depth, value patterns, nested JSON and ``key=value`` text), user inputs, replies and error
texts as free text (``Redaction.redact_text``). Then each value is cut to
``MAX_VALUE_CHARS`` and the run shown to ``MAX_RUN_CHARS``, keeping its end (the part nearest
the reply), each cut with a marker that says how much was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from tooltrail.model import EvalTrace, ToolCall, Turn
from tooltrail.redact import Redaction, canonical_json, truncation_marker

#: Characters of one value (an argument object, a result, an input, a reply) a prompt shows.
MAX_VALUE_CHARS = 2000
#: Characters of the run (turns, calls, replies) a prompt shows; earlier items are left out.
MAX_RUN_CHARS = 24000
#: What a prompt shows for a value the trace does not record.
NOT_RECORDED = "(not recorded)"

HEADER = (
    "You are judging what an AI agent did, against the rubric below. Judge only what is "
    "shown here.\n"
    'Answer with one JSON object and nothing else: {"passed": true or false, "score": a '
    'number from 0 to 1, "reasoning": "why, in one or two sentences"}.'
)


def reply_prompt(
    rubric: str,
    trace: EvalTrace,
    calls: Sequence[ToolCall],
    turn: int,
    reply: str,
    rules: Redaction,
) -> str:
    """``llm_judge``: the reply of ``turn``, after the conversation up to it (earlier turns
    whole, then the turn's input and calls)."""
    run = _run(trace, calls, rules, last_turn=turn, last_reply=False)
    return _join(
        HEADER,
        _section("Rubric", rubric),
        _section("Conversation before the reply", run),
        _section(f"Reply to judge (turn {turn})", _text(reply, rules)),
    )


def args_prompt(
    rubric: str,
    call: ToolCall,
    number: int,
    count: int,
    user_input: str | None,
    rules: Redaction,
) -> str:
    """``tool_args_judge``: one call's arguments, with the user's message of its turn."""
    body = "\n".join(
        (
            f"Tool: {call.name}",
            f"Call {number} of {count} to this tool",
            f"User's message in that turn: {_indent(_text(user_input, rules))}",
            f"Arguments: {_indent(_value(call.args, rules))}",
        )
    )
    return _join(HEADER, _section("Rubric", rubric), _section("Tool call to judge", body))


def trajectory_prompt(
    rubric: str,
    trace: EvalTrace,
    calls: Sequence[ToolCall],
    reply: str | None,
    reference: Sequence[ToolCall] | None,
    rules: Redaction,
) -> str:
    """``trajectory_judge``: the whole run, and the reference trajectory when there is one."""
    last = max(_turn_numbers(trace, calls))
    run = _run(trace, calls, rules, last_turn=last, last_reply=True, final_reply=reply)
    parts = [HEADER, _section("Rubric", rubric), _section("The run", run)]
    if reference is not None:
        parts.append(_section("Reference trajectory", _reference(reference, rules)))
    return _join(*parts)


def _join(*parts: str) -> str:
    return "\n\n".join(parts) + "\n"


def _section(title: str, body: str) -> str:
    return f"# {title}\n{body}"


def _indent(text: str) -> str:
    """Continuation lines indented, so that a value cannot pass for a heading."""
    return text.replace("\n", "\n  ")


def _cap(text: str) -> str:
    if len(text) <= MAX_VALUE_CHARS:
        return text
    return text[:MAX_VALUE_CHARS] + truncation_marker(len(text) - MAX_VALUE_CHARS)


def _text(value: str | None, rules: Redaction) -> str:
    """Free text (an input, a reply, an error), redacted, then cut."""
    if value is None:
        return NOT_RECORDED
    return _cap(rules.redact_text(value if isinstance(value, str) else str(value)))


def _value(value: Any, rules: Redaction) -> str:
    """Arguments or a result: cleaned as arguments are, as text (canonical JSON unless it is
    text already), then cut."""
    if value is None:
        return NOT_RECORDED
    cleaned, _ = rules.clean(value)
    text = cleaned if isinstance(cleaned, str) else canonical_json(cleaned)
    return _cap(text)


def _turn_numbers(trace: EvalTrace, calls: Sequence[ToolCall]) -> list[int]:
    numbers = {turn.number for turn in trace.turns} | {call.turn for call in calls}
    return sorted(numbers) or [1]


def _turn_lines(number: int, user: str | None, rules: Redaction) -> str:
    return f"## Turn {number}\nUser: {_indent(_text(user, rules))}"


def _reply_line(reply: str | None, rules: Redaction) -> str:
    return f"Agent: {_indent(_text(reply, rules))}"


def _call_lines(number: int, call: ToolCall, rules: Redaction) -> str:
    lines = [
        f"Tool call {number}: {call.name}",
        f"  Arguments: {_indent(_value(call.args, rules))}",
        f"  Result: {_indent(_value(call.result, rules))}",
    ]
    if call.error is not None or call.status == "error":
        lines.append(f"  Error: {_indent(_text(call.error, rules))}")
    return "\n".join(lines)


def _run(
    trace: EvalTrace,
    calls: Sequence[ToolCall],
    rules: Redaction,
    *,
    last_turn: int,
    last_reply: bool,
    final_reply: str | None = None,
) -> str:
    """The run up to ``last_turn``: each turn's input, its calls, its reply (the last turn's
    only when ``last_reply``), rendered from the end until ``MAX_RUN_CHARS`` is spent."""
    records: dict[int, Turn] = {turn.number: turn for turn in trace.turns}
    by_turn: dict[int, list[tuple[int, ToolCall]]] = {}
    for index, call in enumerate(calls, start=1):
        by_turn.setdefault(call.turn, []).append((index, call))
    items: list[Callable[[], str]] = []  # rendered lazily, from the end
    for number in _turn_numbers(trace, calls):
        if number > last_turn:
            break
        record = records.get(number)
        user = record.input if record is not None else None
        items.append(partial(_turn_lines, number, user, rules))
        for index, call in by_turn.get(number, ()):
            items.append(partial(_call_lines, index, call, rules))
        if number < last_turn or last_reply:
            reply = record.reply if record is not None else None
            if reply is None and number == last_turn:
                reply = final_reply
            items.append(partial(_reply_line, reply, rules))
    shown: list[str] = []
    used = 0
    for item in reversed(items):
        text = item()
        if used + len(text) + 1 > MAX_RUN_CHARS and shown:
            break
        shown.append(text)
        used += len(text) + 1
    left_out = len(items) - len(shown)
    if left_out:
        shown.append(
            f"({left_out} earlier items not shown: a prompt shows at most {MAX_RUN_CHARS} "
            "characters of the run)"
        )
    return "\n".join(reversed(shown))


def _reference(reference: Sequence[ToolCall], rules: Redaction) -> str:
    if not reference:
        return "(no calls)"
    lines = []
    for number, call in enumerate(reference, start=1):
        args = "any arguments" if call.args is None else _indent(_value(call.args, rules))
        lines.append(f"{number}. {call.name} {args}")
    return "\n".join(lines)
