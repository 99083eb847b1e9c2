"""A ``tooltrail serve`` killed with SIGKILL: its dump holds every trace that was completed more
than one flush interval before the kill (the results file says which were completed)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
from serve_helpers import ANY_TRACE_SUITE, post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

FLUSH_INTERVAL = 0.5

SERVER = """
import sys, threading
from pathlib import Path
from tooltrail.serve import ServeConfig, start_in_thread
receiver = start_in_thread(ServeConfig(
    suite=Path(sys.argv[1]), grpc_port=None, http_port=0, grace=0.05,
    dump=Path(sys.argv[2]), results=Path(sys.argv[3]), dump_flush_interval=float(sys.argv[4]),
))
print(receiver.http_port, flush=True)
threading.Event().wait()
"""


def _trace_ids_in_dump(path: Path) -> set[str]:
    ids: set[str] = set()
    for line in path.read_bytes().splitlines():
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:  # a line cut by the kill
            continue
        for resource_spans in doc.get("resourceSpans", []):
            for scope_spans in resource_spans["scopeSpans"]:
                ids.update(span["traceId"] for span in scope_spans["spans"])
    return ids


def _trace_ids_in_results(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {orjson.loads(line)["trace_id"] for line in path.read_bytes().splitlines()}


def test_killed_server_dump_holds_traces_completed_before_the_last_interval(
    tmp_path: Path,
) -> None:
    dump, results = tmp_path / "dump.jsonl", tmp_path / "results.jsonl"
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(write_suite(tmp_path, ANY_TRACE_SUITE)), str(dump),
         str(results), str(FLUSH_INTERVAL)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        sent = set()
        for _ in range(6):
            spans = agent_trace()
            sent.add(spans[0].trace_id)
            assert post(port, body_of(spans), PROTOBUF)[0] == 200
        deadline = time.monotonic() + 30
        while _trace_ids_in_results(results) != sent:
            assert time.monotonic() < deadline, "the traces were not evaluated"
            time.sleep(0.05)
        # time is what is tested: the dump is durable one flush interval after a trace is
        # evaluated (three, generous: the machine is shared); no event says "flushed"
        time.sleep(3 * FLUSH_INTERVAL)
        server.send_signal(signal.SIGKILL)
        server.wait(10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert _trace_ids_in_dump(dump) >= sent
