"""Checks of who made the calls: a check scoped to one agent's calls, and the agents each tool
may be called by (docs/checks.md, "Agents and handoffs").

``AgentScoped`` runs any check on the calls of one agent (``checks.agent_scope``) and names its
scores ``agent:{agent}:{name}``: a single check's ``agent:`` (``EvaluatorConfig.agent``) is
built as one. ``AllowedAgents`` is ``allowed_agents:{tool}``: every call of the tool was made
by one of the agents listed. They read a call's name and agent, never its arguments, so a run
recorded without its calls' arguments still gets a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from tooltrail.checks.agent_scope import scope_to_agent
from tooltrail.checks.needs import needs_of
from tooltrail.checks.protocol import Check, CheckContext, CheckResult
from tooltrail.checks.score import Score, config_error
from tooltrail.checks.uncaptured import not_captured_explanation
from tooltrail.model import ToolCall

#: The error of a score given when the trace records no call though a model asked for tools.
CONTENT_NOT_CAPTURED = "ContentNotCaptured"


def call_by(number: int, call: ToolCall) -> str:
    """``call {k} {tool!r} by {agent!r}`` (``call {k} {tool!r} by no recorded agent``): a call
    as the texts of these checks name it, positions counting from 1."""
    if call.agent is None:
        return f"call {number} {call.name!r} by no recorded agent"
    return f"call {number} {call.name!r} by {call.agent!r}"


def unrecorded(ctx: CheckContext, name: str) -> Score | None:
    """The error score of a trace that records no call while a model asked for tools: no
    verdict on calls it does not show (as the tool-error checks)."""
    reason = ctx.trace.content_missing
    if reason is None or ctx.trace.tool_calls:
        return None
    return Score.failing(name, name, not_captured_explanation(reason), error=CONTENT_NOT_CAPTURED)


@dataclass(slots=True, frozen=True)
class AgentScoped:
    """``check`` judged on the calls ``agent`` made; its scores are named
    ``agent:{agent}:{name}``, their metric is the check's own."""

    check: Check
    agent: str
    prefix: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "prefix", f"agent:{self.agent}:")

    # What it needs is the scoped check's (``checks.needs``).
    @property
    def reads_calls(self) -> bool:
        return needs_of(self.check).calls

    @property
    def reads_reply(self) -> bool:
        return needs_of(self.check).reply

    @property
    def reads_usage(self) -> bool:
        return needs_of(self.check).usage

    @property
    def reads_content(self) -> bool:
        return needs_of(self.check).content

    @property
    def asks_judge(self) -> bool:
        return needs_of(self.check).judge

    def evaluate(self, ctx: CheckContext) -> CheckResult:
        trace, view = scope_to_agent(ctx.trace, ctx.view, self.agent)
        result = self.check.evaluate(replace(ctx, trace=trace, view=view))
        prefix = self.prefix
        for score in [result] if isinstance(result, Score) else result:
            if isinstance(score, Score):  # (anything else is reported by ``ConfiguredCheck``)
                score.name = prefix + score.name
        return result


def scoped(check: Check, agent: str | None) -> Check:
    """``check`` scoped to ``agent`` (``AgentScoped``), or as it is when no agent is named."""
    return check if agent is None else AgentScoped(check, agent)


@dataclass(slots=True, frozen=True)
class AllowedAgents:
    """``allowed_agents:{tool}``: every call of ``tool`` was made by one of ``agents``."""

    tool: str
    agents: list[str]
    #: Names and agents only, which a trace records without its content.
    reads_calls: ClassVar[bool] = False
    score_name: str = field(init=False, repr=False, compare=False)
    shown: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "score_name", f"allowed_agents:{self.tool}")
        object.__setattr__(self, "shown", str(self.agents))

    def evaluate(self, ctx: CheckContext) -> Score:
        tool, agents, name = self.tool, self.agents, self.score_name
        metric = "allowed_agents"
        if isinstance(agents, (str, bytes)) or not isinstance(agents, (list, tuple)):
            return config_error(
                name, metric, f"allowed_agents[{tool!r}] must be a list of agents' names."
            )
        missing = unrecorded(ctx, metric)
        if missing is not None:
            missing.name = name
            return missing
        calls = ctx.view.calls
        made = [(n, call) for n, call in enumerate(calls, 1) if call.name == tool]
        if not made:
            return Score.passing(
                name, metric, f"Tool {tool!r} was not called, so no other agent called it."
            )
        outside = [(n, call) for n, call in made if call.agent not in agents]
        if not outside:
            return Score.passing(
                name,
                metric,
                f"Every call of {tool!r} ({len(made)}) was made by an agent of {self.shown}.",
                span_ids=_span_ids(made),
            )
        listed = ", ".join(call_by(n, call) for n, call in outside)
        return Score.failing(
            name,
            metric,
            f"{len(outside)} of {len(made)} calls of {tool!r} were made by an agent outside "
            f"{self.shown}: {listed}.",
            span_ids=_span_ids(outside),
        )


def _span_ids(numbered: list[tuple[int, ToolCall]]) -> tuple[str, ...]:
    return tuple(call.span_id for _, call in numbered if call.span_id)


def allowed_agents_checks(case: Any, tools: dict[str, list[str]]) -> list[Check]:
    """The checks of a case's ``allowed_agents`` (tool -> agents), in its order."""
    return [AllowedAgents(tool, agents) for tool, agents in tools.items()]
