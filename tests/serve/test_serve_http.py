"""OTLP/HTTP protocol of ``tooltrail serve``: every status code, on a real server on loopback."""

from __future__ import annotations

import gzip
import json
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zstandard
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from serve_helpers import ANY_TRACE_SUITE, corpus, post, write_suite

from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread

PB = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
REFUND_PB = "pydantic-ai/a_refund_ok.otlp.pb"
REFUND_JSON = "pydantic-ai/a_refund_ok.otlp.jsonl"
LIMIT = 256 * 1024


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., RunningReceiver]]:
    """Start receivers (HTTP only, free port, short grace); all are stopped after the test."""
    started: list[RunningReceiver] = []

    def start(**overrides: object) -> RunningReceiver:
        settings: dict[str, object] = {
            "suite": write_suite(tmp_path, ANY_TRACE_SUITE),
            "grpc_port": None,
            "http_port": 0,
            "grace": 0.05,
            "max_request_bytes": LIMIT,
            "results": tmp_path / "results.jsonl",
        }
        settings.update(overrides)
        receiver = start_in_thread(ServeConfig(**settings))  # type: ignore[arg-type]
        started.append(receiver)
        return receiver

    yield start
    for receiver in started:
        receiver.stop()


def wait_for_stats(receiver: RunningReceiver, key: str, value: int) -> dict[str, int]:
    deadline = time.monotonic() + 60  # generous: the machine may be loaded
    while True:
        stats = receiver.receiver.stats()
        if stats[key] >= value or time.monotonic() > deadline:
            return stats
        time.sleep(0.02)


def status_of(body: bytes) -> status_pb2.Status:
    return status_pb2.Status.FromString(body)


def with_bad_ids(data: bytes) -> tuple[bytes, int, int]:
    """The request with one span's trace id cut short and another's span id zeroed."""
    request = ExportTraceServiceRequest.FromString(data)
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    spans[0].trace_id = b"\x01\x02\x03"
    spans[1].span_id = bytes(8)
    return request.SerializeToString(), len(spans), 2


def test_protobuf_export_is_answered_with_an_empty_protobuf_response(serve) -> None:
    receiver = serve()
    status, headers, body = post(receiver.http_port, corpus(REFUND_PB), PB)
    assert status == 200
    assert headers["content-type"] == "application/x-protobuf"
    assert ExportTraceServiceResponse.FromString(body) == ExportTraceServiceResponse()


def test_json_export_is_answered_with_an_empty_json_object(serve) -> None:
    receiver = serve()
    status, headers, body = post(receiver.http_port, corpus(REFUND_JSON), JSON)
    assert status == 200
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {}


def test_content_type_parameters_are_ignored(serve) -> None:
    receiver = serve()
    headers = {"Content-Type": "application/json; charset=utf-8"}
    assert post(receiver.http_port, corpus(REFUND_JSON), headers)[0] == 200


@pytest.mark.parametrize(
    ("coding", "compress"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("zstd", lambda data: zstandard.ZstdCompressor().compress(data)),
    ],
)
def test_compressed_bodies_are_accepted(serve, coding: str, compress) -> None:
    receiver = serve()
    body = compress(corpus(REFUND_PB))
    status, _, _ = post(receiver.http_port, body, {**PB, "Content-Encoding": coding})
    assert status == 200
    stats = wait_for_stats(receiver, "spans_received", 1)
    assert stats["spans_received"] == len(
        [s for rs in ExportTraceServiceRequest.FromString(corpus(REFUND_PB)).resource_spans
         for ss in rs.scope_spans for s in ss.spans]
    )  # fmt: skip


def test_received_trace_is_evaluated_once_complete(serve) -> None:
    receiver = serve()
    post(receiver.http_port, corpus(REFUND_PB), PB)
    stats = wait_for_stats(receiver, "traces_evaluated", 1)
    assert stats["traces_evaluated"] == 1
    assert stats["cases_passed"] == 1
    assert stats["traces_partial"] == 0


def test_spans_with_bad_ids_are_rejected_with_partial_success_in_protobuf(serve) -> None:
    receiver = serve()
    body, total, bad = with_bad_ids(corpus(REFUND_PB))
    status, _, answer = post(receiver.http_port, body, PB)
    assert status == 200
    partial = ExportTraceServiceResponse.FromString(answer).partial_success
    assert partial.rejected_spans == bad
    assert "traceId" in partial.error_message and "spanId" in partial.error_message
    stats = receiver.receiver.stats()
    assert (stats["spans_received"], stats["spans_rejected"]) == (total - bad, bad)


def test_spans_with_bad_ids_are_rejected_with_partial_success_in_json(serve) -> None:
    receiver = serve()
    document = json.loads(corpus(REFUND_JSON))
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["traceId"] = "not-hex"
    status, _, answer = post(receiver.http_port, json.dumps(document).encode(), JSON)
    assert status == 200
    partial = json.loads(answer)["partialSuccess"]
    assert partial["rejectedSpans"] == "1"
    assert "resourceSpans[0].scopeSpans[0].spans[0].traceId" in partial["errorMessage"]


