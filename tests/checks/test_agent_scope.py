"""``agent:``: a case, a turn, its expectation or a single check judged on one agent's calls
(docs/checks.md, "Agents and handoffs"); ``allowed_agents`` and ``handoffs`` read from suite
files with file, line and key; the checks in the live processor, ``serve`` and the pytest
plugin, as everywhere cases run.
"""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import pytest
from fixtures import DATA
from opentelemetry.sdk.trace import TracerProvider
from serve_helpers import post, write_suite

import tooltrail.pytest.trail  # noqa: F401 - imported once here, not by every inner run
import tooltrail.pytest.yaml_items  # noqa: F401
from tooltrail.checks import Registry
from tooltrail.checks.agents import AgentScoped
from tooltrail.checks.registry import is_builtin
from tooltrail.live import InlineEvaluator, ToolArgsProcessor, TraceBuffer, tool
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.otlp import encode_request, read_spans
from tooltrail.results import CaseResult
from tooltrail.score import evaluate_trace
from tooltrail.serve import ServeConfig, start_in_thread
from tooltrail.suite import EvaluatorConfig, Expect, SuiteError, TestCase, TestSuite, Turn
from tooltrail.suite.handoffs import Handoffs, HandoffTo

pytest_plugins = ["pytester"]

RECORDED = DATA / "recorded"


def call(name: str, agent: str | None, turn: int = 1) -> ToolCall:
    return ToolCall(name=name, args={}, agent=agent, turn=turn, span_id=f"s-{name}-{agent}")


#: triage looks up, hands to refunds, which refunds; in turn 2 triage refunds itself.
TRACE = EvalTrace(
    trace_id="t" * 32,
    tool_calls=[
        call("lookup_order", "triage"),
        call("transfer_to_refunds", "triage"),
        call("issue_refund", "refunds"),
        call("issue_refund", "triage", turn=2),
    ],
    metadata={"turn_count": 2},
)


def scores(case: TestCase, trace: EvalTrace = TRACE) -> dict[str, bool]:
    return {s.name: s.passed for s in evaluate_trace(case, trace).scores}


def test_a_case_with_an_agent_is_judged_on_that_agents_calls() -> None:
    case = TestCase(id="c", agent="refunds", required_tools=["issue_refund", "lookup_order"])
    assert scores(case) == {"required_tool:issue_refund": True, "required_tool:lookup_order": False}
    triage = TestCase(id="c", agent="triage", forbidden_tools=["issue_refund"])
    assert scores(triage) == {"forbidden_tool:issue_refund": False}
    # the same expectations without a scope see every call
    assert scores(TestCase(id="c", required_tools=["lookup_order"])) == {
        "required_tool:lookup_order": True
    }


def test_a_turn_and_its_expectation_scope_the_turns_checks() -> None:
    turns = [
        Turn(user="refund", agent="refunds", expect=Expect(tool_calls_include=["issue_refund"])),
        Turn(
            user="again",
            agent="refunds",
            expect=Expect(agent="triage", tool_calls_exclude=["issue_refund"]),
        ),
    ]
    assert scores(TestCase(id="c", turns=turns)) == {
        "turn1:tool_calls_include:issue_refund": True,
        "turn2:tool_calls_exclude:issue_refund": False,  # the expectation's agent wins
    }


def test_a_single_check_with_an_agent_is_named_for_it() -> None:
    case = TestCase(
        id="c",
        evaluators=[
            EvaluatorConfig("max_tool_calls", config={"max": 1}, agent="refunds"),
            EvaluatorConfig("max_tool_calls", config={"max": 1}, agent="triage"),
        ],
    )
    result = evaluate_trace(case, TRACE)
    assert [(s.name, s.metric, s.passed) for s in result.scores] == [
        ("agent:refunds:max_tool_calls", "max_tool_calls", True),
        ("agent:triage:max_tool_calls", "max_tool_calls", False),
    ]
    assert result.scores[1].explanation == "3 tool calls exceed the limit of 1."
    built = Registry.with_builtins().build(case.evaluators[0])
    assert isinstance(built.check, AgentScoped)  # type: ignore[union-attr]
    assert is_builtin(built)  # a built-in check scoped to an agent runs without a time limit


