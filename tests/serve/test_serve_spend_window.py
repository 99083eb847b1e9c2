"""Issue 35, done-when 2 and 3: a judge spend window shared by two worker processes stops
judging at its budget (within one judgement per worker) and resumes when the window turns;
test-marked traffic is judged outside it (and outside sampling), or skipped. The real
receiver with ``--workers 2``, the openai client and the scripted judge server; the window's
clock is a ``ManualClock`` in shared memory, moved by the test, never the wall clock."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing as mp
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest
from fixtures import wait_until
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from serve_helpers import post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.pipeline.spend_window import ManualClock
from tooltrail.serve import ServeConfig, start_in_thread

HOUR = 3600.0
#: A scripted answer uses 100 input and 20 output tokens: at 1 USD per million each, 120 uUSD.
COST = 120 / 1e6
BUDGET = 5.5 * COST
SUITE = """\
name: budgeted
prices:
  judge-model: {input: 1.0, output: 1.0}
cases:
  - id: refund
    match: all
    required_tools: [issue_refund]
    evaluators:
      - name: tool_args_judge
        config: {tool: issue_refund, rubric: The amount is the order total.}
"""
SAMPLED_SUITE = """\
name: sampled
cases:
  - id: refund
    match: all
    required_tools: [issue_refund]
    evaluators:
      - name: tool_args_judge
        sample: 0.1
        config: {name: rare, tool: issue_refund, rubric: The amount is the order total.}