def test_undecodable_protobuf_is_400_with_a_status_body(serve) -> None:
    receiver = serve()
    status, headers, body = post(receiver.http_port, b"\xff\xff\xff\xff not protobuf", PB)
    assert status == 400
    assert headers["content-type"] == "application/x-protobuf"
    assert status_of(body).code == code_pb2.INVALID_ARGUMENT
    assert "not an OTLP traces request" in status_of(body).message


def test_invalid_json_is_400_with_a_json_status(serve) -> None:
    receiver = serve()
    status, headers, body = post(receiver.http_port, b'{"resourceSpans": [', JSON)
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert json.loads(body)["code"] == code_pb2.INVALID_ARGUMENT


def test_json_that_is_not_a_traces_request_is_400(serve) -> None:
    receiver = serve()
    status, _, body = post(receiver.http_port, b'{"hello": "world"}', JSON)
    assert status == 400
    assert "resourceSpans" in json.loads(body)["message"]


def test_corrupt_gzip_is_400(serve) -> None:
    receiver = serve()
    body = gzip.compress(corpus(REFUND_PB))[:-20]
    status, _, answer = post(receiver.http_port, body, {**PB, "Content-Encoding": "gzip"})
    assert status == 400
    assert "gzip" in status_of(answer).message


def test_unknown_content_type_is_415(serve) -> None:
    receiver = serve()
    status, _, body = post(receiver.http_port, b"hello", {"Content-Type": "text/plain"})
    assert status == 415
    assert "text/plain" in status_of(body).message


def test_missing_content_type_is_415(serve) -> None:
    receiver = serve()
    assert post(receiver.http_port, corpus(REFUND_PB), {})[0] == 415


def test_unknown_content_encoding_is_415(serve) -> None:
    receiver = serve()
    status, _, body = post(receiver.http_port, b"abc", {**PB, "Content-Encoding": "br"})
    assert status == 415
    assert "br" in status_of(body).message


def test_declared_length_over_the_limit_is_413(serve) -> None:
    receiver = serve()
    status, _, body = post(receiver.http_port, b"\0" * (LIMIT + 1), PB)
    assert status == 413
    assert status_of(body).code == code_pb2.RESOURCE_EXHAUSTED


