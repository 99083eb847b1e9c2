"""Benchmark: ``tooltrail eval`` end to end against the raw protobuf parse of the same bytes.

Generates ~500k spans of GenAI agent traces (bench_convert's generator: an ``invoke_agent``
root, ``chat`` spans with message histories, ``execute_tool`` spans; about 40% tool spans),
writes them as length-prefixed protobuf and as collector JSON lines, then in one run times:

- the raw ``ExportTraceServiceRequest.FromString`` of every protobuf record;
- the batch pass (``run_batch`` + the text report) with the seed's checks, on each file,
  with 1 and 2 workers, each in a fresh process whose peak RSS is recorded (the driver's,
  which does all the work with one worker, and the largest pool worker's);
- ``tooltrail.convert.read_traces`` alone on each file (decoding and conversion, no
  evaluation), to show what the batch pass adds on top;
- the same on a 100k-span dump, to show memory does not grow with the dump.

Usage: ``python benchmarks/bench_eval.py [--spans N] [--small N] [--dir DIR]``.
Goals (issue 6): one worker >= 35% of the raw parse rate; two workers >= 1.7x one worker;
peak memory flat from 100k to 500k spans.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_convert import generate  # noqa: E402  (the shared agent-trace generator)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

from tooltrail.otlp import encode_for_file  # noqa: E402

#: The seed's checks, as a policy over every trace of the agent.
SUITE = """\
name: refund-agent
version: "1.0"
cases:
  - id: refund
    match: {agent_name: support_agent}
    expected_contains: ["$49.99", "ORD-7731"]
    required_tools: [lookup_order, verify_identity, issue_refund]
    required_tool_order: [lookup_order, verify_identity, issue_refund]
    expected_tool_arguments:
      issue_refund: {order_id: ORD-7731, amount: 49.99}
    evaluators:
      - {name: tool_call_precision, threshold: 1.0}
      - {name: no_redundant_tool_calls, threshold: 1.0}
"""


def child(suite_path: str, dump: str, workers: int) -> None:
    """One measured batch pass, in a fresh process; prints its figures as JSON."""
    from tooltrail.batch import run_batch
    from tooltrail.evaluate import EvaluationReport
    from tooltrail.report import render_text
    from tooltrail.suite import TestSuite

    if workers == 0:  # reference: the converter alone, read_traces, in one process
        from tooltrail.convert import read_traces

        start = time.perf_counter()
        spans = sum(t.metadata.get("span_count", 0) for t in read_traces(dump))
        seconds = time.perf_counter() - start
        print(json.dumps({"seconds": seconds, "spans": spans, "driver_kb": peak_rss_kb()}))
        return
    suite = TestSuite.load(suite_path)
    start = time.perf_counter()
    result = run_batch(suite, [dump], workers=workers)
    text = render_text(EvaluationReport.from_results(suite, result.results))
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": seconds,
                "spans": result.span_count,
                "rows": len(result.results),
                "chunks": result.chunk_count,
                "merged": result.merged_count,
                "report_bytes": len(text),
                "driver_kb": peak_rss_kb(),
                "worker_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                "cpu_seconds": cpu_seconds(),
            }
        )
    )


def cpu_seconds() -> float:
    """CPU time of this process and its finished workers (user + system)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def peak_rss_kb() -> int:
    """This process's peak RSS since it started (``VmHWM``: unlike ``ru_maxrss`` it does not
    carry over the parent's memory through fork and exec)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(suite_path: Path, dump: Path, workers: int) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--child", str(suite_path), str(dump), str(workers)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def write_dumps(directory: Path, n_spans: int, name: str) -> tuple[Path, Path, list[bytes]]:
    requests = generate(n_spans)
    pb, jsonl = directory / f"{name}.pb", directory / f"{name}.jsonl"
    with open(pb, "wb") as out:
        for request in requests:
            out.write(encode_for_file(request, "proto"))
    with open(jsonl, "wb") as out:
        for request in requests:
            out.write(encode_for_file(request, "json"))
    return pb, jsonl, [r.SerializeToString() for r in requests]


def raw_parse_rate(records: list[bytes]) -> tuple[float, int]:
    parse = ExportTraceServiceRequest.FromString
    best, spans = float("inf"), 0
    for _ in range(3):
        gc.collect()
        start = time.perf_counter()
        spans = sum(len(parse(b).resource_spans[0].scope_spans[0].spans) for b in records)
        best = min(best, time.perf_counter() - start)
    return spans / best, spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=500_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    parser.add_argument(
        "--child", nargs=3, metavar=("SUITE", "DUMP", "WORKERS"), help=argparse.SUPPRESS
    )
    options = parser.parse_args()
    if options.child:
        suite_path, dump, workers = options.child
        child(suite_path, dump, int(workers))
        return

    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-bench-eval-"))
    directory.mkdir(parents=True, exist_ok=True)
    suite_path = directory / "suite.yaml"
    suite_path.write_text(SUITE)
    t0 = time.perf_counter()
    big_pb, big_json, records = write_dumps(directory, options.spans, "big")
    small_pb, small_json, _ = write_dumps(directory, options.small, "small")
    raw_rate, n = raw_parse_rate(records)
    del records
    print(
        f"{n} spans: protobuf {big_pb.stat().st_size / 1e6:.0f} MB, JSON lines "
        f"{big_json.stat().st_size / 1e6:.0f} MB (generated in {time.perf_counter() - t0:.0f}s); "
        f"{os.cpu_count()} cores"
    )
    print(f"raw protobuf FromString: {raw_rate:,.0f} spans/s\n")
    header = f"{'input':<22}{'workers':>8}{'spans/s':>12}{'vs raw':>8}{'vs 1 wkr':>9}"
    print(header + f"{'driver MB':>11}{'worker MB':>11}{'chunks':>8}{'merged':>8}{'CPU s':>8}")
    big, small = f"{options.spans // 1000}k", f"{options.small // 1000}k"
    for label, pb, js in ((big, big_pb, big_json), (small, small_pb, small_json)):
        for fmt, dump in (("protobuf", pb), ("JSON lines", js)):
            name = f"{fmt} {label}"
            ref = measure(suite_path, dump, 0)
            ref_rate = ref["spans"] / ref["seconds"]
            print(
                f"{name:<22}{'convert':>8}{ref_rate:>12,.0f}{ref_rate / raw_rate:>8.0%}"
                f"{'':>9}{ref['driver_kb'] / 1024:>11.0f}"
            )
            one = None
            for workers in (1, 2):
                m = measure(suite_path, dump, workers)
                rate = m["spans"] / m["seconds"]
                one = one or rate
                print(
                    f"{name:<22}{workers:>8}{rate:>12,.0f}{rate / raw_rate:>8.0%}"
                    f"{rate / one:>8.2f}x{m['driver_kb'] / 1024:>11.0f}"
                    f"{m['worker_kb'] / 1024:>11.0f}{m['chunks']:>8}{m['merged']:>8}"
                    f"{m['cpu_seconds']:>8.1f}"
                )


if __name__ == "__main__":
    main()