"""


def refund_spans(trace_id: str, resource: dict[str, Any] | None = None) -> list[Any]:
    arguments = json.dumps({"order_id": "ORD-1", "amount": 49.99})
    spans = agent_trace(
        trace_id,
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "issue_refund",
                "gen_ai.tool.call.arguments": arguments,
            }
        ],
    )
    if resource:
        spans = [
            dataclasses.replace(s, resource={"service.name": "agent", **resource}) for s in spans
        ]
    return spans


def ids(prefix: str, count: int) -> list[str]:
    return [sha256(f"{prefix} {n}".encode()).hexdigest()[:32] for n in range(count)]


def send(port: int, trace_ids: list[str], resource: dict[str, Any] | None = None) -> None:
    for start in range(0, len(trace_ids), 20):
        spans = [s for t in trace_ids[start : start + 20] for s in refund_spans(t, resource)]
        assert post(port, body_of(spans), PROTOBUF)[0] == 200


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def judge_scores(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in line["results"][0]["scores"] if s["metric"] == "tool_args_judge"]


def counts(found: list[dict[str, Any]], wanted: set[str]) -> tuple[int, int]:
    """(judged with a verdict, refused by the budget) among the traces ``wanted``."""
    judged = refused = 0
    for line in found:
        if line["trace_id"] in wanted:
            (score,) = judge_scores(line)
            if score["error"] == "JudgeBudget":
                refused += 1
            elif score["error"] is None and not score["skipped"]:
                judged += 1
    return judged, refused


@pytest.fixture
def judge_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    return judge_server


def test_a_window_shared_by_two_workers_stops_at_its_budget_and_resumes_in_the_next(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    clock = ManualClock.shared(mp.get_context("spawn"), 100 * HOUR)
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            workers=2,
            judge_model="openai:judge-model",
            judge_cache=False,
            judge_concurrency=2,
            judge_budget=BUDGET,
            judge_budget_per="hour",
            judge_budget_clock=clock,
        )
    )
    try:
        port = receiver.http_port
        assert port is not None
        stats = receiver.receiver.stats

        first = ids("first window", 40)
        send(port, first)
        wait_until(lambda: len(lines(results)) == 40, "the first window's verdicts")
        judged, refused = counts(lines(results), set(first))
        assert judged + refused == 40
        assert abs(judged - BUDGET / COST) <= 2  # one judgement per worker at most past it
        assert judge_env.count == judged
        wait_until(lambda: stats()["judge_window_refused"] == refused, "the refusals published")
        window = stats()
        assert window["judge_window_spent_usd"] == pytest.approx(judged * COST)
        assert window["judge_window_remaining_usd"] == 0.0
        assert window["judge_window_budget_usd"] == pytest.approx(BUDGET)
        assert window["judge_window_start"] == "1970-01-05T04:00:00+00:00"

        # Test traffic is judged outside the spent window, and spends nothing of it.
        tests = ids("test runs", 6)
        send(port, tests, resource={"tooltrail.test": True})
        wait_until(lambda: len(lines(results)) == 46, "the test runs' verdicts")
        assert counts(lines(results), set(tests)) == (6, 0)
        assert all(line["test_traffic"] for line in lines(results) if line["trace_id"] in tests)
        assert stats()["judge_window_spent_usd"] == pytest.approx(judged * COST)

        # The window turns: the budget is whole again.
        clock.advance(HOUR)
        second = ids("second window", 40)
        send(port, second)
        wait_until(lambda: len(lines(results)) == 86, "the second window's verdicts")
        judged_again, refused_again = counts(lines(results), set(second))
        assert judged_again + refused_again == 40
        assert abs(judged_again - BUDGET / COST) <= 2
        assert stats()["judge_window_start"] == "1970-01-05T05:00:00+00:00"
        assert stats()["judge_window_spent_usd"] == pytest.approx(judged_again * COST)
        assert judge_env.count == judged + 6 + judged_again
    finally:
        final = receiver.stop()
    assert final["traces_test"] == 6
    refusal = next(
        s for line in lines(results) for s in judge_scores(line) if s["error"] == "JudgeBudget"
    )
    assert refusal["passed"] is False and "spend window" in refusal["judge"]["error"]


def test_test_traffic_is_scored_fully_outside_sampling(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SAMPLED_SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            judge_model="openai:judge-model",
            judge_cache=False,
            judge_queue=1000,
            test_environments=("ci",),
        )
    )
    marked = ids("marked", 40)
    staged = ids("ci environment", 40)
    production = ids("production", 200)
    try:
        port = receiver.http_port
        assert port is not None
        send(port, marked, resource={"tooltrail.test": "true"})
        send(port, staged, resource={"deployment.environment.name": "ci"})
        send(port, production, resource={"deployment.environment.name": "prod"})
        wait_until(lambda: len(lines(results)) == 280, "every verdict")
    finally:
        final = receiver.stop()
    found = lines(results)
    tests = set(marked) | set(staged)
    assert counts(found, tests) == (80, 0)  # every test run judged, whatever the sample
    assert all(line.get("test_traffic") is True for line in found if line["trace_id"] in tests)
    assert not any("sampled_out" in line for line in found if line["trace_id"] in tests)
    judged_production = counts(found, set(production))[0]
    assert 0 < judged_production < 60
    # Sampling counts production traffic only.
    assert final["sampling"]["refund/rare"]["judged"] == judged_production
    assert final["sampling"]["refund/rare"]["sampled_out"] == 200 - judged_production
    assert final["traces_test"] == 80 and final["traces_test_skipped"] == 0


def test_test_traffic_can_be_left_out_and_counted(tmp_path: Path, judge_env: JudgeServer) -> None:
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SAMPLED_SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            judge_model="openai:judge-model",
            judge_cache=False,
            test_traffic="skip",
        )
    )
    marked = ids("skipped", 20)
    production = ids("kept", 20)
    try:
        port = receiver.http_port
        assert port is not None
        send(port, marked, resource={"test.suite.name": "nightly"})
        send(port, production)
        stats = receiver.receiver.stats
        wait_until(lambda: stats()["traces_evaluated"] == 40, "every trace seen")
    finally:
        final = receiver.stop()
    found = lines(results)
    assert {line["trace_id"] for line in found} == set(production)
    assert final["traces_test_skipped"] == 20 and final["traces_test"] == 20
    assert final["traces_unmatched"] == 0
    assert (
        final["sampling"]["refund/rare"]["judged"] + final["sampling"]["refund/rare"]["sampled_out"]
        == 20
    )
