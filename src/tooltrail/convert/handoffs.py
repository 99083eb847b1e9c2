"""Handoffs between agents (``EvalTrace.handoffs``), found in a built trajectory.

One step after either builder (``convert.build``), from what the trajectory already holds:
its calls, in order, and its agent spans (``EvalTrace.agent_spans``), with the semconv
handoff attributes of the tool spans (``dialects.spans.handoff_names``, kept in
``TraceFacts.named_handoffs``) as the one fact read for it alone. Docs: docs/convert.md,
"Handoffs". In order of trust:

1. a call whose span names the handoff (``gen_ai.agent.handoff.target.name``; the source is
   ``gen_ai.agent.handoff.source.name``, else the call's agent);
2. a call of a handoff tool (``rules.json`` ``agents.handoffs.tools``): ADK's
   ``transfer_to_agent`` and CrewAI's coworker tools, whose argument names the target;
3. a call whose name has a handoff prefix (``transfer_to_``: OpenAI Agents, AutoGen, LangGraph
   swarm; ``handoff to ``: OpenInference's span of an OpenAI Agents handoff): the target is
   the agent span of the turn that started next after the call, else the rest of the name
   (the same handoff as two calls in a row, the model's and the SDK's span, is one);
4. a call under whose span an agent ran (an agent used as a tool, ADK's ``AgentTool``);
5. an agent span started inside another agent's span (a sub-agent), that no call above
   explains, of an agent that made calls in the turn (one that only runs others runs its
   steps, as a workflow does).

A call that hands off takes (claims) the agent span that took over, so that span is not a
handoff of its own as well. The source of a call's handoff is the agent that made the call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from tooltrail.dialects.spans import (
    HANDOFF_PREFIXES,
    HANDOFF_RECORD_PREFIXES,
    HANDOFF_TARGET_KEY,
    HANDOFF_TOOLS,
)
from tooltrail.model import AgentSpan, Handoff, ToolCall

#: (source, target) a tool span's semconv attributes name, by the call's span id.
Named = Mapping[str, tuple[str | None, str | None]]

_PREFIXES = tuple(prefix for prefix, _ in HANDOFF_PREFIXES)
_VIA_ATTRIBUTE = f"attribute:{HANDOFF_TARGET_KEY}"
_VIA_SPAN = "agent_span"
_AGENT_TOOL = "agent_tool"
_SUB_AGENT = "sub_agent"
#: tool name -> whether it is a handoff tool's (rules 2 and 3), for the common case's test.
_HANDING: dict[str, bool] = {}
#: Names kept in ``_HANDING`` at most (hostile input may name every call anew).
_MAX_NAMES = 4096


def names_a_handoff(calls: Sequence[ToolCall]) -> bool:
    """Whether some call is of a handoff tool by its name (rules 2 and 3). With no semconv
    attributes and fewer than two agent spans, no other call hands off (an agent under a tool
    has an agent above it): the common case's one test, a look-up per call."""
    get = _HANDING.get
    for call in calls:
        handing = get(call.name)
        if handing is None:
            handing = _hands_off(call.name)
        if handing:
            return True
    return False


def _hands_off(name: str) -> bool:
    """Whether a call of ``name`` hands off by its name (rules 2 and 3), remembered."""
    handing = name in HANDOFF_TOOLS or name.startswith(_PREFIXES)
    if len(_HANDING) >= _MAX_NAMES:
        _HANDING.clear()
    _HANDING[name] = handing
    return handing


class _NamedBy(Protocol):
    """What ``named_handoffs`` reads of a ``convert.facts.TraceFacts``."""

    @property
    def named_handoffs(self) -> Named | None: ...


def named_handoffs(traces: Sequence[_NamedBy]) -> Named | None:
    """The semconv handoff attributes of the traces' tool spans
    (``TraceFacts.named_handoffs``), by span id; ``None`` when no span names one."""
    found: dict[str, tuple[str | None, str | None]] | None = None
    for trace in traces:
        named = trace.named_handoffs
        if named:
            if found is None:
                found = {}
            for span_id, names in named.items():
                found.setdefault(span_id, names)
    return found


def find_handoffs(
    calls: Sequence[ToolCall], agents: Sequence[AgentSpan], named: Named | None = None
) -> list[Handoff]:
    """The handoffs of a trajectory, in the order of ``position`` (module docstring).
    ``calls`` in trajectory order, ``agents`` in start order; ``named`` as
    ``named_handoffs`` gives it. Works on a trace built by hand as well."""
    if named is None and len(agents) < 2 and not names_a_handoff(calls):
        return []  # (only a handoff tool's call hands off: see ``names_a_handoff``)
    found: list[Handoff] = []
    claimed: set[int] = set()
    under_tool: dict[str, int] = {}
    for at, agent in enumerate(agents):
        if agent.tool_span_id is not None:
            under_tool.setdefault(agent.tool_span_id, at)
    for index, call in enumerate(calls):
        handoff = _call_handoff(index, call, agents, named, under_tool, claimed)
        if handoff is None:
            continue
        last = found[-1] if found else None
        if (
            last is not None
            and last.call == index - 1
            and (last.source, last.target, last.turn) == (handoff.source, handoff.target, call.turn)
        ):
            continue  # one handoff recorded twice: the model's call, then the SDK's span
        found.append(handoff)
    if len(agents) > 1:
        _sub_agents(calls, agents, claimed, found)
    if len(found) > 1:
        found.sort(key=lambda handoff: handoff.position)  # (stable: calls' before spans')
    return found


