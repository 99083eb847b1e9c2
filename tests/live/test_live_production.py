"""Issue 35 in the agent process: ``live.install`` with sampled judge checks (counted in
``Installation.production_stats``, agreeing with the results file), a spend window, test
traffic apart, and the opt-in evaluation spans. Real SDK provider, the openai client against the
scripted judge server; the window's clock is a ``ManualClock``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tooltrail.live import install, tool
from tooltrail.pipeline.spend_window import ManualClock, SpendWindow
from tooltrail.suite import TestSuite

HOUR = 3600.0
COST = 120 / 1e6  # a scripted answer: 100 + 20 tokens at 1 USD per million


def suite(sample: float | None = None) -> TestSuite:
    evaluator: dict[str, Any] = {
        "name": "tool_args_judge",
        "config": {"name": "amount", "tool": "issue_refund", "rubric": "The amount is right."},
    }
    if sample is not None:
        evaluator["sample"] = sample
    return TestSuite.from_dict(
        {
            "name": "live-production",
            "judge": {"model": "openai:judge-model"},
            "prices": {"judge-model": {"input": 1.0, "output": 1.0}},
            "cases": [
                {
                    "id": "refund",
                    "match": "all",
                    "required_tools": ["issue_refund"],
                    "evaluators": [evaluator],
                }
            ],
        }
    )


def run_agent(provider: TracerProvider, runs: int) -> None:
    tracer = provider.get_tracer("agent")
    for n in range(runs):
        with tracer.start_as_current_span(
            "invoke_agent refund_agent", attributes={"gen_ai.agent.name": "refund_agent"}
        ):
            with tool("issue_refund", {"order_id": f"ORD-{n}"}, tracer=tracer):
                pass


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def judge_score(line: dict[str, Any]) -> dict[str, Any]:
    (score,) = [s for s in line["results"][0]["scores"] if s["metric"] == "tool_args_judge"]
    return score


@pytest.fixture
def judge_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    return judge_server


def test_live_samples_judges_and_counts_what_the_results_say(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    results = tmp_path / "results.jsonl"
    provider = TracerProvider()
    installation = install(
        provider=provider,
        suite=suite(sample=0.25),
        results=str(results),
        judge_cache=False,
        grace_ms=0,
        handle_sigterm=False,
    )
    assert installation is not None
    run_agent(provider, 200)
    provider.shutdown()
    found = lines(results)
    judged = [line for line in found if not judge_score(line)["skipped"]]
    out = [line for line in found if "refund/amount" in line.get("sampled_out", [])]
    assert len(found) == 200 and len(judged) + len(out) == 200
    assert 30 <= len(judged) <= 70 and judge_env.count == len(judged)
    stats = installation.production_stats()
    assert stats["sampling"]["refund/amount"] == {
        "rate": 0.25,
        "by": None,
        "judged": len(judged),
        "sampled_out": len(out),
    }
    assert stats["traces_test"] == 0


def test_live_stops_judging_at_the_windows_budget_and_not_for_test_runs(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    clock = ManualClock(42 * HOUR)
    window = SpendWindow(2.5 * COST, per="hour", clock=clock)
    results = tmp_path / "results.jsonl"
    provider = TracerProvider()
    installation = install(
        provider=provider,
        suite=suite(),
        results=str(results),
        judge_cache=False,
        judge_concurrency=1,
        grace_ms=0,
        handle_sigterm=False,
        spend_window=window,
    )
    assert installation is not None
    run_agent(provider, 10)
    installation.force_flush()
    errors = [judge_score(line)["error"] for line in lines(results)]
    assert errors.count(None) == 3 and errors.count("JudgeBudget") == 7
    assert installation.production_stats()["judge_window_remaining_usd"] == 0.0
    clock.advance(HOUR)
    run_agent(provider, 10)
    provider.shutdown()
    errors = [judge_score(line)["error"] for line in lines(results)[10:]]
    assert errors.count(None) == 3 and errors.count("JudgeBudget") == 7
    assert judge_env.count == 6


def test_a_test_run_is_judged_fully_outside_sampling_and_the_window(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    results = tmp_path / "results.jsonl"
    provider = TracerProvider(resource=Resource.create({"tooltrail.test": True}))
    installation = install(
        provider=provider,
        suite=suite(sample=0.1),
        results=str(results),
        judge_cache=False,
        grace_ms=0,
        handle_sigterm=False,
        spend_window=SpendWindow(0.0, clock=ManualClock(0.0)),  # spent from the start
    )
    assert installation is not None
    run_agent(provider, 20)
    provider.shutdown()
    found = lines(results)
    assert all(line["test_traffic"] for line in found)
    assert all(judge_score(line)["error"] is None for line in found)  # none sampled out or refused
    assert judge_env.count == 20
    stats = installation.production_stats()
    assert stats["traces_test"] == 20
    assert stats["sampling"]["refund/amount"]["judged"] == 0
    assert stats["judge_window_spent_usd"] == 0.0


def test_live_evaluation_spans_link_to_the_judged_root(judge_env: JudgeServer) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    recorded = InMemorySpanExporter()
    install(
        provider=provider,
        suite=suite(),
        exporter=recorded,
        evaluation_spans=True,
        evaluation_span_exporter=exporter,
        judge_cache=False,
        grace_ms=0,
        handle_sigterm=False,
    )
    run_agent(provider, 3)
    provider.shutdown()
    roots = {
        s.context.trace_id: s.context.span_id
        for s in recorded.get_finished_spans()
        if s.parent is None
    }
    spans = exporter.get_finished_spans()
    assert len(spans) == 3
    for span in spans:
        (link,) = span.links
        assert roots[link.context.trace_id] == link.context.span_id
        assert span.attributes["gen_ai.operation.name"] == "evaluation"
        assert span.attributes["tooltrail.verdict"] == "pass"
