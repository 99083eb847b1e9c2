"""Load benchmark of ``tooltrail serve``: OTLP/HTTP protobuf batches from a separate process.

    python benchmarks/bench_serve.py [--spans 200000] [--seconds 30] [--connections 4]
                                     [--serve-arg=--revision-window=0 ...]

Starts ``tooltrail serve`` as a child process with a policy suite (the seed's checks) applied
to every trace and a results file, then a sender process that posts pre-built requests of
~512 spans (whole agent traces of 10 spans: 1 agent, 5 model, 4 tool) over keep-alive
connections on loopback, retrying after ``Retry-After`` when throttled. Bounded by span count
and by time. Reports spans/s accepted (sender side) and evaluated (until the server's
``traces_evaluated`` counter covers every accepted trace), request latency percentiles, and
checks from the results file that every trace sent was evaluated exactly once. On Linux it
also reports the server's CPU time per span (with its worker processes), which other load on
the machine disturbs less than the wall-clock rates.
"""

from __future__ import annotations

import argparse
import http.client
import multiprocessing as mp
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

SUITE = """\
name: refund-policies
cases:
  - id: refund_policy
    match: all
    required_tools: [lookup_order, verify_identity, issue_refund]
    forbidden_tools: [delete_account]
    required_tool_order: [verify_identity, issue_refund]
    expected_tool_arguments:
      issue_refund: {amount: 49.99}
    required_tool_arguments:
      issue_refund: [order_id, amount]
    evaluators:
      - name: no_redundant_tool_calls
        threshold: 1.0
      - name: tool_call_precision
        threshold: 1.0
        config: {allowed_tools: [lookup_order, verify_identity, issue_refund, web_search]}
"""
SPANS_PER_TRACE = 10
TRACES_PER_REQUEST = 51
LISTENING = re.compile(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)")


