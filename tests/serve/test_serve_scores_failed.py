"""``scores_sent`` counts what the exporter confirmed; an unreachable endpoint shows in
``scores_failed``."""

from __future__ import annotations

from pathlib import Path

from serve_helpers import ANY_TRACE_SUITE, HttpLogsReceiver, post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of, closed_port

from tooltrail.pipeline.evaluation_events import otlp_log_exporter
from tooltrail.serve import ServeConfig, start_in_thread


def _serve(tmp_path: Path, exporter: object) -> dict[str, int]:
    receiver = start_in_thread(
        ServeConfig(suite=write_suite(tmp_path, ANY_TRACE_SUITE), grpc_port=None, http_port=0,
                    grace=0.05),
        log_exporter=exporter,
    )  # fmt: skip
    try:
        assert receiver.http_port is not None
        for _ in range(3):
            status, _, _ = post(receiver.http_port, body_of(agent_trace()), PROTOBUF)
            assert status == 200
    finally:
        stats = receiver.stop()
    return stats


def test_unreachable_scores_endpoint_counts_failed_not_sent(tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}/v1/logs"
    stats = _serve(tmp_path, otlp_log_exporter("http/protobuf", endpoint=endpoint, timeout=1))
    assert stats["cases_passed"] == 3
    assert stats["scores_sent"] == 0
    assert stats["scores_failed"] >= 3


def test_reachable_scores_endpoint_counts_sent(tmp_path: Path) -> None:
    logs = HttpLogsReceiver()
    try:
        stats = _serve(
            tmp_path, otlp_log_exporter("http/protobuf", endpoint=logs.endpoint + "/v1/logs")
        )
    finally:
        logs.stop()
    assert stats["scores_failed"] == 0
    assert stats["scores_sent"] == len(logs.records()) >= 3
