"""Secrets under sensitive keys never leave ``tooltrail serve``: not in the forwarded bytes, not
in the dump, whichever dialect's attribute carried the arguments, nor in log records' content.
The files the receiver creates are 0600."""

from __future__ import annotations

import json
import stat
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from serve_helpers import ANY_TRACE_SUITE, post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.otlp import LogRecord, encode_logs_request, read_spans
from tooltrail.serve import ServeConfig, start_in_thread

SECRETS = (
    "hunter2",
    "sk-live-4f9a8b7c6d5e",
    "Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0",
    "4111111111111111",
)
ARGS = {
    "order_id": "ORD-7731",
    "password": SECRETS[0],
    "api_key": SECRETS[1],
    "headers": {"Authorization": SECRETS[2]},
    "card_number": SECRETS[3],
}

#: One tool span per dialect, each with the arguments where that convention puts them.
TOOL_SPANS: list[dict[str, object]] = [
    {  # OpenTelemetry GenAI: a JSON string
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "issue_refund",
        "gen_ai.tool.call.arguments": json.dumps(ARGS),
    },
    {  # OpenInference, from LangChain: a Python repr
        "span.name": "issue_refund",
        "openinference.span.kind": "TOOL",
        "tool.name": "issue_refund",
        "input.value": repr(ARGS),
    },
    {  # OpenLLMetry / Traceloop @tool
        "span.name": "issue_refund.tool",
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "issue_refund",
        "traceloop.entity.input": json.dumps({"args": [], "kwargs": ARGS}),
    },
    {  # Vercel AI SDK
        "span.name": "ai.toolCall",
        "ai.toolCall.name": "issue_refund",
        "ai.toolCall.args": json.dumps(ARGS),
    },
    {  # MLflow: JSON encoded twice
        "span.name": "issue_refund",
        "mlflow.spanType": '"TOOL"',
        "mlflow.spanInputs": json.dumps(json.dumps(ARGS)),
    },
]


def choice_record(trace_id: str, span_id: str) -> LogRecord:
    """A ``gen_ai.choice`` record: the model asked for a call whose arguments hold secrets."""
    call = {"id": "call-1", "type": "function",
            "function": {"name": "issue_refund", "arguments": json.dumps(ARGS)}}  # fmt: skip
    return LogRecord(
        trace_id=trace_id,
        span_id=span_id,
        time_ns=1_500,
        event_name="gen_ai.choice",
        attributes={"gen_ai.system": "openai"},
        body={
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {"role": "assistant", "tool_calls": [call]},
        },  # fmt: skip
    )


class ForwardTarget:
    """A loopback OTLP/HTTP endpoint keeping the raw bytes of every request."""

    def __init__(self) -> None:
        bodies: list[bytes] = []
        self.bodies = bodies
        arrived = self.arrived = threading.Event()

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's method name
                bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                arrived.set()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("dump_format", ["json", "proto"])
def test_forwarded_and_dumped_bytes_hold_no_secret(tmp_path: Path, dump_format: str) -> None:
    target = ForwardTarget()
    dump = tmp_path / ("dump.jsonl" if dump_format == "json" else "dump.pb")
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(tmp_path, ANY_TRACE_SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.2,
            logs_grace=0.2,
            forward=target.endpoint,
            dump=dump,
            dump_format=dump_format,
            results=results,
        )
    )
    try:
        assert receiver.http_port is not None
        spans = agent_trace(tool_attributes=TOOL_SPANS)
        root = spans[0]
        logs = encode_logs_request([choice_record(root.trace_id, root.span_id)])
        status, _, _ = post(receiver.http_port, logs.SerializeToString(), PROTOBUF,
                            path="/v1/logs")  # fmt: skip
        assert status == 200
        status, _, _ = post(receiver.http_port, body_of(spans), PROTOBUF)
        assert status == 200
    finally:
        stats = receiver.stop()
        target.stop()
    assert stats["traces_forwarded"] == 1 and stats["log_records_received"] == 1
    forwarded = b"".join(target.bodies)
    dumped = dump.read_bytes()
    for where, data in (("forwarded", forwarded), ("dump", dumped)):
        assert b"ORD-7731" in data and b"[REDACTED]" in data, where
        for secret in SECRETS:
            assert secret.encode() not in data, f"{secret!r} in the {where} bytes"
    # The record's content (a logs request) is in the dump, its secret hidden: the model's
    # call is still readable.
    assert b"issue_refund" in dumped and b"tool_calls" in dumped
    # Each dialect's span is still a tool call with its harmless arguments.
    tool_spans = [s for s in read_spans([dump]) if s.parent_span_id]
    assert len(tool_spans) == len(TOOL_SPANS)
    for path in (dump, results):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


def test_redaction_follows_the_live_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TOOLTRAIL_REDACT_KEYS`` (the live path's variable) hides a key the defaults do not."""
    monkeypatch.setenv("TOOLTRAIL_REDACT_KEYS", "order_id")
    dump = tmp_path / "dump.jsonl"
    receiver = start_in_thread(ServeConfig(grpc_port=None, http_port=0, grace=0.05, dump=dump))
    try:
        assert receiver.http_port is not None
        body = body_of(agent_trace(tool_attributes=TOOL_SPANS[:1]))
        status, _, _ = post(receiver.http_port, body, PROTOBUF)
        assert status == 200
    finally:
        receiver.stop()
    data = dump.read_bytes()
    assert b"ORD-7731" not in data and b"hunter2" not in data and b"[REDACTED]" in data
