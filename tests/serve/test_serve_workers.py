"""``tooltrail serve`` with worker processes: spans routed by trace id, nothing lost or doubled."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from serve_helpers import ANY_TRACE_SUITE, corpus, post, write_suite

from tooltrail.convert import read_traces
from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread
from tooltrail.serve.shard import split_protobuf, worker_of

PB = {"Content-Type": "application/x-protobuf"}
SCENARIOS = [
    f"{framework}/{scenario}.otlp.pb"
    for framework in ("pydantic-ai", "google-adk", "mlflow-genai-semconv")
    for scenario in ("a_refund_ok", "c_refund_wrong_amount", "d_loop_web_search")
]


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningReceiver, Path]]:
    """One two-worker receiver for the module (worker processes take a moment to start)."""
    directory = tmp_path_factory.mktemp("workers")
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(directory, ANY_TRACE_SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.1,
            workers=2,
            results=directory / "results.jsonl",
            dump=directory / "dump" / "traces.jsonl",
        )
    )
    yield receiver, directory
    receiver.stop()


def trace_ids(data: bytes) -> set[str]:
    request = ExportTraceServiceRequest.FromString(data)
    return {
        s.trace_id.hex() for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans
    }


def results_of(directory: Path) -> list[dict]:
    return [orjson.loads(line) for line in (directory / "results.jsonl").read_bytes().splitlines()]


def wait_for_lines(directory: Path, trace_ids: set[str]) -> list[dict]:
    """The results lines of ``trace_ids``, once each has one. Waiting on these traces' own
    lines, not on a count: the module's receiver is shared, and a trace an earlier test sent
    may still be judged after this test has read the count."""
    deadline = time.monotonic() + 60
    while True:
        lines = [line for line in results_of(directory) if line["trace_id"] in trace_ids]
        if {line["trace_id"] for line in lines} == trace_ids:
            return lines
        assert time.monotonic() < deadline, (trace_ids, lines)
        time.sleep(0.05)


def test_split_keeps_every_span_of_a_trace_in_one_part() -> None:
    request = ExportTraceServiceRequest()
    for scenario in SCENARIOS:
        request.MergeFrom(ExportTraceServiceRequest.FromString(corpus(scenario)))
    data = request.SerializeToString()
    split = split_protobuf(data, 2)
    seen: dict[str, int] = {}
    for index, part in enumerate(split.parts):
        assert part is not None
        for trace_id in trace_ids(part):
            assert seen.setdefault(trace_id, index) == index
            assert worker_of(bytes.fromhex(trace_id), 2) == index
    assert set(seen) == trace_ids(data)
    assert split.accepted == sum(
        len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans
    )


def test_every_trace_is_evaluated_exactly_once_across_workers(pool) -> None:
    receiver, directory = pool
    sent: set[str] = set()
    for scenario in SCENARIOS:
        status, _, _ = post(receiver.http_port, corpus(scenario), PB)
        assert status == 200
        sent |= trace_ids(corpus(scenario))
    wait_for_lines(directory, sent)
    time.sleep(0.5)  # room for a second verdict of any of them, which must not come
    lines = [line["trace_id"] for line in results_of(directory) if line["trace_id"] in sent]
    assert sorted(lines) == sorted(sent)


def test_a_trace_sent_in_two_requests_is_evaluated_whole(pool) -> None:
    receiver, directory = pool
    request = ExportTraceServiceRequest.FromString(
        corpus("google-adk/b_refund_skip_verify.otlp.pb")
    )
    (trace_id,) = trace_ids(request.SerializeToString())
    children, root = ExportTraceServiceRequest(), ExportTraceServiceRequest()
    for rs in request.resource_spans:
        for target in (children, root):
            group = target.resource_spans.add()
            group.resource.CopyFrom(rs.resource)
        for ss in rs.scope_spans:
            for span in ss.spans:
                target = root if not span.parent_span_id else children
                scope = target.resource_spans[-1].scope_spans.add()
                scope.scope.CopyFrom(ss.scope)
                scope.spans.append(span)
    assert post(receiver.http_port, children.SerializeToString(), PB)[0] == 200
    assert post(receiver.http_port, root.SerializeToString(), PB)[0] == 200
    (line,) = wait_for_lines(directory, {trace_id})
    assert (line["partial"], line["reason"]) == (False, "complete")


def test_bad_ids_are_rejected_by_the_router_with_partial_success(pool) -> None:
    receiver, directory = pool
    request = ExportTraceServiceRequest.FromString(corpus("pydantic-ai/f_tool_error_retry.otlp.pb"))
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    spans[0].trace_id = bytes(16)
    status, _, body = post(receiver.http_port, request.SerializeToString(), PB)
    partial = ExportTraceServiceResponse.FromString(body).partial_success
    assert status == 200
    assert partial.rejected_spans == 1
    assert "spans[0].traceId" in partial.error_message
    wait_for_lines(directory, trace_ids(request.SerializeToString()) - {bytes(16).hex()})


def test_json_requests_are_routed_too(pool) -> None:
    receiver, directory = pool
    body = corpus("strands/a_refund_ok.otlp.jsonl")
    (trace_id,) = {
        s["traceId"]
        for rs in json.loads(body)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }
    status, _, _ = post(receiver.http_port, body, {"Content-Type": "application/json"})
    assert status == 200
    wait_for_lines(directory, {trace_id})


def test_each_worker_dumps_to_its_own_file_readable_by_read_traces(tmp_path: Path) -> None:
    receiver = start_in_thread(
        ServeConfig(
            grpc_port=None, http_port=0, grace=0.1, workers=2, dump=tmp_path / "traces.jsonl"
        )
    )
    sent: set[str] = set()
    try:
        for scenario in SCENARIOS:
            post(receiver.http_port, corpus(scenario), PB)
            sent |= trace_ids(corpus(scenario))
    finally:
        receiver.stop()
    files = sorted(tmp_path.iterdir())
    assert [p.name for p in files] == ["traces.w1.jsonl", "traces.w2.jsonl"]
    dumped = [t.trace_id for t in read_traces(files)]
    assert sorted(dumped) == sorted(sent)


def test_full_workers_answer_503(tmp_path: Path) -> None:
    receiver = start_in_thread(
        ServeConfig(grpc_port=None, http_port=0, grace=60.0, workers=2, max_buffered_spans=4)
    )
    try:
        assert post(receiver.http_port, corpus(SCENARIOS[0]), PB)[0] == 200
        deadline = time.monotonic() + 5
        status = 200
        while status == 200 and time.monotonic() < deadline:
            status, headers, _ = post(receiver.http_port, corpus(SCENARIOS[1]), PB)
        assert status == 503 and headers["retry-after"] == "1"
    finally:
        stats = receiver.stop()
    assert stats["spans_held"] == 0
    assert stats["traces_evaluated"] >= 1