def test_scopes_narrow() -> None:
    case = TestCase(
        id="c",
        agent="refunds",
        evaluators=[EvaluatorConfig("max_tool_calls", config={"max": 0}, agent="triage")],
    )
    assert scores(case) == {"agent:triage:max_tool_calls": True}  # no call is of both


def test_allowed_agents_and_handoffs_from_python() -> None:
    case = TestCase(
        id="c",
        allowed_agents={"issue_refund": ["refunds"], "lookup_order": ["triage"]},
        handoffs=Handoffs(forbidden=(HandoffTo("admin"),)),
    )
    assert scores(case) == {
        "allowed_agents:issue_refund": False,
        "allowed_agents:lookup_order": True,
        "handoff_forbidden:->admin": True,
    }


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("agent: 5", "cases[0].agent", "expected a string"),
        ("allowed_agents: {issue_refund: refunds}", "cases[0].allowed_agents.issue_refund", "list"),
        (
            "handoffs: {required: [{to: a, by: b}]}",
            "cases[0].handoffs.required[0].by",
            "unknown key",
        ),
        ("handoffs: {order: [{}]}", "cases[0].handoffs.order[0]", "a handoff names"),
        ("handoffs: {mandatory: [a]}", "cases[0].handoffs.mandatory", "unknown key"),
        ("handoffs: {required: refunds}", "cases[0].handoffs.required", "expected a list"),
    ],
)
def test_a_bad_value_in_a_file_names_file_line_and_key(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: s\ncases:\n  - id: c\n    required_tools: [a]\n    {text}\n")
    with pytest.raises(SuiteError) as error:
        TestSuite.load(path)
    said = str(error.value)
    assert f"{path}:5" in said and where in said and message in said, said


def test_a_file_reads_every_agent_key(tmp_path: Path) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            name: s
            cases:
              - id: c
                agent: refunds
                allowed_agents: {issue_refund: [refunds]}
                handoffs:
                  required: [refunds, {from: triage}]
                  order: [lookup_order, {to: refunds}]
                turns:
                  - {user: hi, agent: triage, expect: {agent: refunds, tool_calls_include: [a]}}
                evaluators:
                  - {name: max_tool_calls, agent: triage, config: {max: 1}}
            """
        )
    )
    (case,) = TestSuite.load(path).cases
    assert case.agent == "refunds"
    assert case.allowed_agents == {"issue_refund": ["refunds"]}
    assert case.handoffs == Handoffs(
        required=(HandoffTo("refunds"), HandoffTo(source="triage")),
        order=("lookup_order", HandoffTo("refunds")),
    )
    assert (case.turns[0].agent, case.turns[0].expect.agent, case.turns[0].scope) == (
        "triage",
        "refunds",
        "refunds",
    )
    assert case.evaluators[0].agent == "triage"


def test_the_live_processor_runs_the_checks() -> None:
    suite = TestSuite(
        name="live",
        cases=[
            TestCase(
                id="refund",
                allowed_agents={"issue_refund": ["refunds"]},
                handoffs=Handoffs(required=(HandoffTo("refunds", "triage"),)),
            )
        ],
    )
    seen: list[list[CaseResult]] = []
    provider = TracerProvider()
    evaluator = InlineEvaluator(suite, on_result=lambda trace, results: seen.append(results))
    provider.add_span_processor(ToolArgsProcessor(TraceBuffer(evaluator, grace_s=0)))
    tracer = provider.get_tracer("agent")
    for handed in (True, False):
        marked = {"tooltrail.case_id": "refund", "gen_ai.operation.name": "invoke_workflow"}
        with tracer.start_as_current_span("invoke_workflow", attributes=marked):
            triage = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}
            with tracer.start_as_current_span("invoke_agent triage", attributes=triage):
                if handed:
                    with tool("transfer_to_agent", {"agent_name": "refunds"}, tracer=tracer):
                        pass
                else:
                    with tool("issue_refund", {"order_id": "ORD-7731"}, tracer=tracer):
                        pass
            if handed:
                refunds = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refunds"}
                with tracer.start_as_current_span("invoke_agent refunds", attributes=refunds):
                    with tool("issue_refund", {"order_id": "ORD-7731"}, tracer=tracer):
                        pass
    provider.shutdown()
    assert [[(s.name, s.passed) for r in rows for s in r.scores] for rows in seen] == [
        [("allowed_agents:issue_refund", True), ("handoff_required:triage->refunds", True)],
        [("allowed_agents:issue_refund", False), ("handoff_required:triage->refunds", False)],
    ]


SUITE = """\
name: served
cases:
  - id: refunds-only
    match: all
    allowed_agents: {issue_refund: [refunds]}
    handoffs: {order: [{to: refunds}, issue_refund]}
"""


def test_tooltrail_serve_runs_the_checks(tmp_path: Path) -> None:
    path = RECORDED / "google-adk-multiagent" / "c_refund_before_handoff.otlp.jsonl"
    body = encode_request(read_spans([path])).SerializeToString()
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE), grpc_port=None, http_port=0, grace=0.05,
            results=results, explanations=True,
        )
    )  # fmt: skip
    try:
        assert receiver.http_port is not None
        status, _, _ = post(receiver.http_port, body, {"Content-Type": "application/x-protobuf"})
        assert status == 200
        deadline = time.monotonic() + 60
        while receiver.receiver.stats()["traces_evaluated"] < 1:
            assert time.monotonic() < deadline, "no trace was evaluated"
            time.sleep(0.02)
    finally:
        receiver.stop()
    (line,) = [json.loads(raw) for raw in results.read_text().splitlines()]
    verdicts = [(s["name"], s["passed"]) for row in line["results"] for s in row["scores"]]
    assert verdicts == [("allowed_agents:issue_refund", False), ("handoff_order", False)]


PLUGIN_CONFTEST = """
import pytest

def _span(tracer, name, attributes):
    return tracer.start_as_current_span(name, attributes=attributes)

class Refunds:
    def __init__(self, tracer, hands_off):
        self.tracer, self.hands_off = tracer, hands_off
    def __call__(self, user):
        from tooltrail.live import tool
        triage = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "triage"}
        with _span(self.tracer, "invoke_workflow", {"gen_ai.operation.name": "invoke_workflow"}):
            with _span(self.tracer, "invoke_agent triage", triage):
                name = "transfer_to_agent" if self.hands_off else "issue_refund"
                args = {"agent_name": "refunds"} if self.hands_off else {"order_id": "ORD-7731"}
                with tool(name, args, tracer=self.tracer):
                    pass
            if self.hands_off:
                refunds = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refunds"}
                with _span(self.tracer, "invoke_agent refunds", refunds):
                    with tool("issue_refund", {"order_id": "ORD-7731"}, tracer=self.tracer):
                        pass
        return "Your refund has been issued."

