"""``tooltrail serve`` as a process: SIGTERM in the middle of load loses no accepted trace."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from serve_helpers import ANY_TRACE_SUITE, post, write_suite

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

PB = {"Content-Type": "application/x-protobuf"}
LISTENING = re.compile(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)")


def start_serve(*args: str) -> tuple[subprocess.Popen[str], int]:
    """``tooltrail serve ARGS`` in a child process; returns it and its HTTP port."""
    process = subprocess.Popen(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    found = LISTENING.search(line)
    if found is None:
        process.kill()
        raise AssertionError(f"tooltrail serve did not start: {line}{process.stderr.read()}")
    return process, int(found.group(1))


def attribute(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value={"string_value": value})


def agent_traces(count: int, *, with_root: bool = True) -> tuple[bytes, list[str]]:
    """An export request with ``count`` traces of an agent span and two tool spans each."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    trace_ids = []
    now = time.time_ns()
    for _ in range(count):
        trace_id, root_id = os.urandom(16), os.urandom(8)
        trace_ids.append(trace_id.hex())
        for i, tool in enumerate(("lookup_order", "issue_refund")):
            span = spans.add(
                trace_id=trace_id,
                span_id=os.urandom(8),
                parent_span_id=root_id,
                name=f"execute_tool {tool}",
                start_time_unix_nano=now + i * 1000,
                end_time_unix_nano=now + i * 1000 + 500,
            )
            span.attributes.extend(
                [
                    attribute("gen_ai.operation.name", "execute_tool"),
                    attribute("gen_ai.tool.name", tool),
                    attribute("gen_ai.tool.call.arguments", '{"order_id": "ORD-1"}'),
                ]
            )
        if with_root:
            root = spans.add(
                trace_id=trace_id,
                span_id=root_id,
                name="invoke_agent refund_agent",
                start_time_unix_nano=now,
                end_time_unix_nano=now + 10_000,
            )
            root.attributes.append(attribute("gen_ai.operation.name", "invoke_agent"))
    return request.SerializeToString(), trace_ids


@pytest.mark.parametrize("workers", [1, 2])
def test_sigterm_mid_load_evaluates_every_accepted_trace_once(tmp_path: Path, workers: int) -> None:
    results = tmp_path / "results.jsonl"
    process, port = start_serve(
        "--suite", str(write_suite(tmp_path, ANY_TRACE_SUITE)),
        "--grpc-port", "0", "--http-port", "0", "--workers", str(workers),
        "--results", str(results), "--grace", "0.2", "--max-age", "120",
    )  # fmt: skip
    accepted: dict[str, bool] = {}  # trace id -> has a root span
    lock = threading.Lock()
    stop = threading.Event()

    def send() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            with_root = n % 4 != 0  # every fourth request: traces whose root never comes
            body, trace_ids = agent_traces(5, with_root=with_root)
            try:
                status, _, _ = post(port, body, PB)
            except OSError:
                return  # the listener is closed: shutdown has begun
            if status == 200:
                with lock:
                    accepted.update(dict.fromkeys(trace_ids, with_root))

    senders = [threading.Thread(target=send) for _ in range(3)]
    for sender in senders:
        sender.start()
    deadline = time.monotonic() + 60  # ends at 300: generous for a loaded machine
    while len(accepted) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    process.send_signal(signal.SIGTERM)
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        stop.set()
        for sender in senders:
            sender.join()
    assert process.returncode == 0, stderr
    assert "tooltrail serve: stopped" in stderr

    lines = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    evaluated = [line["trace_id"] for line in lines]
    assert len(evaluated) == len(set(evaluated)), "a trace was evaluated twice"
    assert len(accepted) >= 300
    assert set(accepted) <= set(evaluated)
    by_id = {line["trace_id"]: line for line in lines}
    rootless = [t for t, has_root in accepted.items() if not has_root]
    assert rootless
    assert all(by_id[t]["partial"] and by_id[t]["reason"] == "shutdown" for t in rootless)


def test_bad_suite_exits_2_naming_the_file(tmp_path: Path) -> None:
    suite = tmp_path / "bad.yaml"
    suite.write_text("name: x\ncases:\n  - id: a\n    requird_tools: [a]\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
         "--suite", str(suite), "--grpc-port", "0", "--http-port", "0"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr and "requird_tools" in done.stderr


def test_port_in_use_exits_2(tmp_path: Path) -> None:
    process, port = start_serve("--grpc-port", "0", "--http-port", "0")
    try:
        done = subprocess.run(
            [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
             "--no-grpc", "--http-port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert done.returncode == 2
    assert "cannot listen" in done.stderr


def test_cli_serve_names_the_logs_path_and_refuses_a_negative_logs_grace() -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
         "--no-grpc", "--http-port", "0", "--logs-grace", "0.5"],
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    assert re.search(r"OTLP/HTTP on http://127\.0\.0\.1:\d+/v1/traces and \S+/v1/logs", line)
    done = subprocess.run(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
         "--logs-grace", "-1"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and "--logs-grace" in done.stderr


#: A plug-in whose module, loaded by ``serve``, holds the process in its exit: it says so in a
#: file, then waits, so a signal can be sent exactly while ``serve`` exits.
EXITING = """
import atexit
import os
import time

def _hold():
    with open(os.environ["EXIT_MARKER"], "w") as marker:
        marker.write("exiting")
    time.sleep(3)

atexit.register(_hold)
TOOLTRAIL_CHECKS = {}
"""


def test_a_signal_while_serve_exits_leaves_its_clean_stop_clean(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: leaving its signal handlers put the defaults back, so a second SIGTERM (a
    supervisor's) during the exit killed ``serve`` after it had printed its summary: -15."""
    (tmp_path / "exit_probe.py").write_text(EXITING, encoding="utf-8")
    inherited = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *inherited]))
    marker = tmp_path / "exiting"
    monkeypatch.setenv("EXIT_MARKER", str(marker))
    process, _ = start_serve("--plugin", "exit_probe", "--no-grpc", "--http-port", "0")
    try:
        process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 60
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert marker.exists(), "serve never reached its exit"
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert "tooltrail serve: stopped;" in err
    assert process.returncode == 0, err
