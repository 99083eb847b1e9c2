"""``args_from`` wherever a suite runs: ``tooltrail eval`` on recorded files, ``tooltrail serve``
on a real receiver, the live inline evaluator on real SDK spans, and the pytest plugin's YAML
agent tests. Each reads the tool results and user messages the check needs without being told
(the check says ``reads_content``), and each catches the invented amount."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures import CORPUS
from opentelemetry.sdk.trace import TracerProvider
from serve_helpers import results_of_one_run

import tooltrail.pytest.trail  # noqa: F401 - imported once here, not again by every inner run
import tooltrail.pytest.yaml_items  # noqa: F401
from tooltrail.cli import main
from tooltrail.live import InlineEvaluator, TraceBuffer
from tooltrail.model import EvalTrace
from tooltrail.results import CaseResult
from tooltrail.suite import TestSuite

pytest_plugins = ["pytester"]

SUITE = """\
name: provenance
cases:
  - id: refund
    match: all
    args_from:
      issue_refund:
        amount: {result_of: lookup_order, path: total}
        order_id: [user, {result_of: lookup_order}]
"""
INVENTED = (
    "Call 3 'issue_refund': argument {'amount': 499.9} has no recorded source: looked in the "
    "results of 'lookup_order' (calls [1]) at 'total'."
)
TRUE = (
    "Arguments ['amount', 'order_id'] of 'issue_refund' came from their sources: call 3 "
    "{'amount': 49.99} from the result of 'lookup_order' (call 1) at 'total'; call 3 "
    "{'order_id': 'ORD-7731'} from the user message of turn 1."
)


def test_eval_reads_what_the_check_needs_and_catches_the_invented_amount(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, "utf-8")
    runs = [
        CORPUS / "traceloop" / f"{name}.otlp.jsonl"
        for name in ("c_refund_wrong_amount", "a_refund_ok")
    ]
    result = CliRunner().invoke(
        main, ["eval", str(suite), *map(str, runs), "--workers", "1", "--format", "json", "--quiet"]
    )
    assert result.exit_code == 1, result.output
    rows = json.loads(result.output)["cases"]
    assert [(row["passed"], row["scores"][0]["explanation"]) for row in rows] == [
        (False, INVENTED),
        (True, TRUE),
    ]


@pytest.mark.parametrize(
    ("run", "verdict"), [("c_refund_wrong_amount", INVENTED), ("a_refund_ok", TRUE)]
)
def test_serve_catches_the_invented_amount(tmp_path: Path, run: str, verdict: str) -> None:
    (line,) = results_of_one_run(tmp_path, SUITE, f"pydantic-ai/{run}.otlp.pb")
    ((score,),) = [case["scores"] for case in line["results"]]
    assert score["explanation"] == verdict


def live_refund(amount: float) -> list[CaseResult]:
    """One refund run of an agent instrumented with the GenAI conventions, through the live
    inline evaluator: the user's message, the lookup's result, the refund's arguments."""
    seen: list[tuple[EvalTrace, list[CaseResult]]] = []
    suite = TestSuite.from_dict(_suite_mapping())
    evaluator = InlineEvaluator(suite, on_result=lambda t, r: seen.append((t, r)))
    provider = TracerProvider()
    provider.add_span_processor(TraceBuffer(evaluator, grace_s=0))
    tracer = provider.get_tracer("refund-agent")
    asked = [{"role": "user", "parts": [{"type": "text", "content": "Refund order ORD-7731."}]}]
    agent = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "refunds",
        "gen_ai.input.messages": json.dumps(asked),
    }
    with tracer.start_as_current_span("invoke_agent refunds", attributes=agent):
        for name, args, result in (
            ("lookup_order", {"order_id": "ORD-7731"}, {"total": 49.99}),
            ("verify_identity", {"customer_id": "C-118"}, {"verified": True}),
            ("issue_refund", {"order_id": "ORD-7731", "amount": amount}, {"status": "issued"}),
        ):
            call = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.arguments": json.dumps(args),
                "gen_ai.tool.call.result": json.dumps(result),
            }
            with tracer.start_as_current_span(f"execute_tool {name}", attributes=call):
                pass
    provider.shutdown()
    ((_, results),) = seen
    return results


def _suite_mapping() -> dict[str, Any]:
    import yaml

    return dict(yaml.safe_load(SUITE))


def test_the_live_evaluator_catches_the_invented_amount() -> None:
    ((wrong,),) = [r.scores for r in live_refund(499.9)]
    assert wrong.explanation == INVENTED
    ((right,),) = [r.scores for r in live_refund(49.99)]
    assert right.passed, right.explanation


CONFTEST = """
import json

import pytest

def span(tracer, name, attributes):
    return tracer.start_as_current_span(name, attributes=attributes)

class Refunds:
    def __init__(self, tracer, amount):
        self.tracer, self.amount = tracer, amount
    def __call__(self, user):
        asked = [{"role": "user", "parts": [{"type": "text", "content": user}]}]
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refunds",
                 "gen_ai.input.messages": json.dumps(asked)}
        with span(self.tracer, "invoke_agent refunds", agent):
            for name, args, result in (
                ("lookup_order", {"order_id": "ORD-7731"}, {"total": 49.99}),
                ("issue_refund", {"order_id": "ORD-7731", "amount": self.amount}, {"ok": True}),
            ):
                call = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                        "gen_ai.tool.call.arguments": json.dumps(args),
                        "gen_ai.tool.call.result": json.dumps(result)}
                with span(self.tracer, f"execute_tool {name}", call):
                    pass
        return "Refunded."

@pytest.fixture
def careful_agent(trail):
    return Refunds(trail.tracer, 49.99)

@pytest.fixture
def inventive_agent(trail):
    return Refunds(trail.tracer, 499.9)
"""

AGENT_TESTS = """
cases:
  - id: careful
    agent: careful_agent
    turns: [{user: Refund order ORD-7731.}]
    args_from: &rule
      issue_refund:
        amount: {result_of: lookup_order, path: total}
        order_id: user
  - id: inventive
    agent: inventive_agent
    turns: [{user: Refund order ORD-7731.}]
    args_from: *rule
"""


def test_the_pytest_plugin_fails_the_agent_that_invents_the_amount(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("tests")
    pytester.mkdir("tests/agents")
    (pytester.path / "tests" / "agents" / "refunds.yaml").write_text(AGENT_TESTS)
    recorder = pytester.inline_run("-p", "no:hypothesispytest")
    recorder.assertoutcome(passed=1, failed=1)
    (failed,) = recorder.getfailures()
    assert failed.nodeid == "tests/agents/refunds.yaml::inventive"
    assert (
        "args_from:issue_refund: Call 2 'issue_refund': argument {'amount': 499.9} has no "
        "recorded source: looked in the results of 'lookup_order' (calls [1]) at 'total'."
    ) in str(failed.longrepr)
