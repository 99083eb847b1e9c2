"""Budgets where the suite runs outside ``tooltrail eval``: the live processor's inline
evaluator (real SDK spans) and ``tooltrail serve`` (a real receiver on loopback) read model
calls and tokens from the trace when a case has a budget that needs them."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from serve_helpers import results_of_one_run

from tooltrail.live import InlineEvaluator, ToolArgsProcessor, TraceBuffer, tool
from tooltrail.model import EvalTrace
from tooltrail.results import CaseResult
from tooltrail.suite import TestSuite

BUDGETS = TestSuite.from_dict(
    {
        "name": "budgets",
        "prices": {"gpt-4o": {"input": 2.5, "output": 10}},
        "cases": [
            {
                "id": "budget",
                "match": "all",
                "max_llm_calls": 1,
                "max_tokens": 1000,
                "max_cost_usd": 0.01,
            }
        ],
    }
)


def test_the_inline_evaluator_reads_model_calls_and_tokens_of_live_spans() -> None:
    seen: list[tuple[EvalTrace, list[CaseResult]]] = []
    provider = TracerProvider()
    provider.add_span_processor(
        ToolArgsProcessor(
            TraceBuffer(InlineEvaluator(BUDGETS, on_result=lambda t, r: seen.append((t, r)))),
        )
    )
    tracer = provider.get_tracer("agent")
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"}
    with tracer.start_as_current_span("invoke_agent refund_agent", attributes=agent):
        for tokens_in in (300, 500):
            chat = {
                "gen_ai.operation.name": "chat",
                "gen_ai.response.model": "gpt-4o",
                "gen_ai.usage.input_tokens": tokens_in,
                "gen_ai.usage.output_tokens": 50,
            }
            with tracer.start_as_current_span("chat gpt-4o", attributes=chat):
                pass
        with tool("lookup_order", {"order_id": "ORD-7731"}, tracer=tracer):
            pass
    provider.shutdown()
    ((_, (result,)),) = seen
    got = {s.name: (s.passed, s.explanation) for s in result.scores}
    assert got == {
        "max_llm_calls": (False, "2 model calls exceed the limit of 1."),
        "max_tokens": (True, "900 tokens (800 input, 100 output) are within the limit of 1000."),
        "max_cost_usd": (True, "Cost $0.003 is within the limit of $0.01."),
    }


SERVE_SUITE = """\
name: budgets
prices:
  scripted_refund_agent: {input: 1.0, output: 2.0}
cases:
  - id: budget
    match: all
    max_llm_calls: 4
    max_tokens: 300
    max_cost_usd: 0.0005
"""


def test_serve_reads_model_calls_and_tokens_of_received_spans(tmp_path: Path) -> None:
    # a real pydantic-ai run: 4 model calls, 289 input and 60 output tokens
    (line,) = results_of_one_run(tmp_path, SERVE_SUITE, "pydantic-ai/a_refund_ok.otlp.pb")
    (case,) = line["results"]
    got = {s["name"]: (s["passed"], s["explanation"]) for s in case["scores"]}
    assert got == {
        "max_llm_calls": (True, "4 model calls are within the limit of 4."),
        "max_tokens": (False, "349 tokens (289 input, 60 output) exceed the limit of 300."),
        "max_cost_usd": (True, "Cost $0.000409 is within the limit of $0.0005."),
    }
