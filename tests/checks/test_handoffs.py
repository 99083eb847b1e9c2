"""Handoffs between agents (docs/convert.md, "Handoffs") and the checks over them and over
who made each call (docs/checks.md, "Agents and handoffs").

The multi-agent recordings of two frameworks (``tests/data/recorded/google-adk-multiagent``:
ADK sub-agents and ``transfer_to_agent``; ``openai-agents-multiagent``: OpenAI Agents
handoffs through OpenInference), each a run that hands off before the refund, one that never
hands off and one that refunds before handing off, are checked per agent and for handoff
order: every verdict comes from the recording's truth file (which agent made each call, which
handoffs happened, in what order), never from tooltrail's own reading. The realworld traces
of the issue (ADK's transfer in a workflow and in an invocation, OpenAI Agents' two-turn
handoff) are read too. ``handoff_scenarios`` drives every branch that writes a text, for the
contract test (``test_checks_contract.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures import CORPUS, DATA

from tooltrail.checks import Score
from tooltrail.checks.agents import AllowedAgents
from tooltrail.checks.handoffs import HandoffForbidden, HandoffOrder, HandoffRequired
from tooltrail.checks.protocol import case_context
from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.convert.handoffs import find_handoffs
from tooltrail.model import AgentSpan, EvalTrace, Handoff, ToolCall
from tooltrail.score import evaluate_trace
from tooltrail.suite import TestCase
from tooltrail.suite.handoffs import HandoffTo

RECORDED = DATA / "recorded"
FRAMEWORKS = ("google-adk-multiagent", "openai-agents-multiagent")
SCENARIOS = ("a_handoff_refund_ok", "b_refund_without_handoff", "c_refund_before_handoff")
REALWORLD = DATA / "realworld"


def truth(framework: str, scenario: str) -> dict[str, Any]:
    return json.loads((RECORDED / framework / f"{scenario}.truth.json").read_text("utf-8"))


def recorded(framework: str, scenario: str) -> EvalTrace:
    (trace,) = read_traces([RECORDED / framework / f"{scenario}.otlp.jsonl"])
    return trace


def verdicts(case: TestCase, trace: EvalTrace) -> dict[str, bool]:
    return {score.name: score.passed for score in evaluate_trace(case, trace).scores}


# -- the recordings, against their truth ---------------------------------------------------


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_each_call_names_the_agent_that_made_it(framework: str, scenario: str) -> None:
    trace, told = recorded(framework, scenario), truth(framework, scenario)
    plain = [c for c in told["calls"] if "args" in c]  # (the framework's handoff calls aside)
    made = [(c.name, c.agent) for c in trace.tool_calls if c.name in {p["tool"] for p in plain}]
    assert made == [(c["tool"], c["agent"]) for c in plain]


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_handoffs_are_the_ones_that_happened(framework: str, scenario: str) -> None:
    trace, told = recorded(framework, scenario), truth(framework, scenario)
    assert [(h.source, h.target) for h in trace.handoffs] == [
        (h["source"], h["target"]) for h in told["handoffs"]
    ]
    # each handoff sits right after the call that made it, before the target's first call
    names = [c.name for c in trace.tool_calls]
    for handoff, said in zip(trace.handoffs, told["handoffs"], strict=True):
        assert handoff.call is not None
        assert names[handoff.call] == told["calls"][said["call"]]["tool"]
        later = [c.agent for c in trace.tool_calls[handoff.position :]]
        assert said["target"] in later


#: The case that holds a good refund: only refunds refunds, after triage handed to it.
GOOD = TestCase(
    id="refund-handed-off",
    allowed_agents={"issue_refund": ["refunds"]},
    handoffs={
        "required": [{"from": "triage", "to": "refunds"}],
        "order": [{"to": "refunds"}, "issue_refund"],
    },  # fmt: skip
)
#: One agent's expectations: refunds looked the order up and refunded it.
REFUNDS_DID_IT = TestCase(
    id="refunds-did-it", agent="refunds", required_tools=["lookup_order", "issue_refund"]
)


def _expected(told: dict[str, Any]) -> dict[str, bool]:
    """The verdicts the truth file gives the cases above."""
    refunds = [c for c in told["calls"] if c["tool"] == "issue_refund"]
    handoff = [h for h in told["handoffs"] if (h["source"], h["target"]) == ("triage", "refunds")]
    first_refund = min(i for i, c in enumerate(told["calls"]) if c["tool"] == "issue_refund")
    refunds_calls = {c["tool"] for c in told["calls"] if c["agent"] == "refunds"}
    return {
        "allowed_agents:issue_refund": all(c["agent"] == "refunds" for c in refunds),
        "handoff_required:triage->refunds": bool(handoff),
        "handoff_order": bool(handoff) and handoff[0]["call"] < first_refund,
        "required_tool:lookup_order": "lookup_order" in refunds_calls,
        "required_tool:issue_refund": "issue_refund" in refunds_calls,
    }


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_per_agent_and_handoff_order_verdicts_follow_the_truth(
    framework: str, scenario: str
) -> None:
    trace, told = recorded(framework, scenario), truth(framework, scenario)
    got = {**verdicts(GOOD, trace), **verdicts(REFUNDS_DID_IT, trace)}
    assert got == _expected(told)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_passing_and_a_failing_run_of_each_framework(framework: str) -> None:
    good = evaluate_trace(GOOD, recorded(framework, "a_handoff_refund_ok"))
    assert good.passed, good.failure_messages()
    late = evaluate_trace(GOOD, recorded(framework, "c_refund_before_handoff"))
    assert not late.passed
    (order,) = [s for s in late.scores if s.name == "handoff_order"]
    assert order.explanation == (
        "Required order [handoff to 'refunds', 'issue_refund'] not met: call 1 'issue_refund' "
        "by 'triage' came before the handoff from 'triage' to 'refunds' (call 2 "
        f"{late_handoff_tool(framework)!r} by 'triage')."
    )
    alone = evaluate_trace(GOOD, recorded(framework, "b_refund_without_handoff"))
    texts = {s.name: s.explanation for s in alone.scores if not s.passed}
    assert texts["allowed_agents:issue_refund"] == (
        "1 of 1 calls of 'issue_refund' were made by an agent outside ['refunds']: "
        "call 2 'issue_refund' by 'triage'."
    )
    assert texts["handoff_required:triage->refunds"] == (
        "No handoff from 'triage' to 'refunds' happened; the run has no handoffs."
    )


def late_handoff_tool(framework: str) -> str:
    return "transfer_to_agent" if framework.startswith("google-adk") else "transfer_to_refunds"


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_suite_file_checks_the_recordings_through_eval(framework: str, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: multi-agent\n"
        "cases:\n"
        "  - id: refunds-only\n"
        "    match: all\n"
        "    allowed_agents: {issue_refund: [refunds]}\n"
        "    handoffs:\n"
        "      required: [refunds]\n"
        "      forbidden: [{to: admin}]\n"
        "      order: [{to: refunds}, issue_refund]\n"
        "    turns:\n"
        "      - user: refund\n"
        "        agent: refunds\n"
        "        expect: {tool_calls_include: [issue_refund]}\n"
        "    evaluators:\n"
        "      - name: tool_call_precision\n"
        "        agent: triage\n"
        "        config:\n"
        "          allowed_tools: [lookup_order, issue_refund, "
        f"{late_handoff_tool(framework)}, 'handoff to refunds']\n"
    )
    folder = RECORDED / framework
    out = tmp_path / "report.json"
    inputs = [str(folder / f"{s}.otlp.jsonl") for s in SCENARIOS]
    result = CliRunner().invoke(
        main, ["eval", str(suite), *inputs, "--format", "json", "--out", str(out)]
    )
    report = json.loads(out.read_text("utf-8"))
    rows = {row["trace_id"]: row for row in report["cases"]}
    by_scenario = {s: rows[recorded(framework, s).trace_id] for s in SCENARIOS}
    assert by_scenario["a_handoff_refund_ok"]["passed"]
    assert not by_scenario["b_refund_without_handoff"]["passed"]
    assert not by_scenario["c_refund_before_handoff"]["passed"]
    names = [score["name"] for score in by_scenario["a_handoff_refund_ok"]["scores"]]
    assert names == [
        "allowed_agents:issue_refund",
        "handoff_required:->refunds",
        "handoff_forbidden:->admin",
        "handoff_order",
        "turn1:tool_calls_include:issue_refund",
        "agent:triage:tool_call_precision",
    ]
    assert result.exit_code == 1


# -- the realworld traces of the issue -------------------------------------------------------


def test_adk_transfers_in_a_workflow_and_an_invocation_are_handoffs() -> None:
    for name in ("adk_workflow_transfer.json", "adk_invocation_transfer.json"):
        (trace,) = read_traces([REALWORLD / name])
        assert [(h.source, h.target, h.kind, h.call) for h in trace.handoffs] == [
            ("coordinator", "billing_agent", "transfer", 0)
        ]


def test_openai_agents_handoffs_in_two_turns_are_one_per_turn() -> None:
    (trace,) = read_traces(
        [REALWORLD / "openai_agents_handoff_two_turns.json"], group="conversation"
    )
    assert [(h.source, h.target, h.turn, h.position) for h in trace.handoffs] == [
        ("triage", "billing", 1, 1),
        ("triage", "billing", 2, 2),
    ]
    assert [a.name for a in trace.agent_spans] == ["triage", "billing", "triage", "billing"]


def test_an_agent_run_as_a_tool_is_a_handoff_by_that_call() -> None:
    (trace,) = read_traces([CORPUS / "google-adk" / "h_nested_agent_tool.otlp.jsonl"])
    (handoff,) = trace.handoffs
    assert (handoff.source, handoff.target, handoff.kind) == (
        "triage_agent",
        "refund_specialist",
        "agent_tool",
    )
    assert trace.tool_calls[handoff.call].name == "refund_specialist"  # type: ignore[index]
    (nested,) = [a for a in trace.agent_spans if a.name == "refund_specialist"]
    assert nested.tool_span_id == trace.tool_calls[1].span_id


def test_the_semconv_handoff_attributes_name_the_target() -> None:
    (trace,) = read_traces([DATA / "dialects" / "genai_handoff_semconv.json"])
    (handoff,) = trace.handoffs
    assert (handoff.source, handoff.target) == ("Triage agent", "Billing agent")
    assert handoff.via == "attribute:gen_ai.agent.handoff.target.name"


# -- the rules, on hand-built trajectories -------------------------------------------------


def call(name: str, agent: str | None, args: dict[str, Any] | None = None, **kw: Any) -> ToolCall:
    return ToolCall(name=name, args=args if args is not None else {}, agent=agent, **kw)


def agent(span_id: str, name: str, start: int, **kw: Any) -> AgentSpan:
    return AgentSpan(span_id=span_id, name=name, start_ns=start, end_ns=start + 10, **kw)


def test_a_transfer_names_its_target_in_its_argument() -> None:
    calls = [call("transfer_to_agent", "root", {"agent_name": "search"}), call("search", "search")]
    (handoff,) = find_handoffs(calls, [])
    assert (handoff.source, handoff.target, handoff.kind, handoff.position) == (
        "root",
        "search",
        "transfer",
        1,
    )


def test_a_prefixed_handoff_takes_the_agent_that_started_next() -> None:
    calls = [call("transfer_to_billing_agent", "Triage", start_ns=5)]
    agents = [agent("a", "Triage", 0), agent("b", "Billing agent", 20)]
    (handoff,) = find_handoffs(calls, agents)
    assert handoff.target == "Billing agent"
    # with no agent span after it, the rest of its name
    (alone,) = find_handoffs(calls, agents[:1])
    assert alone.target == "billing_agent"


def test_crewai_delegation_names_the_coworker() -> None:
    calls = [call("Delegate work to coworker", "Manager", {"coworker": "Researcher", "task": "x"})]
    (handoff,) = find_handoffs(calls, [])
    assert (handoff.target, handoff.kind) == ("Researcher", "delegation")


def test_a_sub_agent_of_an_agent_that_made_calls_is_a_handoff() -> None:
    calls = [call("plan", "lead", start_ns=1), call("search", "helper", start_ns=30)]
    agents = [agent("a", "lead", 0), agent("b", "helper", 20, parent_span_id="a")]
    (handoff,) = find_handoffs(calls, agents)
    assert (handoff.source, handoff.target, handoff.kind, handoff.position) == (
        "lead",
        "helper",
        "sub_agent",
        1,
    )
    # an agent that only runs others (a sequential agent, a workflow's runner) hands nothing off
    assert find_handoffs(calls[1:], agents) == []


def test_the_models_handoff_call_and_the_sdks_span_are_one_handoff() -> None:
    calls = [call("transfer_to_refunds", "triage"), call("handoff to refunds", "triage")]
    (handoff,) = find_handoffs(calls, [])
    assert (handoff.target, handoff.call) == ("refunds", 0)


def test_a_case_scoped_to_an_agent_places_the_handoffs_among_its_calls() -> None:
    calls = [
        call("lookup", "triage"),
        call("transfer_to_refunds", "triage"),
        call("refund", "refunds"),
    ]
    trace = EvalTrace(tool_calls=calls, handoffs=find_handoffs(calls, []))
    ctx = case_context(TestCase(id="c", agent="refunds", max_tool_calls=9), trace)
    assert [c.name for c in ctx.view.calls] == ["refund"]
    (handoff,) = ctx.trace.handoffs
    assert (handoff.position, handoff.call) == (0, None)
    order = HandoffOrder((HandoffTo("refunds"), "refund")).evaluate(ctx)
    assert order.passed, order.explanation


# -- every text, for the contract ------------------------------------------------------------


def handoff_scenarios() -> Iterator[list[Score]]:
    """Each branch of the agent and handoff checks that writes a text."""

    def run(check: Any, on: EvalTrace) -> list[Score]:
        result = check.evaluate(case_context(TestCase(id="c", max_tool_calls=99), on))
        return [result] if isinstance(result, Score) else list(result)

    calls = [
        call("lookup", "triage", span_id="s1"),
        call("transfer_to_agent", "triage", {"agent_name": "refunds"}, span_id="s2"),
        call("refund", "refunds", span_id="s3"),
        call("refund", None, span_id="s4"),
    ]
    handed = EvalTrace(tool_calls=calls, handoffs=find_handoffs(calls, []))
    spanned = EvalTrace(
        tool_calls=calls[:1],
        handoffs=[Handoff(source=None, target="refunds", kind="sub_agent", position=1)],
    )
    none = EvalTrace(tool_calls=calls[:1])
    yield run(AllowedAgents("refund", ["refunds"]), none)
    yield run(AllowedAgents("refund", ["refunds"]), EvalTrace(tool_calls=calls[:3]))
    yield run(AllowedAgents("refund", ["refunds"]), handed)
    yield run(AllowedAgents("refund", "refunds"), handed)  # type: ignore[arg-type]
    yield run(HandoffRequired(HandoffTo("refunds")), handed)
    yield run(HandoffRequired(HandoffTo("admin")), handed)
    yield run(HandoffRequired(HandoffTo("refunds", "triage")), none)
    yield run(HandoffRequired(HandoffTo(source="triage")), spanned)
    yield run(HandoffForbidden(HandoffTo("admin")), handed)
    yield run(HandoffForbidden(HandoffTo(source="triage")), handed)
    yield run(HandoffOrder(("lookup", HandoffTo("refunds"), "refund")), handed)
    yield run(HandoffOrder(("refund", HandoffTo("refunds"))), handed)
    yield run(HandoffOrder((HandoffTo("refunds"), "lookup")), handed)
    yield run(HandoffOrder(("lookup", HandoffTo("admin"))), handed)
    unrecorded = EvalTrace(content_missing="a model response asked for tools")
    yield run(HandoffOrder(("lookup",)), unrecorded)
    yield run(AllowedAgents("refund", ["refunds"]), unrecorded)


def test_the_scenarios_reach_every_text() -> None:
    texts = {score.explanation for scores in handoff_scenarios() for score in scores}
    assert len(texts) == 15
