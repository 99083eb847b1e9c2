"""gRPC connections are admitted as HTTP's are: 1,000 half-open sockets on the gRPC port do
not lock a real exporter out (before, grpc refused every connection past
``--max-connections`` until the idle ones reached the handshake timeout). On both listeners the
connections that never sent a byte make room first.

``tooltrail serve`` runs in its own process at a 1,024 file-descriptor limit; the sockets are
held here, the OTLP gRPC exporter of opentelemetry-exporter-otlp-proto-grpc sends one trace.
"""

from __future__ import annotations

import http.client
import re
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from serve_helpers import post, wait_for_stat

from tooltrail.serve import ServeConfig, start_in_thread

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")

HALF_OPEN = 1_000
#: The exporter's own deadline; the half-open sockets would be held six times as long.
EXPORT_TIMEOUT_S = 10
HEADER_TIMEOUT_S = 60
PORTS = re.compile(r"OTLP/gRPC on 127\.0\.0\.1:(\d+); OTLP/HTTP on http://127\.0\.0\.1:(\d+)")

SERVER = """
import resource, sys
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
from tooltrail.cli import main
sys.argv = ["tooltrail", *sys.argv[1:]]
main()
"""


@pytest.fixture
def serve() -> Iterator[tuple[int, int]]:
    """(gRPC port, HTTP port) of a receiver with the default ``--max-connections`` (512)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = HALF_OPEN + 512
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"needs {wanted} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, "serve", "--grpc-port", "0", "--http-port", "0",
         "--header-timeout", str(HEADER_TIMEOUT_S)],
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = PORTS.search(line)
        assert found is not None, line + process.stderr.read()
        yield int(found.group(1)), int(found.group(2))
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.communicate(timeout=60)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _one_trace() -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("half-open-test")
    with tracer.start_as_current_span("invoke_agent refund_agent"):
        with tracer.start_as_current_span("execute_tool lookup_order") as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "lookup_order")
    provider.shutdown()
    return list(memory.get_finished_spans())


def _export(exporter: OTLPSpanExporter) -> float:
    """Seconds one export of a two-span trace took; fails unless it succeeded."""
    spans = _one_trace()
    started = time.monotonic()
    result = exporter.export(spans)
    latency = time.monotonic() - started
    assert result is SpanExportResult.SUCCESS, f"{result.name} after {latency:.3f} s"
    return latency


def _exporter(port: int) -> OTLPSpanExporter:
    """An exporter with a connection of its own (grpc shares them between channels)."""
    return OTLPSpanExporter(
        endpoint=f"127.0.0.1:{port}",
        insecure=True,
        timeout=EXPORT_TIMEOUT_S,
        channel_options=(("grpc.use_local_subchannel_pool", 1),),  # type: ignore[arg-type]
    )


def test_a_real_exporter_gets_through_one_thousand_half_open_sockets(
    serve: tuple[int, int],
) -> None:
    grpc_port, http_port = serve
    connected = _exporter(grpc_port)
    _export(connected)  # its connection is up before the flood
    held: list[socket.socket] = []
    try:
        for _ in range(HALF_OPEN):
            held.append(socket.create_connection(("127.0.0.1", grpc_port), timeout=5))
        # every one of them accepted by now: the silent sockets past the cap are closed
        wait_for_stat(http_port, "connections_evicted", HALF_OPEN - ServeConfig().max_connections)
        # A connection that has spoken outlives the silent ones: the exporter keeps its own.
        again = _export(connected)
        # A new exporter's connection makes room by closing a silent one.
        new = _exporter(grpc_port)
        latency = _export(new)
        print(
            f"Export under {HALF_OPEN} half-open sockets: new connection {latency:.3f} s, "
            f"established one {again:.3f} s"
        )
        assert latency < EXPORT_TIMEOUT_S and again < EXPORT_TIMEOUT_S
        new.shutdown()
        connected.shutdown()
        stats = orjson.loads(post(http_port, b"", path="/stats", method="GET")[2])
    finally:
        for sock in held:
            sock.close()
    assert stats["spans_received"] == 3 * 2
    assert stats["connections_evicted"] >= HALF_OPEN - ServeConfig().max_connections


def test_a_silent_grpc_connection_is_closed_at_the_header_timeout() -> None:
    receiver = start_in_thread(ServeConfig(grpc_port=0, http_port=None, header_timeout=0.5))
    try:
        assert receiver.grpc_port is not None
        sock = socket.create_connection(("127.0.0.1", receiver.grpc_port), timeout=30)
        try:
            assert sock.recv(1) == b""  # closed by the receiver, not by us
        except ConnectionResetError:
            pass  # closed by abort: the same
        finally:
            sock.close()
        stats = receiver.receiver.stats()
    finally:
        receiver.stop()
    assert stats["connections_timed_out"] == 1
    assert stats["connections_open"] == 0


def test_half_open_connections_make_room_before_a_client_that_has_spoken() -> None:
    """HTTP too: past the limit the silent connections go first, so a keep-alive client's
    connection (the oldest) survives a flood of half-open ones."""
    receiver = start_in_thread(ServeConfig(grpc_port=None, http_port=0, max_connections=4))
    held: list[socket.socket] = []
    try:
        assert receiver.http_port is not None
        client = http.client.HTTPConnection("127.0.0.1", receiver.http_port, timeout=10)
        client.request("GET", "/healthz")
        assert client.getresponse().read() == b'{"status": "ok"}'
        for _ in range(10):
            held.append(socket.create_connection(("127.0.0.1", receiver.http_port), timeout=5))
        deadline = time.monotonic() + 20
        while receiver.receiver.stats()["connections_evicted"] < 10 - 3:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        client.request("GET", "/healthz")  # on the same connection
        assert client.getresponse().read() == b'{"status": "ok"}'
        client.close()
    finally:
        for sock in held:
            sock.close()
        receiver.stop()