@pytest.fixture
def handing_agent(trail):
    return Refunds(trail.tracer, hands_off=True)

@pytest.fixture
def lone_agent(trail):
    return Refunds(trail.tracer, hands_off=False)
"""


def test_the_pytest_plugin_runs_the_checks(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makeconftest(PLUGIN_CONFTEST)
    pytester.mkdir("tests")
    pytester.mkdir("tests/agents")
    checks = (
        "    allowed_agents: {issue_refund: [refunds]}\n"
        "    handoffs: {order: [{to: refunds}, issue_refund]}\n"
        "    turns: [{user: refund ORD-7731, agent: refunds, "
        "expect: {tool_calls_include: [issue_refund]}}]\n"
    )
    (pytester.path / "tests" / "agents" / "refunds.yaml").write_text(
        "cases:\n"
        "  - id: handed\n    agent: handing_agent\n" + checks
        + "  - id: alone\n    agent: lone_agent\n" + checks
    )  # fmt: skip
    recorder = pytester.inline_run("-p", "no:hypothesispytest")
    recorder.assertoutcome(passed=1, failed=1)
    (failure,) = recorder.getfailures()
    assert failure.nodeid == "tests/agents/refunds.yaml::alone"
    said = str(failure.longrepr)
    assert "allowed_agents:issue_refund: 1 of 1 calls of 'issue_refund' were made by" in said
    assert "turn1:tool_calls_include:issue_refund: Expected tool 'issue_refund'" in said
