"""``tooltrail serve`` judges a hostile trace with every injected text fenced: the real receiver,
the real OpenAI and Anthropic SDKs, and the scripted judge server on loopback, which records
each request (tests/judge_fencing.py says what is asserted of it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import wait_until
from judge_fencing import (
    CASES,
    EVERYWHERE,
    RUBRIC,
    assert_fenced,
    assert_structured_output,
    injected_run,
    shown_values,
)
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from serve_helpers import post, write_suite
from serve_traces import PROTOBUF

from tooltrail.serve import ServeConfig, start_in_thread


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_serve_fences_every_injected_text_in_every_judge_request(
    tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", judge_server.anthropic_url)
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, f"name: hostile\ncases:\n{CASES}"),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            judge_model=f"{provider}:judge-model",
            judge_cache=False,
        )
    )
    try:
        port = receiver.http_port
        assert port is not None
        body = encode_spans(injected_run()).SerializeToString()
        assert post(port, body, PROTOBUF)[0] == 200
        wait_until(lambda: results.exists() and results.read_text().strip(), "the verdict")
    finally:
        receiver.stop()
    (line,) = [json.loads(text) for text in results.read_text().splitlines()]
    names = [s["name"] for r in line["results"] for s in r["scores"]]
    assert names == ["llm_judge", "tool_args_judge:fetch_page", "trajectory_judge"]
    requests = judge_server.requests
    assert len(requests) == 3
    held = [assert_fenced(request, shown_values(), [RUBRIC]) for request in requests]
    assert held == [EVERYWHERE, {"user message", "tool arguments"}, EVERYWHERE]
    for request in requests:
        assert_structured_output(request)
