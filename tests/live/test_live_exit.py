"""Issue 14 item 2: a short-lived process exports the evaluation event of every verdict it
produced, whether it ends by returning from its main module (``atexit``) or by SIGTERM.

The agent runs in a subprocess with ``live.install`` and ``TOOLTRAIL_EVALUATION_EVENTS=true``;
the real OTLP/gRPC log exporter sends to a loopback receiver started here. Each of the ten
traces holds one required tool call, so the suite gives it one score and one case verdict:
twenty events in all.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_evaluation_events import LogsReceiver, attributes_of

TRACES = 10

AGENT = """
import sys, time
from opentelemetry import trace
from tooltrail import live
from tooltrail.live import tool
from tooltrail.suite import TestSuite

suite = TestSuite.from_dict({"name": "exit", "cases": [
    {"id": "lookup", "match": {"agent_name": "exit_agent"}, "required_tools": ["lookup_order"]}
]})
live.install(suite=suite, results=sys.argv[1])
tracer = trace.get_tracer("exit")
attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "exit_agent"}
for i in range(int(sys.argv[3])):
    with tracer.start_as_current_span("invoke_agent exit_agent", attributes=attributes):
        with tool("lookup_order", {"order_id": f"ORD-{i}"}, tracer=tracer):
            pass
if sys.argv[2] == "sigterm":
    print("ready", flush=True)
    time.sleep(60)  # the child waits for the test's SIGTERM (the bound if it never comes)
"""


@pytest.fixture
def receiver() -> Iterator[LogsReceiver]:
    server = LogsReceiver()
    yield server
    server.stop()


def run_agent(tmp_path: Path, receiver: LogsReceiver, how: str) -> subprocess.CompletedProcess:
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    env = {
        **os.environ,
        "TOOLTRAIL_EVALUATION_EVENTS": "true",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_INSECURE": "true",
        "OTEL_TRACES_EXPORTER": "none",
    }
    results = tmp_path / "results.jsonl"
    command = [sys.executable, str(script), str(results), how, str(TRACES)]
    if how != "sigterm":
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    with subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def check_every_verdict_arrived(tmp_path: Path, receiver: LogsReceiver) -> None:
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(lines) == TRACES and all(line["verdict"] == "pass" for line in lines)
    names = Counter(
        (attributes_of(record)["gen_ai.evaluation.name"], record.trace_id.hex())
        for _, _, record in receiver.records()
    )
    expected = Counter(
        (name, line["trace_id"])
        for line in lines
        for name in ("required_tool:lookup_order", "tooltrail.case")
    )
    assert names == expected


def test_a_process_that_exits_after_its_last_trace_exports_every_event(
    tmp_path: Path, receiver: LogsReceiver
) -> None:
    done = run_agent(tmp_path, receiver, "exit")
    assert done.returncode == 0, done.stderr
    check_every_verdict_arrived(tmp_path, receiver)


def test_sigterm_after_the_last_trace_still_exports_every_event(
    tmp_path: Path, receiver: LogsReceiver
) -> None:
    done = run_agent(tmp_path, receiver, "sigterm")
    assert done.returncode == 128 + signal.SIGTERM, done.stderr
    check_every_verdict_arrived(tmp_path, receiver)
