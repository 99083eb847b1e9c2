"""A trajectory seen through one agent: the calls that agent made, by name as recorded
(``ToolCall.agent``: the tool span's own agent attribute, else the nearest agent span above
it; docs/convert.md, "Agent").

A case, a turn (or its ``expect``) or a single check with ``agent:`` is judged on this view
(docs/checks.md, "Agents and handoffs"): its call index holds only that agent's calls, and so
does the trace it is given, whose handoffs are placed again among those calls. A check
without ``agent:`` reads the trace as it is: nothing here runs for it.
"""

from __future__ import annotations

from dataclasses import replace

from tooltrail.checks.view import CallView
from tooltrail.model import EvalTrace, Handoff, ToolCall, with_calls


def agent_calls(calls: list[ToolCall], agent: str) -> list[ToolCall]:
    """The calls ``agent`` made, in order."""
    return [call for call in calls if call.agent == agent]


def scope_to_agent(trace: EvalTrace, view: CallView, agent: str) -> tuple[EvalTrace, CallView]:
    """``trace`` and its call index ``view`` (a turn's, one without failed attempts, ...) as
    ``agent`` made them: the view of its calls only, and a trace of its calls only (every
    call of the trace of that agent, failed attempts included), whose handoffs' places count
    that agent's calls."""
    scoped_view = CallView(agent_calls(view.calls, agent))
    calls = trace.tool_calls
    mine = agent_calls(calls, agent)
    handoffs = trace.handoffs
    if handoffs:
        handoffs = _placed_again(calls, handoffs, agent)
    return with_calls(trace, mine, handoffs), scoped_view


def _placed_again(calls: list[ToolCall], handoffs: list[Handoff], agent: str) -> list[Handoff]:
    """``handoffs`` with ``position`` and ``call`` counted among ``agent``'s calls."""
    #: before[k]: how many of the agent's calls come before call k (k up to len(calls))
    before = [0]
    for call in calls:
        before.append(before[-1] + (call.agent == agent))
    placed = []
    for handoff in handoffs:
        position = before[min(max(handoff.position, 0), len(calls))]
        made_by = handoff.call
        if made_by is not None:
            inside = 0 <= made_by < len(calls) and calls[made_by].agent == agent
            made_by = before[made_by] if inside else None
        placed.append(replace(handoff, position=position, call=made_by))
    return placed
