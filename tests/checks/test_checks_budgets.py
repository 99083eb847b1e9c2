"""Budgets read from the trace (issue 17 item 4): wall time (whole trace and per turn), tool
calls, model calls, tokens and their cost. Traces are recorded with the real OpenTelemetry SDK
at fixed times, written as OTLP/JSON lines and evaluated by ``tooltrail eval`` and the Python
API; every message is checked word for word."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import set_span_in_context

from tooltrail.checks.budgets import MaxCost
from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.otlp import json_line
from tooltrail.score import evaluate_trace, reads_usage
from tooltrail.suite import SuiteError, TestCase, TestSuite
from tooltrail.suite.case import ModelPrice

MS = 1_000_000  # nanoseconds
T0 = 1_700_000_000_000 * MS


@dataclass
class ModelCall:
    """One model call: its tokens, its model, and whether a provider's span nests inside the
    framework's (both record the same tokens, as instrumented SDKs do)."""

    tokens_in: int
    tokens_out: int
    model: str | None = "gpt-4o"
    nested: bool = False


@dataclass
class Turn:
    """One turn: an ``invoke_agent`` span lasting ``ms`` with these model and tool calls."""

    ms: int
    models: list[ModelCall] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)


def record(turns: list[Turn], case_id: str = "budget") -> list[ReadableSpan]:
    """The spans of one trace: a request's root span over one agent span per turn (each
    turn starts 100 ms after the previous one ended), each holding its model and tool calls."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "budget-service"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tooltrail-tests")
    start = T0
    end = T0 + sum(t.ms + 100 for t in turns) * MS
    root = tracer.start_span(
        "POST /chat", attributes={"tooltrail.case_id": case_id}, start_time=start
    )
    root_context = set_span_in_context(root)
    at = start
    for turn in turns:
        agent = tracer.start_span(
            "invoke_agent budget-agent",
            context=root_context,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "budget"},
            start_time=at,
        )
        inner = set_span_in_context(agent)
        step = at + MS
        for call in turn.models:
            usage: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.usage.input_tokens": call.tokens_in,
                "gen_ai.usage.output_tokens": call.tokens_out,
            }
            if call.model is not None:
                usage["gen_ai.response.model"] = call.model
            model = tracer.start_span("chat", context=inner, attributes=usage, start_time=step)
            if call.nested:
                provider_span = tracer.start_span(
                    "chat provider",
                    context=set_span_in_context(model),
                    attributes=usage,
                    start_time=step + 1,
                )
                provider_span.end(end_time=step + 2)
            model.end(end_time=step + 3)
            step += 4
        for n, tool in enumerate(turn.tools):
            span = tracer.start_span(
                f"execute_tool {tool}",
                context=inner,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": f"call-{at}-{n}",
                    "gen_ai.tool.call.arguments": "{}",
                },
                start_time=step,
            )
            span.end(end_time=step + 1)
            step += 2
        agent.end(end_time=at + turn.ms * MS)
        at += (turn.ms + 100) * MS
    root.end(end_time=end)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def dump(tmp_path: Path, *traces: list[ReadableSpan]) -> Path:
    path = tmp_path / "budget.otlp.jsonl"
    path.write_bytes(b"".join(json_line(encode_spans(spans)) for spans in traces))
    return path


#: 2 turns, 2 x 100 ms apart: the trace lasts 250 + 100 + 400 + 100 = 850 ms.
TWO_TURNS = [
    Turn(250, [ModelCall(1000, 200), ModelCall(500, 100, nested=True)], ["lookup_order"]),
    Turn(400, [ModelCall(2000, 300, model="claude-sonnet-4")], ["issue_refund", "notify"]),
]
PRICES = {"gpt-4o": ModelPrice(input=2.5, output=10.0), "claude-sonnet-4": ModelPrice(3, 15)}


def scores_of(spans: list[ReadableSpan], tmp_path: Path, **case: Any) -> dict[str, Any]:
    """The scores (name -> score) of a case with ``case``'s fields on the trace of ``spans``,
    converted as the CLI converts it (``usage`` when a check reads it)."""
    test_case = TestCase(id="budget", **case)
    usage = reads_usage([test_case])
    (trace,) = read_traces([dump(tmp_path, spans)], usage=usage)
    result = evaluate_trace(test_case, trace)
    return {score.name: score for score in result.scores}


# --- one test per budget, each message word for word --------------------------------------


def test_max_latency_ms_is_the_trace_wall_time(tmp_path):
    spans = record(TWO_TURNS)
    ok = scores_of(spans, tmp_path, max_latency_ms=850)["max_latency_ms"]
    assert (ok.passed, ok.explanation) == (True, "Latency 850.0 ms is within the limit of 850 ms.")
    over = scores_of(spans, tmp_path, max_latency_ms=849.5)["max_latency_ms"]
    assert (over.passed, over.explanation) == (
        False,
        "Latency 850.0 ms exceeds the limit of 849.5 ms.",
    )


def test_max_latency_ms_per_turn_is_each_turns_agent_span(tmp_path):
    spans = record(TWO_TURNS)
    turns = [{"user": "refund"}, {"user": "notify"}]
    for turn in turns:
        turn["expect"] = {"max_latency_ms": 300}
    suite = TestSuite.from_dict({"name": "s", "cases": [{"id": "budget", "turns": turns}]})
    (case,) = suite.cases
    assert reads_usage([case])
    (trace,) = read_traces([dump(tmp_path, spans)], usage=True)
    scores = {s.name: s for s in evaluate_trace(case, trace).scores}
    first, second = scores["turn1:max_latency_ms"], scores["turn2:max_latency_ms"]
    assert (first.passed, first.turn, first.metric) == (True, 1, "max_latency_ms")
    assert first.explanation == "Turn 1 latency 250.0 ms is within the limit of 300 ms."
    assert (second.passed, second.turn) == (False, 2)
    assert second.explanation == "Turn 2 latency 400.0 ms exceeds the limit of 300 ms."


def test_max_tool_calls_case_field(tmp_path):
    spans = record(TWO_TURNS)
    ok = scores_of(spans, tmp_path, max_tool_calls=3)["max_tool_calls"]
    assert (ok.passed, ok.explanation) == (True, "3 tool calls are within the limit of 3.")
    over = scores_of(spans, tmp_path, max_tool_calls=2)["max_tool_calls"]
    assert (over.passed, over.explanation) == (False, "3 tool calls exceed the limit of 2.")
    assert len(over.span_ids) == 1  # the call past the limit is the evidence


def test_max_llm_calls_counts_a_nested_provider_span_once(tmp_path):
    spans = record(TWO_TURNS)  # 3 logical calls, one of them two spans deep
    ok = scores_of(spans, tmp_path, max_llm_calls=3)["max_llm_calls"]
    assert (ok.passed, ok.explanation) == (True, "3 model calls are within the limit of 3.")
    over = scores_of(spans, tmp_path, max_llm_calls=2)["max_llm_calls"]
    assert (over.passed, over.explanation) == (False, "3 model calls exceed the limit of 2.")


def test_max_tokens_adds_input_and_output_counting_a_nested_call_once(tmp_path):
    spans = record(TWO_TURNS)  # (1000 + 500 + 2000) in, (200 + 100 + 300) out
    ok = scores_of(spans, tmp_path, max_tokens=4100)["max_tokens"]
    assert (ok.passed, ok.explanation) == (
        True,
        "4100 tokens (3500 input, 600 output) are within the limit of 4100.",
    )
    over = scores_of(spans, tmp_path, max_tokens=4099)["max_tokens"]
    assert (over.passed, over.explanation) == (
        False,
        "4100 tokens (3500 input, 600 output) exceed the limit of 4099.",
    )


def test_max_cost_usd_prices_each_models_tokens(tmp_path):
    spans = record(TWO_TURNS)
    # gpt-4o: 1500 in, 300 out -> 0.00375 + 0.003; claude: 2000 in, 300 out -> 0.006 + 0.0045
    ok = scores_of(spans, tmp_path, max_cost_usd=0.02, prices=PRICES)["max_cost_usd"]
    assert (ok.passed, ok.explanation) == (True, "Cost $0.01725 is within the limit of $0.02.")
    over = scores_of(spans, tmp_path, max_cost_usd=0.01, prices=PRICES)["max_cost_usd"]
    assert (over.passed, over.explanation) == (False, "Cost $0.01725 exceeds the limit of $0.01.")


def test_a_model_without_a_price_is_a_config_error_naming_it(tmp_path):
    spans = record(TWO_TURNS)
    prices = {"gpt-4o": PRICES["gpt-4o"]}
    score = scores_of(spans, tmp_path, max_cost_usd=1, prices=prices)["max_cost_usd"]
    assert (score.passed, score.error) == (False, "ConfigError")
    assert score.explanation == (
        "No price for model 'claude-sonnet-4' in prices ['gpt-4o'], so the max_cost_usd "
        "check could not be evaluated."
    )


def test_a_model_call_without_a_model_name_cannot_be_priced(tmp_path):
    spans = record([Turn(10, [ModelCall(10, 5, model=None)])])
    score = scores_of(spans, tmp_path, max_cost_usd=1, prices=PRICES)["max_cost_usd"]
    assert not score.passed
    assert score.explanation == (
        "A model call recorded its tokens without naming its model, so the max_cost_usd "
        "check could not be evaluated."
    )


# --- never a vacuous pass --------------------------------------------------------------------


def test_token_budgets_fail_when_no_model_call_records_tokens(tmp_path):
    spans = record([Turn(10, [], ["lookup_order"])])
    scores = scores_of(spans, tmp_path, max_tokens=100, max_llm_calls=5)
    assert scores["max_llm_calls"].passed  # no model call: 0 calls is a fact
    assert scores["max_llm_calls"].explanation == "0 model calls are within the limit of 5."
    assert not scores["max_tokens"].passed
    assert scores["max_tokens"].explanation == (
        "No model call of the trace records its token usage (gen_ai.usage.*), so the "
        "max_tokens check could not be evaluated."
    )


def test_a_trace_read_without_usage_says_how_to_read_it(tmp_path):
    spans = record(TWO_TURNS)
    (trace,) = read_traces([dump(tmp_path, spans)])  # usage not asked for
    case = TestCase(id="budget", max_tokens=10_000, max_llm_calls=10)
    scores = {s.name: s for s in evaluate_trace(case, trace).scores}
    assert scores["max_llm_calls"].explanation == (
        "Trace metadata is missing llm_calls (read the trace with usage=True), so the "
        "max_llm_calls check could not be evaluated."
    )
    assert scores["max_tokens"].explanation == (
        "Trace metadata is missing token_usage (read the trace with usage=True), so the "
        "max_tokens check could not be evaluated."
    )
    assert not any(s.passed for s in scores.values())


def test_latency_of_a_hand_built_trace_without_times_cannot_be_judged():
    from tooltrail.model import EvalTrace, ToolCall

    trace = EvalTrace(trace_id="t", tool_calls=[ToolCall(name="lookup_order", args={})])
    score = evaluate_trace(TestCase(id="c", max_latency_ms=100), trace).scores[0]
    assert not score.passed
    assert score.explanation == (
        "The trace records no span start and end times, so the max_latency_ms check could "
        "not be evaluated."
    )


# --- the suite file: budgets, a price table, errors with file and key ---------------------

SUITE_YAML = """\
name: budgets
prices:                       # US dollars per million tokens
  gpt-4o: {input: 2.50, output: 10.00}
  claude-sonnet-4: {input: 3, output: 15}
