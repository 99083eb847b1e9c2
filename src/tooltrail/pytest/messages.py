"""How assertion messages show the calls an agent actually made.

Messages are what a developer reads when a test fails, so they show every call with its
arguments, in order, labelled with its turn when the trajectory has more than one.
"""

from __future__ import annotations

from collections.abc import Sequence

from tooltrail.model import ToolCall


def format_call(call: ToolCall) -> str:
    """``name {args}``; arguments that were not captured are said so, never shown as ``{}``."""
    if call.args is None:
        return f"{call.name} (arguments not captured)"
    return f"{call.name} {call.args!r}"


def format_calls(calls: Sequence[ToolCall], indent: str = "  ") -> str:
    """The block appended to every trail assertion: ``Calls made (n):`` and one line per call."""
    if not calls:
        return "Calls made: none."
    show_turns = len({call.turn for call in calls}) > 1
    lines = [f"Calls made ({len(calls)}):"]
    for number, call in enumerate(calls, 1):
        turn = f"turn {call.turn}: " if show_turns else ""
        lines.append(f"{indent}{number}. {turn}{format_call(call)}")
    return "\n".join(lines)


def format_turn_calls(calls: Sequence[ToolCall], turn_count: int) -> list[str]:
    """One line per turn, ``turn n: a {...}, b {...}`` (``none`` for a turn without calls)."""
    lines = []
    for turn in range(1, turn_count + 1):
        made = [format_call(call) for call in calls if call.turn == turn]
        lines.append(f"turn {turn}: {', '.join(made) if made else 'none'}")
    return lines