def build_requests(n_requests: int, seed: int) -> tuple[list[bytes], list[list[str]]]:
    """Serialized ExportTraceServiceRequests, and the trace ids in each."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    def kv(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value={"string_value": value})

    resource = [kv("service.name", "refund-service")]
    bodies: list[bytes] = []
    ids: list[list[str]] = []
    counter = seed << 40
    for _ in range(n_requests):
        request = ExportTraceServiceRequest()
        rs = request.resource_spans.add()
        rs.resource.attributes.extend(resource)
        spans = rs.scope_spans.add().spans
        trace_ids = []
        for t in range(TRACES_PER_REQUEST):
            counter += 1
            trace_id = counter.to_bytes(16, "big")
            trace_ids.append(trace_id.hex())
            root_id = (counter * 16).to_bytes(8, "big")
            now = time.time_ns()
            calls = [
                ("lookup_order", '{"order_id": "ORD-7731"}'),
                ("verify_identity", '{"customer_id": "C-118"}'),
                ("issue_refund", '{"order_id": "ORD-7731", "amount": %s}'
                 % ("499.9" if t % 5 == 0 else "49.99")),
                ("web_search", '{"query": "refund policy"}'),
            ]  # fmt: skip
            sid = 0
            for i, (tool, args) in enumerate(calls):
                sid += 1
                model = spans.add(
                    trace_id=trace_id, span_id=(counter * 16 + sid).to_bytes(8, "big"),
                    parent_span_id=root_id, name="chat fake-model", kind=3,
                    start_time_unix_nano=now + i * 1_000_000,
                    end_time_unix_nano=now + i * 1_000_000 + 400_000,
                )  # fmt: skip
                model.attributes.extend(
                    [kv("gen_ai.operation.name", "chat"), kv("gen_ai.request.model", "fake")]
                )
                sid += 1
                span = spans.add(
                    trace_id=trace_id, span_id=(counter * 16 + sid).to_bytes(8, "big"),
                    parent_span_id=root_id, name=f"execute_tool {tool}", kind=1,
                    start_time_unix_nano=now + i * 1_000_000 + 500_000,
                    end_time_unix_nano=now + i * 1_000_000 + 900_000,
                )  # fmt: skip
                span.attributes.extend(
                    [
                        kv("gen_ai.operation.name", "execute_tool"),
                        kv("gen_ai.tool.name", tool),
                        kv("gen_ai.tool.call.id", f"call_{sid}"),
                        kv("gen_ai.tool.call.arguments", args),
                    ]
                )
            sid += 1
            final = spans.add(
                trace_id=trace_id, span_id=(counter * 16 + sid).to_bytes(8, "big"),
                parent_span_id=root_id, name="chat fake-model", kind=3,
                start_time_unix_nano=now + 5_000_000, end_time_unix_nano=now + 5_400_000,
            )  # fmt: skip
            final.attributes.append(kv("gen_ai.operation.name", "chat"))
            root = spans.add(
                trace_id=trace_id, span_id=root_id, name="invoke_agent refund_agent", kind=1,
                start_time_unix_nano=now, end_time_unix_nano=now + 6_000_000,
            )  # fmt: skip
            root.attributes.extend(
                [
                    kv("gen_ai.operation.name", "invoke_agent"),
                    kv("gen_ai.agent.name", "refund_agent"),
                ]
            )
        bodies.append(request.SerializeToString())
        ids.append(trace_ids)
    return bodies, ids


def sender(port: int, n_requests: int, seconds: float, connections: int, out: Any) -> None:
    """The load generator (its own process): post every request, retrying when throttled."""
    bodies, ids = build_requests(n_requests, seed=os.getpid())
    out.send("built")
    next_index = iter(range(n_requests))
    lock = threading.Lock()
    latencies: list[float] = []
    accepted: list[str] = []
    throttled = 0
    failed = 0
    deadline = time.monotonic() + seconds

    def work() -> None:
        nonlocal throttled, failed
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Content-Type": "application/x-protobuf"}
        while time.monotonic() < deadline:
            with lock:
                index = next(next_index, None)
            if index is None:
                break
            while time.monotonic() < deadline:
                t0 = time.perf_counter()
                connection.request("POST", "/v1/traces", body=bodies[index], headers=headers)
                response = connection.getresponse()
                response.read()
                elapsed = time.perf_counter() - t0
                if response.status == 200:
                    with lock:
                        latencies.append(elapsed)
                        accepted.extend(ids[index])
                    break
                with lock:
                    if response.status == 503:
                        throttled += 1
                    else:
                        failed += 1
                if response.status != 503:
                    break
                time.sleep(float(response.getheader("Retry-After", "1")) / 10)
        connection.close()

    start = time.perf_counter()
    threads = [threading.Thread(target=work) for _ in range(connections)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    end = time.perf_counter()
    out.send(
        {
            "start": start,
            "end": end,
            "latencies": latencies,
            "accepted": accepted,
            "throttled": throttled,
            "failed": failed,
            "requests": n_requests,
        }
    )


def stats_of(port: int) -> dict[str, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("GET", "/stats")
        return orjson.loads(connection.getresponse().read())
    finally:
        connection.close()


def cpu_seconds(pid: int) -> float | None:
    """CPU time (user + system) of process ``pid`` and its descendants (``--workers``), from
    ``/proc``; ``None`` where there is none. Less disturbed by other load than wall time."""
    try:
        ticks = os.sysconf("SC_CLK_TCK")
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total = (int(fields[11]) + int(fields[12])) / ticks
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as children:
                for child in children.read().split():
                    total += cpu_seconds(int(child)) or 0.0
        return total
    except (OSError, ValueError, IndexError):
        return None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=200_000, help="spans to send at most")
    parser.add_argument("--seconds", type=float, default=30.0, help="sending time at most")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1, help="tooltrail serve --workers")
    parser.add_argument(
        "--serve-arg",
        action="append",
        default=[],
        metavar="ARG",
        help="one more tooltrail serve argument, e.g. --serve-arg=--revision-window=0 (repeatable)",
    )
    args = parser.parse_args()
    n_requests = max(1, args.spans // (SPANS_PER_TRACE * TRACES_PER_REQUEST))

    with tempfile.TemporaryDirectory() as tmp:
        suite = Path(tmp, "suite.yaml")
        suite.write_text(SUITE, encoding="utf-8")
        results = Path(tmp, "results.jsonl")
        server = subprocess.Popen(
            [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
             "--suite", str(suite), "--no-grpc", "--http-port", "0", "--grace", "0.2",
             "--results", str(results), "--workers", str(args.workers), *args.serve_arg],
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert server.stderr is not None
        found = LISTENING.search(server.stderr.readline())
        if found is None:
            server.kill()
            print("tooltrail serve did not start", file=sys.stderr)
            return 1
        port = int(found.group(1))
        cpu_start = cpu_seconds(server.pid)

        ours, theirs = mp.Pipe()
        process = mp.get_context("spawn").Process(
            target=sender, args=(port, n_requests, args.seconds, args.connections, theirs)
        )
        process.start()
        assert ours.recv() == "built"
        t_send = time.perf_counter()
        report = ours.recv()
        process.join()
        sent_traces = len(report["accepted"])
        while True:
            stats = stats_of(port)
            if stats["traces_evaluated"] >= sent_traces:
                break
            if time.perf_counter() - t_send > args.seconds * 4 + 60:
                print("timed out waiting for evaluation", file=sys.stderr)
                break
            time.sleep(0.05)
        t_evaluated = time.perf_counter()
        cpu_end = cpu_seconds(server.pid)
        server.send_signal(signal.SIGTERM)
        _, tail = server.communicate(timeout=120)

        evaluated = [orjson.loads(line)["trace_id"] for line in results.read_bytes().splitlines()]
        sent_spans = sent_traces * SPANS_PER_TRACE
        send_s = report["end"] - report["start"]
        eval_s = t_evaluated - t_send
        latencies = report["latencies"]
        unique = set(evaluated)
        print(f"requests: {len(latencies)} accepted of {report['requests']} "
              f"({report['throttled']} throttled and retried, {report['failed']} failed), "
              f"{TRACES_PER_REQUEST * SPANS_PER_TRACE} spans each, "
              f"{args.connections} connections, {args.workers} worker(s), "
              f"reading path {stats.get('reading_path', 'python (not reported)')}")  # fmt: skip
        print(
            f"accepted:  {sent_spans} spans in {send_s:.2f} s = {sent_spans / send_s:,.0f} spans/s"
        )
        print(f"evaluated: {stats['traces_evaluated']} traces, {sent_spans} spans "
              f"in {eval_s:.2f} s "
              f"= {sent_spans / eval_s:,.0f} spans/s")  # fmt: skip
        if cpu_start is not None and cpu_end is not None:
            cpu_us = (cpu_end - cpu_start) / max(1, sent_spans) * 1e6
            print(f"server CPU: {cpu_end - cpu_start:.2f} s = {cpu_us:.1f} us per span")
        print(f"latency:   p50 {percentile(latencies, 0.5) * 1000:.1f} ms, "
              f"p99 {percentile(latencies, 0.99) * 1000:.1f} ms, "
              f"max {max(latencies, default=0) * 1000:.1f} ms")  # fmt: skip
        once = len(evaluated) == len(unique) and unique == set(report["accepted"])
        print(f"exactly once: {once} ({len(evaluated)} result lines, {len(unique)} distinct, "
              f"{sent_traces} traces accepted)")  # fmt: skip
        print(f"server: {tail.strip().splitlines()[-1] if tail.strip() else ''}")
        return 0 if once else 1


if __name__ == "__main__":
    sys.exit(main())