def _call_handoff(
    index: int,
    call: ToolCall,
    agents: Sequence[AgentSpan],
    named: Named | None,
    under_tool: dict[str, int],
    claimed: set[int],
) -> Handoff | None:
    """The handoff call ``index`` makes, else ``None`` (rules 1 to 4)."""
    name = call.name
    source = call.agent
    target: str | None = None
    rest: str | None = None  # what a prefixed name ends with
    names = named.get(call.span_id) if named is not None and call.span_id else None
    if names is not None:
        source = names[0] or source
        target, kind, via = names[1], "handoff", _VIA_ATTRIBUTE
    elif name in HANDOFF_TOOLS:
        argument, kind = HANDOFF_TOOLS[name]
        value = call.args.get(argument) if call.args else None
        target = value if isinstance(value, str) and value else None
        via = f"tool:{name}"
    elif name.startswith(_PREFIXES):
        prefix, kind = next(rule for rule in HANDOFF_PREFIXES if name.startswith(rule[0]))
        rest = name[len(prefix) :] or None
        via = f"tool:{prefix}"
    else:
        ran = under_tool.get(call.span_id) if call.span_id and under_tool else None
        if ran is None or ran in claimed:
            return None
        claimed.add(ran)
        return Handoff(
            source=source,
            target=agents[ran].name,
            kind=_AGENT_TOOL,
            position=index + 1,
            call=index,
            turn=call.turn,
            span_id=call.span_id,
            via=_VIA_SPAN,
        )
    took_over = _took_over(call, agents, source, target, rest, under_tool, claimed)
    if took_over is not None:
        claimed.add(took_over)
        if target is None:
            target = agents[took_over].name
    return Handoff(
        source=source,
        target=target if target is not None else rest,
        kind=kind,
        position=index + 1,
        call=index,
        turn=call.turn,
        span_id=call.span_id,
        via=via,
    )


def _took_over(
    call: ToolCall,
    agents: Sequence[AgentSpan],
    source: str | None,
    target: str | None,
    rest: str | None,
    under_tool: dict[str, int],
    claimed: set[int],
) -> int | None:
    """The agent span that took over after a handoff call: one that ran under the call's span,
    else the first of the call's turn that started after the call, not yet claimed, named
    ``target`` when it is known (else not named ``source``; with ``rest``, one whose name in
    snake case is ``rest`` first)."""
    ran = under_tool.get(call.span_id) if call.span_id and under_tool else None
    if ran is not None and ran not in claimed:
        return ran
    first: int | None = None
    for at, agent in enumerate(agents):
        if at in claimed or agent.turn != call.turn or agent.start_ns < call.start_ns:
            continue
        if target is not None:
            if agent.name == target:
                return at
            continue
        if agent.name is None or agent.name == source:
            continue
        if rest is None or _snake(agent.name) == rest:
            return at
        if first is None:
            first = at
    return first


def _snake(name: str) -> str:
    """An agent's name as a handoff tool's name ends with it (OpenAI Agents: lower case,
    every other character than a letter, a digit or ``_`` as ``_``)."""
    return "".join(c if c.isalnum() or c == "_" else "_" for c in name.lower())


def _sub_agents(
    calls: Sequence[ToolCall],
    agents: Sequence[AgentSpan],
    claimed: set[int],
    found: list[Handoff],
) -> None:
    """Rule 5: each agent span started inside another agent's span (not claimed by a call)
    is a handoff from that agent, placed after the calls of the run that started before it;
    unless that agent made no call in the turn: an agent that only runs others (a
    workflow's runner recorded as an agent span, a sequential agent) runs them as its steps,
    as a workflow does, and hands nothing off."""
    by_id = {agent.span_id: agent for agent in agents}
    callers = {(call.agent, call.turn) for call in calls}
    for at, agent in enumerate(agents):
        if at in claimed or agent.parent_span_id is None:
            continue
        parent = by_id.get(agent.parent_span_id)
        source = parent.name if parent is not None else None
        if source is not None and source == agent.name:
            continue  # one agent's own nested span
        if (source, agent.turn) not in callers:
            continue
        start = (agent.turn, agent.start_ns)
        position = 0
        for call in calls:
            if (call.turn, call.start_ns) < start:
                position += 1
        found.append(
            Handoff(
                source=source,
                target=agent.name,
                kind=_AGENT_TOOL if agent.tool_span_id is not None else _SUB_AGENT,
                position=position,
                turn=agent.turn,
                span_id=agent.span_id,
                via=_VIA_SPAN,
            )
        )


def without_handoff_records(calls: Sequence[ToolCall], missing: str) -> str | None:
    """``EvalTrace.content_missing`` (``missing``, as a builder gave it) when the calls
    without arguments include a framework's record of a handoff, which has none by design
    (``HANDOFF_RECORD_PREFIXES``: OpenInference's ``handoff to <agent>`` span): counted
    without them, ``None`` when no other call lacks its arguments; else ``missing``."""
    if not HANDOFF_RECORD_PREFIXES:
        return missing
    uncaptured = records = 0
    for call in calls:
        if call.args is None:
            uncaptured += 1
            if call.name.startswith(HANDOFF_RECORD_PREFIXES):
                records += 1
    if not records:
        return missing
    if uncaptured == records:
        return None
    return f"{uncaptured - records} of {len(calls)} tool calls have no recorded arguments"
