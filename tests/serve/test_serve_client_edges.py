"""What a client can do to ``tooltrail serve`` that is its own business: go away in the middle
of a request body (counted, one throttled warning, no traceback), and the start-up line names
the scheme the HTTP listener really speaks (``https://`` with TLS)."""

from __future__ import annotations

import http.client
import logging
import re
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from serve_helpers import post
from serve_traces import PROTOBUF, agent_trace, body_of
from test_serve_auth import _certificate

from tooltrail.serve import ServeConfig, start_in_thread

ABORTED = 3


def _abort_mid_body(port: int, *, chunked: bool) -> None:
    """Headers, a part of the body, then the connection closed."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        framing = (
            b"Transfer-Encoding: chunked\r\n\r\n400\r\n" + b"x" * 100
            if chunked
            else b"Content-Length: 100000\r\n\r\n" + b"x" * 1000
        )
        sock.sendall(
            b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
            + framing
        )
        # the moment under test: the client goes away while the handler reads its body; the
        # receiver shows no event for "reading", so the client gives it a moment
        time.sleep(0.1)
    finally:
        sock.close()


def _stats(port: int) -> dict[str, int]:
    return orjson.loads(post(port, b"", path="/stats", method="GET")[2])


def test_a_client_gone_mid_body_is_counted_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    receiver = start_in_thread(ServeConfig(grpc_port=None, http_port=0))
    try:
        port = receiver.http_port
        assert port is not None
        for i in range(ABORTED):
            _abort_mid_body(port, chunked=i % 2 == 1)
        deadline = time.monotonic() + 20
        while _stats(port).get("requests_aborted", 0) < ABORTED and time.monotonic() < deadline:
            time.sleep(0.05)
        # The receiver still serves.
        assert post(port, body_of(agent_trace()), PROTOBUF)[0] == 200
        stats = _stats(port)
    finally:
        receiver.stop()
    assert stats.get("requests_aborted") == ABORTED
    with_traceback = [r for r in caplog.records if r.exc_info or r.exc_text]
    assert with_traceback == []
    warnings = [r.getMessage() for r in caplog.records if "requests_aborted" in r.getMessage()]
    assert len(warnings) == 1  # once a minute


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_the_start_up_line_says_https_when_tls_is_on(tmp_path: Path) -> None:
    cert, key = _certificate(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
         "--grpc-port", "0", "--http-port", "0", "--tls-cert", str(cert), "--tls-key", str(key)],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"OTLP/HTTP on (\w+)://127\.0\.0\.1:(\d+)/v1/traces", line)
        assert found is not None, line
        assert found.group(1) == "https"
        # ... and the printed address answers over TLS.
        context = ssl.create_default_context(cafile=str(cert))
        connection = http.client.HTTPSConnection(
            "127.0.0.1", int(found.group(2)), context=context, timeout=10
        )
        connection.request("GET", "/healthz")
        assert connection.getresponse().status == 200
        connection.close()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