def test_chunked_body_over_the_limit_is_413(serve) -> None:
    receiver = serve()
    chunks = (b"\0" * 65536 for _ in range(LIMIT // 65536 + 2))
    status, _, _ = post_chunked(receiver.http_port, chunks)
    assert status == 413


def test_gzip_bomb_is_refused_by_the_decompressed_size_limit(serve) -> None:
    receiver = serve()
    bomb = gzip.compress(b"\0" * (64 * LIMIT))
    assert len(bomb) < LIMIT
    status, _, body = post(receiver.http_port, bomb, {**PB, "Content-Encoding": "gzip"})
    assert status == 413
    assert "decompresses to over" in status_of(body).message


def test_zstd_bomb_is_refused_by_the_decompressed_size_limit(serve) -> None:
    receiver = serve()
    bomb = zstandard.ZstdCompressor().compress(b"\0" * (64 * LIMIT))
    status, _, _ = post(receiver.http_port, bomb, {**PB, "Content-Encoding": "zstd"})
    assert status == 413


def test_full_buffer_answers_503_with_retry_after(serve) -> None:
    # 5: the refund trace's 9 spans fill the intake, and fit the buffer behind it (twice
    # the limit, 10); with 4 the buffer gives the trace up and frees the intake, a race with
    # the second request.
    receiver = serve(max_buffered_spans=5, grace=60.0, retry_after=2.0)
    assert post(receiver.http_port, corpus(REFUND_PB), PB)[0] == 200
    status, headers, body = post(receiver.http_port, corpus(REFUND_JSON), JSON)
    assert status == 503
    assert headers["retry-after"] == "2"
    assert json.loads(body)["code"] == code_pb2.UNAVAILABLE
    assert receiver.receiver.stats()["requests_throttled"] == 1


def test_spans_held_when_the_buffer_is_full_are_still_evaluated_at_shutdown(serve) -> None:
    # 5: the refund trace's 9 spans fill the intake, and fit the buffer behind it (twice
    # the limit, 10); with 4 the buffer gives the trace up and frees the intake, a race with
    # the second request.
    receiver = serve(max_buffered_spans=5, grace=60.0)
    post(receiver.http_port, corpus(REFUND_PB), PB)
    post(receiver.http_port, corpus(REFUND_PB), PB)
    stats = receiver.stop()
    assert stats["traces_evaluated"] == 1
    assert stats["spans_held"] == 0


def test_healthz_answers_ok(serve) -> None:
    receiver = serve()
    status, _, body = post(receiver.http_port, b"", path="/healthz", method="GET")
    assert (status, json.loads(body)) == (200, {"status": "ok"})


def test_stats_reports_the_counters(serve) -> None:
    receiver = serve()
    post(receiver.http_port, corpus(REFUND_PB), PB)
    post(receiver.http_port, b"junk", PB)
    wait_for_stats(receiver, "traces_evaluated", 1)
    status, headers, body = post(receiver.http_port, b"", path="/stats", method="GET")
    stats = json.loads(body)
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert stats["requests"] == 2
    assert stats["requests_refused"] == 1
    assert stats["spans_received"] > 0
    assert stats["traces_evaluated"] == 1
    assert {"spans_rejected", "traces_partial", "scores_sent"} <= set(stats)


def test_get_on_the_traces_path_is_405(serve) -> None:
    receiver = serve()
    assert post(receiver.http_port, b"", method="GET")[0] == 405


def test_unknown_path_is_404(serve) -> None:
    receiver = serve()
    assert post(receiver.http_port, corpus(REFUND_PB), PB, path="/v1/metrics")[0] == 404


def post_chunked(port: int, chunks: Iterator[bytes]) -> tuple[int, dict[str, str], bytes]:
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("POST", "/v1/traces", body=chunks, headers=PB, encode_chunked=True)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    except (BrokenPipeError, ConnectionResetError):
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def split_root(data: bytes) -> tuple[bytes, bytes]:
    """The request's spans without the root span, and the root span alone."""
    request = ExportTraceServiceRequest.FromString(data)
    children, root = ExportTraceServiceRequest(), ExportTraceServiceRequest()
    children.CopyFrom(request)
    root.CopyFrom(request)
    for part, keep_root in ((children, False), (root, True)):
        for rs in part.resource_spans:
            for ss in rs.scope_spans:
                kept = [s for s in ss.spans if (not s.parent_span_id) == keep_root]
                del ss.spans[:]
                ss.spans.extend(kept)
    return children.SerializeToString(), root.SerializeToString()


def results_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_trace_whose_root_never_arrives_is_evaluated_partial_at_max_age(serve, tmp_path) -> None:
    receiver = serve(max_age=0.3)
    children, _ = split_root(corpus(REFUND_PB))
    assert post(receiver.http_port, children, PB)[0] == 200
    stats = wait_for_stats(receiver, "traces_evaluated", 1)
    assert (stats["traces_evaluated"], stats["traces_partial"]) == (1, 1)
    receiver.stop()
    (line,) = results_lines(tmp_path / "results.jsonl")
    assert (line["partial"], line["reason"]) == (True, "max_age")


def test_root_arriving_in_a_later_request_completes_the_trace(serve, tmp_path) -> None:
    receiver = serve()
    children, root = split_root(corpus(REFUND_PB))
    post(receiver.http_port, children, PB)
    post(receiver.http_port, root, PB)
    wait_for_stats(receiver, "traces_evaluated", 1)
    receiver.stop()
    (line,) = results_lines(tmp_path / "results.jsonl")
    assert (line["partial"], line["reason"]) == (False, "complete")


def test_spans_after_the_verdict_revise_it(serve, tmp_path) -> None:
    receiver = serve()
    children, root = split_root(corpus(REFUND_PB))
    post(receiver.http_port, root, PB)
    wait_for_stats(receiver, "traces_evaluated", 1)
    post(receiver.http_port, children, PB)
    stats = wait_for_stats(receiver, "traces_revised", 1)
    assert (stats["late_pieces"], stats["traces_evaluated"]) == (1, 1)
    receiver.stop()
    first, revised = results_lines(tmp_path / "results.jsonl")
    assert (first["revision"], first["reason"]) == (0, "complete")
    assert (revised["revision"], revised["reason"], revised["partial"]) == (1, "late", False)
    assert revised["trace_id"] == first["trace_id"]
    assert revised["changed"]["calls"][0] == 0 < revised["changed"]["calls"][1]


def test_spans_past_the_revision_limit_are_named_once_unjudged(serve, tmp_path) -> None:
    receiver = serve(max_revisions=0)
    children, root = split_root(corpus(REFUND_PB))
    post(receiver.http_port, root, PB)
    wait_for_stats(receiver, "traces_evaluated", 1)
    post(receiver.http_port, children, PB)
    # The piece is counted late when it comes, its spans unjudged once it is judged so.
    stats = wait_for_stats(receiver, "late_spans_unjudged", 1)
    assert stats["late_pieces"] == 1
    assert (stats["traces_revised"], stats["late_spans_unjudged"]) == (
        0,
        stats["spans_received"] - 1,
    )
    receiver.stop()
    first, unjudged = results_lines(tmp_path / "results.jsonl")
    assert first["revision"] == 0
    assert (unjudged["reason"], unjudged["revision"], unjudged["verdict"]) == (
        "late_unjudged",
        None,
        None,
    )
    assert unjudged["late_spans"] == stats["late_spans_unjudged"]
