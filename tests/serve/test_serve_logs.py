"""OTLP logs into ``tooltrail serve``: the content of a trace (the model's reply, the tool calls
it asked for) arrives as log records, on their own schedule, and the verdict reads it.

The fixture ``data/logs/openai_v2_weather.json`` is a trace whose calls and reply exist only in
its log records: without them the policy below fails, with them it passes.
"""

from __future__ import annotations

import copy
import gzip
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from external_truth import split_fixture
from fixtures import DATA
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from serve_helpers import post, write_suite

from tooltrail.convert import read_traces
from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread

FIXTURE = DATA / "logs" / "openai_v2_weather.json"
TRACE = "5b8efff798038103d269b633813fc60c"
OTHER_TRACE = "0123456789abcdef0123456789abcdef"
PB = {"Content-Type": "application/x-protobuf"}
JSON = {"Content-Type": "application/json"}
LIMIT = 256 * 1024
SUITE = """\
name: weather
cases:
  - id: weather
    match: all
    required_tools: [get_weather]
    expected_contains: ["Bergen: sun"]
"""


def _doc() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())  # type: ignore[no-any-return]


def _records(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]  # type: ignore[no-any-return]


#: Records the receiver keeps (the others are prompts: counted, not kept).
CONTENT = sum(1 for r in _records(_doc()) if r["eventName"] == "gen_ai.choice")
ALL_RECORDS = len(_records(_doc()))


def spans_json() -> bytes:
    return json.dumps({"resourceSpans": _doc()["resourceSpans"]}).encode()


def logs_json(doc: dict[str, Any] | None = None) -> bytes:
    return json.dumps({"resourceLogs": (doc or _doc())["resourceLogs"]}).encode()


