"""Issue 35, done-when 1: ``tooltrail serve`` with a judge check at ``sample: 0.1`` and one at
``0.5`` over 2,000 traces judges 10% +/- 2% (and 50%) of them, the same trace ids on a second
run and with ``--workers 2``, the 0.5 check every trace the 0.1 one judged; the counters of
``/stats`` agree with the results file. Real receiver, real openai client, the scripted judge
server (tests/judge_server.py)."""

from __future__ import annotations

import json
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest
from fixtures import wait_until
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from serve_helpers import post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.serve import ServeConfig, start_in_thread

TRACES = 2000
PER_REQUEST = 50
SUITE = """\
name: sampled-judges
cases:
  - id: refund
    match: all
    required_tools: [issue_refund]
    evaluators:
      - name: tool_args_judge
        sample: 0.1
        config: {name: rare, tool: issue_refund, rubric: The amount is the order total.}
      - name: tool_args_judge
        sample: {rate: 0.5}
        config: {name: common, tool: issue_refund, rubric: The amount is the order total.}
"""


def trace_ids() -> list[str]:
    return [sha256(f"sampled {n}".encode()).hexdigest()[:32] for n in range(TRACES)]


def refund_spans(trace_id: str) -> list[Any]:
    arguments = json.dumps({"order_id": "ORD-1", "amount": 49.99})
    return agent_trace(
        trace_id,
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "issue_refund",
                "gen_ai.tool.call.arguments": arguments,
            }
        ],
    )


def serve_all(tmp_path: Path, name: str, workers: int) -> tuple[dict[str, Any], list[dict]]:
    """One run of the receiver over every trace: its final stats and its results lines."""
    results = tmp_path / f"{name}.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            workers=workers,
            judge_model="openai:judge-model",
            judge_cache=False,
            judge_concurrency=4,
            judge_queue=2 * TRACES,  # every trace waits its turn: none is judged "queue full"
        )
    )
    try:
        port = receiver.http_port
        assert port is not None
        ids = trace_ids()
        for start in range(0, TRACES, PER_REQUEST):
            spans = [s for t in ids[start : start + PER_REQUEST] for s in refund_spans(t)]
            assert post(port, body_of(spans), PROTOBUF)[0] == 200
        stats = receiver.receiver.stats
        wait_until(lambda: stats()["traces_evaluated"] == TRACES, "every trace judged", 300)
    finally:
        final = receiver.stop()
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    return final, lines


def judged_by(lines: list[dict], check: str) -> set[str]:
    """The traces whose results carry a verdict of ``check`` (not a skip)."""
    found = set()
    for line in lines:
        for score in line["results"][0]["scores"]:
            if score["name"].startswith(f"{check}:") and not score["skipped"]:
                found.add(line["trace_id"])
    return found


def sampled_out(lines: list[dict], check: str) -> set[str]:
    return {line["trace_id"] for line in lines if f"refund/{check}" in line.get("sampled_out", [])}


@pytest.fixture
def judge_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    return judge_server


def test_sampled_judges_take_the_same_share_of_the_same_traces_every_run(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    first, lines = serve_all(tmp_path, "first", workers=1)
    assert len(lines) == TRACES and {line["revision"] for line in lines} == {0}
    rare, common = judged_by(lines, "rare"), judged_by(lines, "common")
    assert 0.08 * TRACES <= len(rare) <= 0.12 * TRACES
    assert 0.48 * TRACES <= len(common) <= 0.52 * TRACES
    assert rare <= common  # a rarer sample inside a commoner one
    # A check not sampled gives no verdict and the results say so; it called no model.
    assert sampled_out(lines, "rare") == set(trace_ids()) - rare
    assert sampled_out(lines, "common") == set(trace_ids()) - common
    skip = next(s for line in lines for s in line["results"][0]["scores"] if s["name"] == "rare")
    assert skip["skipped"] and skip["metadata"] == {"sampled_out": True, "sample_rate": 0.1}
    assert all(line["verdict"] == "pass" for line in lines)
    assert judge_env.count == len(rare) + len(common)
    # The counters agree with the results file.
    assert first["sampling"] == {
        "refund/rare": {
            "rate": 0.1,
            "by": None,
            "judged": len(rare),
            "sampled_out": TRACES - len(rare),
        },
        "refund/common": {
            "rate": 0.5,
            "by": None,
            "judged": len(common),
            "sampled_out": TRACES - len(common),
        },
    }
    assert first["judge_calls"] == len(rare) + len(common)

    again, lines_again = serve_all(tmp_path, "again", workers=1)
    assert judged_by(lines_again, "rare") == rare and judged_by(lines_again, "common") == common
    assert again["sampling"] == first["sampling"]

    pooled, lines_pooled = serve_all(tmp_path, "pooled", workers=2)
    assert len(lines_pooled) == TRACES
    assert judged_by(lines_pooled, "rare") == rare
    assert judged_by(lines_pooled, "common") == common
    assert pooled["sampling"] == first["sampling"]
    assert pooled["judge_calls"] == len(rare) + len(common)