cases:
  - id: budget
    max_latency_ms: 1000
    max_tool_calls: 3
    max_llm_calls: 3
    max_tokens: 4000
    max_cost_usd: 0.02
    turns:
      - user: refund
        expect: {max_latency_ms: 300}
      - user: notify
        expect: {max_latency_ms: 300}
"""


def test_tooltrail_eval_reads_usage_when_the_suite_has_budgets(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE_YAML)
    data = dump(tmp_path, record(TWO_TURNS))
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        ["eval", "--workers", "1", str(suite), str(data), "--format", "json", "--out", str(out)],
    )
    assert result.exit_code == 1, result.output  # the tokens and turn 2 are over budget
    (row,) = json.loads(out.read_text())["cases"]
    got = {s["name"]: (s["passed"], s["explanation"]) for s in row["scores"]}
    assert got == {
        "max_latency_ms": (True, "Latency 850.0 ms is within the limit of 1000 ms."),
        "max_tool_calls": (True, "3 tool calls are within the limit of 3."),
        "max_llm_calls": (True, "3 model calls are within the limit of 3."),
        "max_tokens": (False, "4100 tokens (3500 input, 600 output) exceed the limit of 4000."),
        "max_cost_usd": (True, "Cost $0.01725 is within the limit of $0.02."),
        "turn1:max_latency_ms": (True, "Turn 1 latency 250.0 ms is within the limit of 300 ms."),
        "turn2:max_latency_ms": (False, "Turn 2 latency 400.0 ms exceeds the limit of 300 ms."),
    }
    assert [s["name"] for s in row["scores"]][:5] == [  # the contract's order: case fields
        "max_latency_ms",
        "max_tool_calls",
        "max_llm_calls",
        "max_tokens",
        "max_cost_usd",
    ]


def test_a_suite_reads_usage_only_when_a_check_needs_it():
    assert not reads_usage([TestCase(id="a", max_latency_ms=10, max_tool_calls=2)])
    assert reads_usage([TestCase(id="a", max_llm_calls=2)])
    assert reads_usage([TestCase(id="a", max_tokens=2)])
    assert reads_usage([TestCase(id="a", max_cost_usd=2, prices=PRICES)])


def test_max_cost_without_any_price_table_is_a_suite_error_naming_the_key(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\ncases:\n  - id: c\n    max_cost_usd: 0.5\n")
    with pytest.raises(SuiteError) as error:
        TestSuite.load(suite)
    assert str(error.value).startswith(f"{suite}:4: cases[0].max_cost_usd: max_cost_usd needs a")


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("    max_tokens: -1\n", "cases[0].max_tokens", "must be at least 0, got -1"),
        ("    max_tokens: 1.5\n", "cases[0].max_tokens", "expected an integer, got"),
        ("    max_latency_ms: .nan\n", "cases[0].max_latency_ms", "must be a finite number"),
        ("    max_llm_calls: true\n", "cases[0].max_llm_calls", "expected an integer, got"),
    ],
)
def test_a_bad_budget_is_a_suite_error_naming_file_line_and_key(tmp_path, text, where, message):
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\ncases:\n  - id: c\n" + text)
    with pytest.raises(SuiteError) as error:
        TestSuite.load(suite)
    assert f"{suite}:4: {where}: {message}" in str(error.value)


def test_a_bad_price_is_a_suite_error_naming_the_model(tmp_path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: s\nprices:\n  gpt-4o: {input: 2.5}\ncases:\n  - id: c\n    max_cost_usd: 1\n"
    )
    with pytest.raises(SuiteError) as error:
        TestSuite.load(suite)
    assert "prices.gpt-4o" in str(error.value) and "output" in str(error.value)


def test_a_case_price_table_wins_over_the_suites():
    own = {"m": ModelPrice(input=1, output=1)}
    suite = TestSuite(
        name="s",
        prices=PRICES,
        cases=[
            TestCase(id="own", max_cost_usd=1, prices=own),
            TestCase(id="inherits", max_cost_usd=1),
        ],
    )
    assert suite.case("own").prices == own
    assert suite.case("inherits").prices == PRICES


def test_max_cost_built_in_python_without_prices_is_a_config_error_on_its_case(tmp_path):
    spans = record(TWO_TURNS)
    score = scores_of(spans, tmp_path, max_cost_usd=1)["max_cost_usd"]
    assert (score.passed, score.error) == (False, "ConfigError")
    assert score.explanation == (
        "There is no price table (prices) for max_cost_usd, so the max_cost_usd check could "
        "not be evaluated."
    )
    assert MaxCost(1.0).prices is None
