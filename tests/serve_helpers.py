"""Shared pieces of the ``tooltrail serve`` tests: loopback endpoints, requests, corpus bodies."""

from __future__ import annotations

import http.client
import json
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from fixtures import CORPUS, refund_case, suite_yaml
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.logs.v1 import logs_pb2

from tooltrail.serve import ServeConfig, start_in_thread

#: The refund policy as ``tooltrail serve`` checks the scripted agent of ``test_serve_e2e``.
REFUND_SUITE = suite_yaml(
    refund_case(
        "match",
        "required_tools",
        id="refund_policy",
        required_tool_order=["verify_identity", "issue_refund"],
        expected_tool_arguments={"issue_refund": {"amount": 49.99}},
        evaluators=[{"name": "no_redundant_tool_calls", "threshold": 1.0}],
    ),
    name="refund-policies",
    version="1",
)

#: A policy every trace meets as long as it has a tool call: it counts evaluations.
ANY_TRACE_SUITE = """\
name: any-trace
cases:
  - id: any_trace
    match: all
    evaluators:
      - name: max_tool_calls
        threshold: 1.0
        config: {max: 1000}
"""


def corpus(relative: str) -> bytes:
    return (CORPUS / relative).read_bytes()


def write_suite(directory: Path, text: str = REFUND_SUITE) -> Path:
    path = directory / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def post(
    port: int,
    body: bytes,
    headers: dict[str, str] | None = None,
    *,
    path: str = "/v1/traces",
    method: str = "POST",
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request to 127.0.0.1; (status, lower-cased headers, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return (
            response.status,
            {k.lower(): v for k, v in response.getheaders()},
            response.read(),
        )
    finally:
        connection.close()


class LogsReceiver(logs_service_pb2_grpc.LogsServiceServicer):
    """A loopback OTLP/gRPC logs endpoint keeping every log record it receives."""

    def __init__(self) -> None:
        self._records: list[logs_pb2.LogRecord] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(self, self.server)
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def Export(self, request, context):  # noqa: N802 - the gRPC method name
        with self._arrived:
            for resource_logs in request.resource_logs:
                for scope_logs in resource_logs.scope_logs:
                    self._records.extend(scope_logs.log_records)
            self._arrived.notify_all()
        return logs_service_pb2.ExportLogsServiceResponse()

    def records(self) -> list[logs_pb2.LogRecord]:
        with self._lock:
            return list(self._records)

    def wait_for(self, count: int, timeout: float = 60.0) -> list[logs_pb2.LogRecord]:
        with self._arrived:
            self._arrived.wait_for(lambda: len(self._records) >= count, timeout)
            return list(self._records)

    def stop(self) -> None:
        self.server.stop(grace=None)


def wait_for_stat(port: int, key: str, at_least: int, timeout_s: float = 60) -> dict[str, int]:
    """The receiver's ``/stats`` (HTTP on ``port``) once ``key`` reaches ``at_least``: a wait on
    what the test waits for, bounded by ``timeout_s`` (generous: the machine is shared)."""
    deadline = time.monotonic() + timeout_s
    while True:
        stats: dict[str, int] = json.loads(post(port, b"", path="/stats", method="GET")[2])
        if stats[key] >= at_least:
            return stats
        assert time.monotonic() < deadline, f"{key} = {stats[key]} < {at_least} after {timeout_s} s"
        time.sleep(0.05)


def results_of_one_run(directory: Path, suite_text: str, recorded: str) -> list[dict[str, Any]]:
    """Post one recorded corpus file (protobuf) to a real ``tooltrail serve`` on loopback with
    ``suite_text`` and explanations on; the results-file lines once its trace is evaluated."""
    results = directory / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(directory, suite_text),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            explanations=True,
        )
    )
    try:
        assert receiver.http_port is not None
        status, _, _ = post(
            receiver.http_port, corpus(recorded), {"Content-Type": "application/x-protobuf"}
        )
        assert status == 200
        deadline = time.monotonic() + 20
        while receiver.receiver.stats()["traces_evaluated"] < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        receiver.stop()
    return [json.loads(raw) for raw in results.read_text().splitlines()]


def attributes_of(record: logs_pb2.LogRecord) -> dict[str, object]:
    """A received record's attributes as plain values (arrays as lists)."""
    out: dict[str, object] = {}
    for kv in record.attributes:
        kind = kv.value.WhichOneof("value")
        if kind == "array_value":
            out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in kv.value.array_value.values]
        else:
            out[kv.key] = getattr(kv.value, kind) if kind else None
    return out


class HttpLogsReceiver:
    """A loopback OTLP/HTTP logs endpoint (``POST /v1/logs``, protobuf) keeping every record."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        records: list[logs_pb2.LogRecord] = []
        self.paths: list[str] = []
        self._records = records
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's method name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = logs_service_pb2.ExportLogsServiceRequest.FromString(body)
                paths.append(self.path)
                for resource_logs in request.resource_logs:
                    for scope_logs in resource_logs.scope_logs:
                        records.extend(scope_logs.log_records)
                answer = logs_service_pb2.ExportLogsServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def records(self) -> list[logs_pb2.LogRecord]:
        return list(self._records)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
