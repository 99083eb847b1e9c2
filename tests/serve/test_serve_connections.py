"""Hostile HTTP clients cannot take ``tooltrail serve`` down: a slow-loris client is cut off at
the header timeout, and 2,000 half-open connections leave ``/healthz`` answering within 1 s
(the oldest idle connections make room; every closing is counted)."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import orjson
import pytest
from serve_helpers import post, wait_for_stat

from tooltrail.serve import RunningReceiver, ServeConfig, start_in_thread

HALF_OPEN = 2_000


@pytest.fixture
def receiver() -> Iterator[RunningReceiver]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * HALF_OPEN + 512  # client and server ends live in this one process
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"needs {wanted} file descriptors, the hard limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    running = start_in_thread(
        ServeConfig(grpc_port=None, http_port=0, header_timeout=1.0, idle_timeout=30.0,
                    max_connections=256)
    )  # fmt: skip
    try:
        yield running
    finally:
        running.stop()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _health_seconds(port: int) -> float:
    started = time.monotonic()
    status, _, body = post(port, b"", path="/healthz", method="GET")
    assert status == 200 and b'"ok"' in body
    return time.monotonic() - started


#: A receiver in its own process, at the usual default of 1,024 file descriptors.
SERVER = """
import resource, threading
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
from tooltrail.serve import ServeConfig, start_in_thread
receiver = start_in_thread(ServeConfig(grpc_port=None, http_port=0))
print(receiver.http_port, flush=True)
threading.Event().wait()
"""


def test_two_thousand_half_open_connections_leave_healthz_answering() -> None:
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE)
    held: list[socket.socket] = []
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        for _ in range(HALF_OPEN):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        # the flood taken in: the silent sockets past the cap are closed
        wait_for_stat(port, "connections_evicted", HALF_OPEN - ServeConfig().max_connections)
        for _ in range(5):
            assert _health_seconds(port) < 1.0
        stats = orjson.loads(post(port, b"", path="/stats", method="GET")[2])
        assert stats["connections_open"] >= 1
        assert stats["connections_open"] <= ServeConfig().max_connections
        assert stats["connections_evicted"] >= HALF_OPEN - ServeConfig().max_connections
    finally:
        for sock in held:
            sock.close()
        server.kill()
        server.wait()


def test_slow_loris_client_is_cut_off_at_the_header_timeout(receiver: RunningReceiver) -> None:
    port = receiver.http_port
    assert port is not None
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        closed_after = None
        for i in range(40):  # one header line every 0.25 s: never finishes
            time.sleep(0.25)
            assert _health_seconds(port) < 1.0
            try:
                sock.sendall(f"X-Slow-{i}: y\r\n".encode())
            except OSError:  # reset by the receiver
                closed_after = time.monotonic() - started
                break
        else:
            sock.settimeout(5)
            closed_after = time.monotonic() - started if sock.recv(1024) == b"" else None
        assert closed_after is not None and closed_after < 8.0
    finally:
        sock.close()
    assert receiver.receiver.stats()["connections_timed_out"] >= 1
