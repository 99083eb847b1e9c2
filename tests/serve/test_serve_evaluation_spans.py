"""Issue 35, item 5 (opt-in): ``--evaluation-spans``: one ``gen_ai.evaluation.internal`` span
per evaluated trace (the GenAI conventions' proposal: kind INTERNAL, ``gen_ai.operation.name``
``evaluation``), a trace of its own linked to the evaluated trace's root span, with the
verdict, what judging took, and each score as an event with its provenance."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures import wait_until
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from serve_helpers import post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.serve import ServeConfig, start_in_thread

SUITE = """\
name: spans
cases:
  - id: refund
    match: all
    required_tools: [issue_refund]
    evaluators:
      - name: tool_args_judge
        config: {tool: issue_refund, rubric: The amount is the order total.}
"""


def spans_of(trace_id: str, tool: str) -> list[Any]:
    return agent_trace(
        trace_id,
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": json.dumps({"order_id": "ORD-1"}),
            }
        ],
    )


@pytest.fixture
def judge_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    return judge_server


def test_each_evaluated_trace_gets_one_evaluation_span_linked_to_its_root(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    exporter = InMemorySpanExporter()
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            judge_model="openai:judge-model",
            judge_cache=False,
            evaluation_spans=True,
        ),
        span_exporter=exporter,
    )
    passing, failing = "a1" * 16, "b2" * 16
    sent = spans_of(passing, "issue_refund") + spans_of(failing, "lookup_order")
    roots = {s.trace_id: s.span_id for s in sent if not s.parent_span_id}
    try:
        port = receiver.http_port
        assert port is not None
        assert post(port, body_of(sent), PROTOBUF)[0] == 200
        stats = receiver.receiver.stats
        wait_until(lambda: stats()["traces_evaluated"] == 2, "both verdicts")
    finally:
        receiver.stop()
    spans = exporter.get_finished_spans()
    assert len(spans) == 2
    by_trace = {}
    for span in spans:
        (link,) = span.links
        evaluated = f"{link.context.trace_id:032x}"
        assert f"{link.context.span_id:016x}" == roots[evaluated]
        assert span.context.trace_id != link.context.trace_id  # a trace of its own
        assert span.parent is None and span.kind is SpanKind.INTERNAL
        assert span.name == "evaluation spans"
        assert span.attributes["gen_ai.operation.name"] == "evaluation"
        by_trace[evaluated] = span
    good, bad = by_trace[passing], by_trace[failing]
    assert good.attributes["tooltrail.verdict"] == "pass"
    assert good.status.status_code is StatusCode.UNSET
    assert good.attributes["tooltrail.judge.calls"] == 1
    assert good.attributes["gen_ai.usage.input_tokens"] == 100
    assert bad.attributes["tooltrail.verdict"] == "fail"
    assert bad.status.status_code is StatusCode.ERROR
    assert list(bad.attributes["tooltrail.failed_checks"]) == [
        "required_tool:issue_refund",
        "tool_args_judge:issue_refund",  # no call of the tool: no arguments judged
    ]
    events = {e.attributes["gen_ai.evaluation.name"]: e for e in good.events}
    assert set(events) == {"required_tool:issue_refund", "tool_args_judge:issue_refund"}
    judged = events["tool_args_judge:issue_refund"].attributes
    assert judged["tooltrail.judge.model"] == "openai:judge-model"
    assert len(judged["tooltrail.check.config_hash"]) == 16
    tool_span = next(s.span_id for s in sent if s.trace_id == passing and s.parent_span_id)
    assert events["required_tool:issue_refund"].attributes["tooltrail.judged_span_id"] == tool_span


def test_without_the_option_no_evaluation_span_is_sent(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE.split("    evaluators:")[0]),
            grpc_port=None,
            http_port=0,
            grace=0.05,
        ),
        span_exporter=exporter,
    )
    try:
        port = receiver.http_port
        assert port is not None
        assert post(port, body_of(spans_of("c3" * 16, "issue_refund")), PROTOBUF)[0] == 200
        stats = receiver.receiver.stats
        wait_until(lambda: stats()["traces_evaluated"] == 1, "the verdict")
    finally:
        receiver.stop()
    assert exporter.get_finished_spans() == ()