def protobuf_bodies(tmp_path: Path) -> tuple[bytes, bytes]:
    """(traces request, logs request) of the fixture as protobuf."""
    traces_file, logs_file = split_fixture(FIXTURE, tmp_path, "pb")
    traces, logs = traces_file.read_bytes()[4:], logs_file.read_bytes()[4:]
    assert ExportTraceServiceRequest.FromString(traces).resource_spans
    assert ExportLogsServiceRequest.FromString(logs).resource_logs
    return traces, logs


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., RunningReceiver]]:
    """Receivers on free ports (HTTP and gRPC), short grace; all stopped after the test."""
    started: list[RunningReceiver] = []

    def start(**overrides: object) -> RunningReceiver:
        settings: dict[str, object] = {
            "suite": write_suite(tmp_path, SUITE),
            "grpc_port": 0,
            "http_port": 0,
            "grace": 0.05,
            "logs_grace": 0.5,
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


def wait_for(receiver: RunningReceiver, key: str, value: int, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        stats = receiver.receiver.stats()
        if stats[key] >= value or time.monotonic() > deadline:
            return stats
        time.sleep(0.02)


def verdicts(tmp_path: Path, count: int = 0, timeout: float = 60) -> list[dict[str, Any]]:
    """The results file's lines, once it holds at least ``count`` of them (a bounded wait:
    the tests that read them after ``/stats`` counted their traces need none)."""
    path = tmp_path / "results.jsonl"
    deadline = time.monotonic() + timeout
    while True:
        text = path.read_text() if path.exists() else ""
        lines = [json.loads(line) for line in text.splitlines() if line.endswith("}")]
        if len(lines) >= count or time.monotonic() > deadline:
            return lines
        time.sleep(0.02)


def failed_checks(line: dict[str, Any]) -> list[str]:
    return [s["name"] for r in line["results"] for s in r["scores"] if not s["passed"]]


def assert_one_passing_verdict(receiver: RunningReceiver, tmp_path: Path) -> dict:
    stats = wait_for(receiver, "traces_evaluated", 1)
    assert stats["traces_evaluated"] == 1
    [line] = verdicts(tmp_path, 1)
    assert line["trace_id"] == TRACE
    assert line["passed"], failed_checks(line)
    assert line["partial"] is False
    return stats


# -- the join -------------------------------------------------------------------------------


def test_without_logs_the_verdict_fails(serve, tmp_path: Path) -> None:
    receiver = serve()
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    wait_for(receiver, "traces_evaluated", 1)
    [line] = verdicts(tmp_path, 1)
    assert not line["passed"]
    assert set(failed_checks(line)) == {"required_tool:get_weather", "contains:Bergen: sun"}


def test_json_logs_before_spans_give_the_verdict_its_content(serve, tmp_path: Path) -> None:
    receiver = serve()
    status, headers, body = post(receiver.http_port, logs_json(), JSON, path="/v1/logs")
    assert (status, headers["content-type"], json.loads(body)) == (200, "application/json", {})
    assert wait_for(receiver, "spans_held", CONTENT)["spans_held"] == CONTENT
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    stats = assert_one_passing_verdict(receiver, tmp_path)
    assert stats["log_records_received"] == CONTENT
    assert stats["log_records_not_content"] == ALL_RECORDS - CONTENT
    assert stats["log_records_late"] == stats["log_records_orphaned"] == 0
    assert stats["log_records_unjoined"] == 0
    assert wait_for(receiver, "spans_released", 3 + CONTENT)["spans_held"] == 0


@pytest.mark.parametrize("logs_first", [True, False])
def test_protobuf_logs_before_or_after_spans(serve, tmp_path: Path, logs_first: bool) -> None:
    traces, logs = protobuf_bodies(tmp_path)
    receiver = serve()
    if not logs_first:
        # A receiver that has taken logs before waits logs_grace after a root for its records.
        assert post(receiver.http_port, b"", PB, path="/v1/logs")[0] == 200
    order = [("/v1/logs", logs), ("/v1/traces", traces)]
    for path, body in order if logs_first else reversed(order):
        status, headers, answer = post(receiver.http_port, body, PB, path=path)
        assert status == 200
        assert headers["content-type"] == "application/x-protobuf"
        if path == "/v1/logs":
            assert ExportLogsServiceResponse.FromString(answer) == ExportLogsServiceResponse()
    stats = assert_one_passing_verdict(receiver, tmp_path)
    assert stats["log_records_received"] == CONTENT


def test_compressed_logs_are_accepted(serve, tmp_path: Path) -> None:
    receiver = serve()
    headers = {**JSON, "Content-Encoding": "gzip"}
    assert post(receiver.http_port, gzip.compress(logs_json()), headers, path="/v1/logs")[0] == 200
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    assert_one_passing_verdict(receiver, tmp_path)


def test_grpc_logs_and_traces(serve, tmp_path: Path) -> None:
    traces, logs = protobuf_bodies(tmp_path)
    receiver = serve(http_port=None)
    with grpc.insecure_channel(f"127.0.0.1:{receiver.grpc_port}") as channel:
        answer = logs_service_pb2_grpc.LogsServiceStub(channel).Export(
            ExportLogsServiceRequest.FromString(logs), timeout=10
        )
        assert not answer.HasField("partial_success")
        trace_service_pb2_grpc.TraceServiceStub(channel).Export(
            ExportTraceServiceRequest.FromString(traces), timeout=10
        )
        stats = assert_one_passing_verdict(receiver, tmp_path)
        assert stats["log_records_received"] == CONTENT
        with pytest.raises(grpc.RpcError) as caught:
            channel.unary_unary(
                "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
                request_serializer=None,
                response_deserializer=None,
            )(b"\xff\xff\xff", timeout=10)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "not an OTLP logs request" in caught.value.details()


def test_two_workers_route_records_to_the_worker_of_their_trace(serve, tmp_path: Path) -> None:
    traces, logs = protobuf_bodies(tmp_path)
    receiver = serve(workers=2)
    assert post(receiver.http_port, logs, PB, path="/v1/logs")[0] == 200
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    stats = assert_one_passing_verdict(receiver, tmp_path)
    assert stats["log_records_received"] == CONTENT
    assert wait_for(receiver, "spans_released", 3 + CONTENT)["spans_held"] == 0


def test_dump_holds_the_records_and_reads_back_with_their_content(serve, tmp_path: Path) -> None:
    receiver = serve(dump=tmp_path / "dump" / "traces.jsonl")
    assert post(receiver.http_port, logs_json(), JSON, path="/v1/logs")[0] == 200
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    assert_one_passing_verdict(receiver, tmp_path)
    receiver.stop()
    [trace] = list(read_traces([str(tmp_path / "dump")]))
    assert [c.name for c in trace.tool_calls] == ["get_weather", "get_weather"]
    assert trace.output is not None and "Bergen: sun" in trace.output


# -- records that cannot be scored --------------------------------------------------------


def test_records_after_the_trace_was_judged_revise_its_verdict(serve, tmp_path: Path) -> None:
    receiver = serve()  # never saw logs: evaluates after --grace, as without logs support
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    wait_for(receiver, "traces_evaluated", 1)
    assert post(receiver.http_port, logs_json(), JSON, path="/v1/logs")[0] == 200
    stats = wait_for(receiver, "traces_revised", 1)
    assert stats["log_records_late"] == CONTENT
    assert (stats["traces_evaluated"], stats["late_pieces"]) == (1, 1)
    assert (stats["traces_revised"], stats["verdicts_changed"]) == (1, 1)
    first, revised = verdicts(tmp_path, 2)  # judged without the content, then with it
    assert (first["revision"], first["reason"], first["passed"]) == (0, "complete", False)
    assert (revised["revision"], revised["reason"], revised["partial"]) == (1, "late", False)
    assert revised["passed"], failed_checks(revised)
    assert revised["changed"]["verdict"] == ["fail", "pass"]
    assert revised["changed"]["calls"] == [0, 2]
    assert wait_for(receiver, "spans_released", 3 + CONTENT)["spans_held"] == 0


def test_records_whose_trace_never_comes_are_counted_orphaned(serve, tmp_path: Path) -> None:
    doc = _doc()
    for record in _records(doc):
        record["traceId"] = OTHER_TRACE
    receiver = serve(max_age=0.3)
    assert post(receiver.http_port, logs_json(doc), JSON, path="/v1/logs")[0] == 200
    stats = wait_for(receiver, "log_records_orphaned", CONTENT)
    assert stats["log_records_orphaned"] == CONTENT
    assert stats["traces_evaluated"] == 0 and verdicts(tmp_path) == []
    assert wait_for(receiver, "spans_released", CONTENT)["spans_held"] == 0


def test_orphaned_records_are_counted_at_shutdown(serve, tmp_path: Path) -> None:
    receiver = serve()
    assert post(receiver.http_port, logs_json(), JSON, path="/v1/logs")[0] == 200
    final = receiver.stop()
    assert final["log_records_orphaned"] == CONTENT
    assert final["traces_evaluated"] == 0


def test_records_naming_no_span_of_the_trace_are_counted_unjoined(serve, tmp_path: Path) -> None:
    doc = _doc()
    for record in _records(doc):
        record["spanId"] = "00000000000000aa"
    receiver = serve()
    assert post(receiver.http_port, logs_json(doc), JSON, path="/v1/logs")[0] == 200
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    stats = wait_for(receiver, "log_records_unjoined", CONTENT)
    assert stats["log_records_unjoined"] == CONTENT
    [line] = verdicts(tmp_path, 1)
    assert not line["passed"]


def test_records_without_trace_id_or_content_are_taken_not_kept(serve) -> None:
    doc = _doc()
    records = _records(doc)
    del records[0]["traceId"]
    del records[0]["spanId"]
    receiver = serve()
    assert post(receiver.http_port, logs_json(doc), JSON, path="/v1/logs")[0] == 200
    stats = receiver.receiver.stats()
    without = 1
    prompts = ALL_RECORDS - CONTENT - (0 if records[0]["eventName"] == "gen_ai.choice" else 1)
    assert stats["log_records_without_trace"] == without
    assert stats["log_records_not_content"] == prompts
    assert stats["log_records_received"] == ALL_RECORDS - without - prompts
    assert stats["spans_held"] == stats["log_records_received"]


# -- bad requests and limits --------------------------------------------------------------


def test_bad_ids_are_rejected_with_partial_success(serve) -> None:
    doc = _doc()
    records = _records(doc)
    records[0]["traceId"] = "abcd"
    records[1]["spanId"] = "zz"
    receiver = serve()
    status, _, body = post(receiver.http_port, logs_json(doc), JSON, path="/v1/logs")
    assert status == 200
    partial = json.loads(body)["partialSuccess"]
    assert partial["rejectedLogRecords"] == "2"
    assert "resourceLogs[0].scopeLogs[0].logRecords[0].traceId" in partial["errorMessage"]
    assert receiver.receiver.stats()["log_records_rejected"] == 2

    request = ExportLogsServiceRequest.FromString(protobuf_bodies_from(doc=_doc()))
    request.resource_logs[0].scope_logs[0].log_records[0].trace_id = b"\x01\x02"
    status, _, body = post(receiver.http_port, request.SerializeToString(), PB, path="/v1/logs")
    assert status == 200
    answer = ExportLogsServiceResponse.FromString(body)
    assert answer.partial_success.rejected_log_records == 1
    assert "expected 16 bytes, got 2" in answer.partial_success.error_message


def protobuf_bodies_from(doc: dict[str, Any]) -> bytes:
    from google.protobuf import json_format

    request = ExportLogsServiceRequest()
    copied = copy.deepcopy({"resourceLogs": doc["resourceLogs"]})
    for record in _records(copied):
        for key in ("traceId", "spanId"):
            if key in record:
                record[key] = _b64(record[key])
    json_format.ParseDict(copied, request)
    return request.SerializeToString()  # type: ignore[no-any-return]


def _b64(hex_id: str) -> str:
    import base64

    return base64.b64encode(bytes.fromhex(hex_id)).decode()


@pytest.mark.parametrize(
    ("body", "headers", "message"),
    [
        (b"\xff\xff\xff\xff", PB, "not an OTLP logs request"),
        (b"{not json", JSON, "not an OTLP logs request: invalid JSON"),
        (b"[1, 2]", JSON, "not an OTLP logs request"),
        (b'{"resourceLogs": 5}', JSON, "not an OTLP logs request"),
        (b'{"resourceSpans": []}', JSON, "send traces to /v1/traces"),
        (b'{"resourceLogs": [{"scopeLogs": [{"logRecords": 3}]}]}', JSON, "expected a list"),
        (b"[" * 100_000 + b"]" * 100_000, JSON, "not an OTLP logs request"),
    ],
)
def test_bad_logs_requests_are_answered_400_with_a_message(
    serve, body: bytes, headers: dict[str, str], message: str
) -> None:
    receiver = serve()
    status, answer_headers, answer = post(receiver.http_port, body, headers, path="/v1/logs")
    assert status == 400
    if headers is JSON:
        assert message in json.loads(answer)["message"]
    else:
        status_message = status_pb2.Status.FromString(answer)
        assert status_message.code == code_pb2.INVALID_ARGUMENT
        assert message in status_message.message
    stats = receiver.receiver.stats()
    assert stats["requests_refused"] == 1 and stats["spans_held"] == 0


def test_hostile_json_values_never_crash_the_receiver(serve) -> None:
    receiver = serve()
    hostile = [
        {"traceId": 5, "eventName": "gen_ai.choice"},
        {"traceId": "5b8efff798038103d269b633813fc60c", "eventName": ["x"], "body": 7},
        {"traceId": "5b8efff798038103d269b633813fc60c", "eventName": "gen_ai.choice",
         "attributes": "nope", "timeUnixNano": "soon"},
        {"traceId": "5b8efff798038103d269b633813fc60c", "eventName": "gen_ai.choice",
         "body": {"kvlistValue": {"values": [{"key": "message", "value": {"intValue": "x"}}]}}},
        "not a record",
    ]  # fmt: skip
    body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": hostile}]}]}).encode()
    status, _, answer = post(receiver.http_port, body, JSON, path="/v1/logs")
    assert status == 200
    rejected = int(json.loads(answer)["partialSuccess"]["rejectedLogRecords"])
    stats = receiver.receiver.stats()
    assert rejected >= 3
    assert rejected + stats["log_records_received"] + stats["log_records_not_content"] == len(
        hostile
    )
    assert receiver.receiver.healthy()


def test_limits_apply_to_logs_as_to_traces(serve) -> None:
    receiver = serve(max_request_bytes=1024)
    big = logs_json() + b" " * 2048
    status, _, answer = post(receiver.http_port, big, JSON, path="/v1/logs")
    assert status == 413 and "limit" in json.loads(answer)["message"]
    bomb = gzip.compress(b" " * 100_000)
    headers = {**JSON, "Content-Encoding": "gzip"}
    assert post(receiver.http_port, bomb, headers, path="/v1/logs")[0] == 413
    assert (
        post(receiver.http_port, b"{}", {"Content-Type": "text/plain"}, path="/v1/logs")[0] == 415
    )
    headers = {**JSON, "Content-Encoding": "br"}
    assert post(receiver.http_port, b"{}", headers, path="/v1/logs")[0] == 415
    assert receiver.receiver.stats()["requests_refused"] == 4


def test_a_full_buffer_throttles_logs(serve) -> None:
    receiver = serve(max_buffered_spans=CONTENT + 1, max_age=60)
    assert post(receiver.http_port, logs_json(), JSON, path="/v1/logs")[0] == 200
    status, headers, answer = post(receiver.http_port, logs_json(), JSON, path="/v1/logs")
    assert status == 503
    assert headers["retry-after"] == "1"
    assert "buffer full" in json.loads(answer)["message"]
    stats = receiver.receiver.stats()
    assert stats["requests_throttled"] == 1
    assert stats["log_records_received"] == CONTENT
    assert stats["spans_held"] == CONTENT


def test_a_receiver_without_logs_keeps_its_grace(serve, tmp_path: Path) -> None:
    receiver = serve(grace=0.05, logs_grace=30)
    started = time.monotonic()
    assert post(receiver.http_port, spans_json(), JSON)[0] == 200
    wait_for(receiver, "traces_evaluated", 1)
    # Well under the logs grace (30 s) it would have waited, however loaded the machine.
    assert time.monotonic() - started < 20
    stats = receiver.receiver.stats()
    assert stats["log_records_received"] == 0 and stats["traces_evaluated"] == 1
