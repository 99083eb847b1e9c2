"""``tooltrail serve`` with judge checks, end to end over loopback: the real receiver, the real
openai client, and the scripted judge server (tests/judge_server.py).

The judge is held by the server (each request waits until the test sends a request of its own),
so every assertion about "while the judge is busy" is made while it provably is; every wait is
on a condition with a generous bound, never on a duration.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures import wait_until
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from serve_helpers import LogsReceiver, attributes_of, post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.serve import ServeConfig, start_in_thread

WAIT_S = 60.0
SECRET = "4111111111111111"

SUITE = """\
name: judged
cases:
  - id: refund_args
    match: all
    required_tools: [issue_refund]
    evaluators:
      - name: tool_args_judge
        config: {tool: issue_refund, rubric: The amount is the order total.}
"""


def refund_trace(trace_id: str) -> bytes:
    arguments = json.dumps({"order_id": "ORD-1", "amount": 49.99, "card_number": SECRET})
    return body_of(
        agent_trace(
            trace_id,
            tool_attributes=[
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "issue_refund",
                    "gen_ai.tool.call.arguments": arguments,
                }
            ],
        )
    )


#: Trace ids by the judge worker that takes them (trace id modulo the workers).
EVEN = ["00000000000000000000000000000a10", "00000000000000000000000000000a12"]
ODD = "00000000000000000000000000000a11"


def lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def judged_scores(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for r in line["results"] for s in r["scores"] if s["name"].startswith("tool_args")]


@pytest.fixture
def judge_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    return judge_server


def test_serve_judges_off_the_ingest_path_and_sends_redacted_prompts(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server = judge_env
    server.hold_until(1000, total=3, max_wait_s=WAIT_S)  # held until the test's own request
    logs = LogsReceiver()
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            scores_endpoint=logs.endpoint,
            judge_model="openai:judge-model",
            judge_cache=False,
            judge_concurrency=2,
        )
    )
    try:
        port = receiver.http_port
        assert port is not None
        stats = receiver.receiver.stats
        assert post(port, refund_trace(EVEN[0]), PROTOBUF)[0] == 200
        wait_until(lambda: server.count == 1, "the first judge request")
        # The judge holds the first trace; its spans are no longer held by the intake.
        wait_until(lambda: stats()["spans_held"] == 0, "the intake to let the trace go")
        assert post(port, refund_trace(EVEN[1]), PROTOBUF)[0] == 200
        wait_until(lambda: stats()["judge_queue_waiting"] == 1, "the second trace queued")
        wait_until(lambda: stats()["spans_held"] == 0, "the intake to let the second go")
        assert post(port, refund_trace(ODD), PROTOBUF)[0] == 200
        wait_until(lambda: server.count == 2, "the other worker's judge request")
        assert server.count == 2 and lines(results) == []  # both held, nothing judged yet
        server.release()
        wait_until(lambda: stats()["traces_evaluated"] == 3, "three verdicts")
        wait_until(lambda: len(lines(results)) == 3, "three results lines")
        events = logs.wait_for(3, timeout=WAIT_S)
        final = receiver.stop()
    finally:
        logs.stop()
    for line in lines(results):
        (score,) = judged_scores(line)
        assert score["passed"] is True and score["judge"]["model"] == "openai:judge-model"
    named = [attributes_of(e).get("gen_ai.evaluation.name") for e in events]
    assert named.count("tool_args_judge:issue_refund") == 3
    prompts = [r.prompt for r in server.requests if r.body.get("model") == "judge-model"]
    assert len(prompts) == 3
    assert all(SECRET not in p and '"card_number":"[REDACTED]"' in p for p in prompts)
    assert final["judge_queue_judged"] == 3 and final["judge_calls"] == 3
    assert final["judge_queue_full"] == 0


def test_serve_with_a_full_judge_queue_gives_error_scores_and_counts_them(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    server = judge_env
    server.hold_until(1000, total=2, max_wait_s=WAIT_S)
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            judge_model="openai:judge-model",
            judge_cache=False,
            judge_concurrency=1,
            judge_queue=1,
        )
    )
    port = receiver.http_port
    assert port is not None
    stats = receiver.receiver.stats
    post(port, refund_trace(EVEN[0]), PROTOBUF)
    wait_until(lambda: server.count == 1, "the first judge request")
    post(port, refund_trace(EVEN[1]), PROTOBUF)
    wait_until(lambda: stats()["judge_queue_waiting"] == 1, "the second trace queued")
    post(port, refund_trace(ODD), PROTOBUF)  # finds the queue full
    wait_until(lambda: stats()["judge_queue_full"] == 1, "the full queue counted")
    wait_until(lambda: len(lines(results)) == 1, "the full trace's line")
    (full,) = lines(results)
    assert full["trace_id"] == ODD and full["verdict"] == "fail"
    (score,) = judged_scores(full)
    assert score["passed"] is False and score["value"] == 0 and score["error"] == "JudgeSkipped"
    other = [s for r in full["results"] for s in r["scores"] if s not in judged_scores(full)]
    assert other and all(s["passed"] for s in other)  # the other checks score as always
    server.release()
    wait_until(lambda: stats()["traces_evaluated"] == 3, "three verdicts")
    receiver.stop()
    assert [bool(judged_scores(line)[0]["passed"]) for line in lines(results)] == [
        False,
        True,
        True,
    ]


def test_a_revision_asks_the_judge_again_and_the_cache_answers_what_did_not_change(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    from tooltrail.otlp import Span

    server = judge_env
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            judge_model="openai:judge-model",
            judge_cache_path=tmp_path / "judge-cache.sqlite3",
        )
    )
    port = receiver.http_port
    assert port is not None
    spans = agent_trace(
        EVEN[0],
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "issue_refund",
                "gen_ai.tool.call.arguments": json.dumps({"amount": 49.99}),
            }
        ],
    )
    assert post(port, body_of(spans), PROTOBUF)[0] == 200
    wait_until(lambda: len(lines(results)) == 1, "the first verdict")
    assert server.count == 1
    late = Span(
        trace_id=EVEN[0],
        span_id="00000000000000aa",
        parent_span_id=spans[0].span_id,
        name="execute_tool",
        start_ns=4_000,
        end_ns=5_000,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "issue_refund",
            "gen_ai.tool.call.arguments": json.dumps({"amount": 5.0}),
        },
    )
    assert post(port, body_of([late]), PROTOBUF)[0] == 200
    wait_until(lambda: len(lines(results)) == 2, "the revision")
    final = receiver.stop()
    first, revision = lines(results)
    assert (first["revision"], revision["revision"]) == (0, 1)
    assert len(judged_scores(revision)) == 1
    # The revision judged the first call again ("call 1 of 2" now): one new request; the
    # verdict it supersedes was judged again from the cache (no request).
    assert server.count == 2
    assert "Call 1 of 2" in server.requests[1].prompt
    assert final["judge_cached"] == 1 and final["judge_calls"] == 2


def test_the_judge_flags_reach_the_judge_and_a_bad_one_stops_serve_before_it_listens(
    tmp_path: Path,
) -> None:
    import subprocess
    import sys

    suite = write_suite(tmp_path, SUITE)
    command = [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve"]
    command += ["--suite", str(suite), "--no-grpc"]
    command += ["--http-port", "0", "--judge-model", "opnai:judge-model"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "judge model 'opnai:judge-model': unknown provider 'opnai'" in done.stderr
    assert "listening" not in done.stderr


def test_a_judged_traces_line_is_on_file_without_a_stats_read(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    """The results file holds lines for a burst of traces; a judge worker's trace comes
    after the buffer went idle, so its line is written when the worker is done with it (no
    ``/stats`` read, no shutdown here until the line is there)."""
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            judge_model="openai:judge-model",
            judge_cache=False,
        )
    )
    try:
        port = receiver.http_port
        assert port is not None
        assert post(port, refund_trace(EVEN[0]), PROTOBUF)[0] == 200
        wait_until(lambda: len(lines(results)) == 1, "the judged trace's results line")
    finally:
        receiver.stop()
    (score,) = judged_scores(lines(results)[0])
    assert score["judge"]["model"] == "openai:judge-model"
