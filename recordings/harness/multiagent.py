"""The multi-agent scenarios: a triage agent that hands a refund to a refunds agent, and the
runs where that goes wrong. Each framework records them with its own handoff primitive
(OpenAI Agents' handoffs, ADK's sub-agents and ``transfer_to_agent``); the model's steps are
scripted per agent turn, in the order the framework asks (triage first, then the agent it
handed to), and the truth file says which agent made each call and which handoffs happened.

Scenarios:
- ``a_handoff_refund_ok``: triage hands off to refunds, which looks the order up and refunds;
- ``b_refund_without_handoff``: triage refunds the order itself and never hands off;
- ``c_refund_before_handoff``: triage refunds the order, then hands off to refunds, which only
  looks the order up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.model_server import Call, Calls, Reply, Step
from harness.scenarios import REFUND_USER, Execution

TRIAGE = "triage"
REFUNDS = "refunds"
REPLY = "Your refund of $49.99 for order ORD-7731 has been issued."


@dataclass(frozen=True)
class AgentStep:
    """A scripted model response and the agent it answers for; ``handoff`` names the agent a
    call of it hands to (the framework's handoff tool, named per framework)."""

    agent: str
    step: Step
    handoff: str | None = None


@dataclass(frozen=True)
class MultiScenario:
    name: str
    description: str
    steps: tuple[AgentStep, ...]

    def script(self, handoff_call: Callable[[str, str], Call]) -> list[Step]:
        """The model's steps, a handoff step's call made by ``handoff_call(target, call_id)``
        (the framework's handoff tool and its arguments)."""
        out: list[Step] = []
        for number, item in enumerate(self.steps):
            if item.handoff is not None:
                out.append(Calls((handoff_call(item.handoff, f"call_h{number}"),)))
            else:
                out.append(item.step)
        return out


def _c(name: str, call_id: str, **args: Any) -> Calls:
    return Calls((Call(name=name, args=args, call_id=call_id),))


_HANDOFF = Reply("")  # placeholder: a handoff step's call is the framework's (``script``)
_LOOKUP = _c("lookup_order", "call_l1", order_id="ORD-7731")
_REFUND = _c("issue_refund", "call_r1", order_id="ORD-7731", amount=49.99)

SCENARIOS: dict[str, MultiScenario] = {
    s.name: s
    for s in (
        MultiScenario(
            "a_handoff_refund_ok",
            "triage hands off to refunds; refunds runs lookup_order then issue_refund(49.99)",
            (
                AgentStep(TRIAGE, _HANDOFF, handoff=REFUNDS),
                AgentStep(REFUNDS, _LOOKUP),
                AgentStep(REFUNDS, _REFUND),
                AgentStep(REFUNDS, Reply(REPLY)),
            ),
        ),
        MultiScenario(
            "b_refund_without_handoff",
            "triage runs lookup_order and issue_refund itself and never hands off",
            (
                AgentStep(TRIAGE, _LOOKUP),
                AgentStep(TRIAGE, _REFUND),
                AgentStep(TRIAGE, Reply(REPLY)),
            ),
        ),
        MultiScenario(
            "c_refund_before_handoff",
            "triage runs issue_refund, then hands off to refunds, which runs lookup_order",
            (
                AgentStep(TRIAGE, _REFUND),
                AgentStep(TRIAGE, _HANDOFF, handoff=REFUNDS),
                AgentStep(REFUNDS, _LOOKUP),
                AgentStep(REFUNDS, Reply(REPLY)),
            ),
        ),
    )
}


def truth(
    scenario: MultiScenario,
    executions: list[Execution],
    *,
    framework: str,
    variant: str,
    handoff_tool: Callable[[str], str],
    notes: list[str],
) -> dict[str, Any]:
    """The truth file: the calls in order (the handoff calls among them, named
    ``handoff_tool(target)``), each with the agent that made it, the handoffs (source, target,
    the index of the call that made it) and the reply. ``executions`` is the tools' log: each
    scripted call of a plain tool must have run, in order, with the scripted arguments."""
    pending = list(executions)
    calls: list[dict[str, Any]] = []
    handoffs: list[dict[str, Any]] = []
    for item in scenario.steps:
        if item.handoff is not None:
            handoffs.append({"source": item.agent, "target": item.handoff, "call": len(calls)})
            calls.append({"tool": handoff_tool(item.handoff), "agent": item.agent})
            continue
        if not isinstance(item.step, Calls):
            continue
        for call in item.step.calls:
            ran = pending.pop(0) if pending else None
            if ran is None or ran.tool != call.name or ran.args != call.args:
                raise AssertionError(f"{scenario.name}: {call.name} did not run as scripted")
            calls.append(
                {
                    "tool": call.name,
                    "args": call.args,
                    "call_id": call.call_id,
                    "agent": item.agent,
                    "status": "error" if ran.error else "ok",
                    "result": ran.result,
                }
            )
    if pending:
        raise AssertionError(f"{scenario.name}: unscripted executions {pending}")
    return {
        "framework": framework,
        "variant": variant,
        "scenario": scenario.name,
        "description": scenario.description,
        "turn_count": 1,
        "user": REFUND_USER,
        "reply": REPLY,
        "calls": calls,
        "handoffs": handoffs,
        "notes": notes,
    }
