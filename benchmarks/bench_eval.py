"""Benchmark: ``tooltrail eval`` end to end against the raw protobuf parse of the same bytes.

Generates ~500k spans of GenAI agent traces (bench_convert's generator: an ``invoke_agent``
root, ``chat`` spans with message histories, ``execute_tool`` spans; about 40% tool spans),
writes them as length-prefixed protobuf and as collector JSON lines, then in one run times:

- the raw ``ExportTraceServiceRequest.FromString`` of every protobuf record, and the floor of
  ``bench_convert`` (the least conversion work any Python converter does) over the same records;
- the batch pass (``run_batch`` + the text report) with the seed's checks, on each file,
  with 1 and 2 workers, each in a fresh process whose peak RSS is recorded (the driver's,
  which does all the work with one worker, and the largest pool worker's);
- ``tooltrail.convert.read_traces`` alone on each file (decoding and conversion, no
  evaluation), to show what the batch pass adds on top;
- the same on a 100k-span dump, to show memory does not grow with the dump.

Usage: ``python benchmarks/bench_eval.py [--spans N] [--small N] [--plain K] [--dir DIR]``.
``--plain K`` adds K plain spans (HTTP, database, cache) under every tool call.
Goals (issue 6): one worker >= 35% of the raw parse rate; two workers >= 1.7x one worker;
peak memory flat from 100k to 500k spans.

``--split`` instead times one ``--workers 1`` pass per format on a ``--spans`` dump and says
where its CPU time goes: decoding records (with the core: its reading of each record into
trace parts), the converter (``TraceCollector.add_record`` and ``TraceCollector.build``),
evaluation (matching cases and ``evaluate_cases``), the report, and garbage collection, and
the batch pass's own work (reading, grouping, labelling, compacting rows: the rest; this
includes freeing each decoded record, which happens in the batch loop), e.g.
``python benchmarks/bench_eval.py --split --spans 50000``.

``--cpu NAME=SRC [NAME=SRC ...]`` instead compares source trees (``src`` directories, e.g. a
``git archive`` of the base commit and the working tree) on a ``--spans`` protobuf dump: each
round runs ``tooltrail eval SUITE DUMP --workers 1`` once per tree, in turn, in a fresh process
with ``PYTHONPATH=SRC``, and times its CPU seconds (user + system: on a shared machine, other
jobs' time does not count), and the raw parse of the same records in CPU seconds; it prints
each tree's median spans per CPU second and its ratio to the raw parse, e.g.
``python benchmarks/bench_eval.py --cpu base=/tmp/base/src new=src --rounds 5``; ``--format
json --format text`` runs each tree once per report format in every round.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_convert import floor_protobuf, generate  # noqa: E402  (shared with bench_convert)
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
    from tooltrail.report import write_text
    from tooltrail.results import EvaluationReport
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
    report = _Counted()
    write_text(EvaluationReport.from_results(suite, result.results), report)  # as the CLI does
    seconds = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": seconds,
                "spans": result.span_count,
                "rows": len(result.results),
                "chunks": result.chunk_count,
                "merged": result.merged_count,
                "report_bytes": report.size,
                "driver_kb": peak_rss_kb(),
                "worker_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
                "cpu_seconds": cpu_seconds(),
            }
        )
    )


class _Counted:
    """A report sink that keeps only the size of what it was given."""

    size = 0

    def write(self, text: str, /) -> None:
        self.size += len(text)


def split(suite_path: str, dump: str) -> dict[str, float]:
    """CPU seconds of one ``--workers 1`` pass by part, timed by wrapping the functions the
    batch tasks call (``time.process_time``: other processes on the machine do not count)."""
    import tooltrail.batch.tasks as tasks
    from tooltrail.batch import run_batch
    from tooltrail.convert.collect import TraceCollector
    from tooltrail.report import write_text
    from tooltrail.results import EvaluationReport
    from tooltrail.suite import TestSuite

    clock = time.process_time
    spent = dict.fromkeys(("decode", "convert", "evaluate", "report", "gc"), 0.0)
    running = ["batch"]  # the part being timed; a garbage collection is charged to "gc"
    gc_started = [0.0]

    def collecting(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = clock()
            return
        took = clock() - gc_started[0]
        spent["gc"] += took
        if running[-1] != "batch":
            spent[running[-1]] -= took

    def timed(part: str, fn: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            running.append(part)
            start = clock()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[part] += clock() - start
                running.pop()

        return wrapper

    def timed_records(fn: Any) -> Any:
        def wrapper(*args: Any) -> Any:
            records = fn(*args)
            while True:
                running.append("decode")
                start = clock()
                record = next(records, None)
                spent["decode"] += clock() - start
                running.pop()
                if record is None:
                    return
                yield record

        return wrapper

    tasks.read_chunk = timed_records(tasks.read_chunk)  # type: ignore[assignment]
    # the engine's collector: each record's spans collected, each trace built
    TraceCollector.add_record = timed("convert", TraceCollector.add_record)  # type: ignore[method-assign]
    TraceCollector.build = timed("convert", TraceCollector.build)  # type: ignore[method-assign]
    for name in ("evaluate_cases", "evaluate_trace"):  # the latter in trees before evaluate_cases
        if hasattr(tasks, name):
            setattr(tasks, name, timed("evaluate", getattr(tasks, name)))
    TestSuite.cases_for = timed("evaluate", TestSuite.cases_for)  # type: ignore[method-assign]
    suite = TestSuite.load(suite_path)
    gc.callbacks.append(collecting)
    start = clock()
    result = run_batch(suite, [dump], workers=1)
    write_text = timed("report", write_text)
    write_text(EvaluationReport.from_results(suite, result.results), _Counted())
    total = clock() - start
    gc.callbacks.remove(collecting)
    spent["batch"] = total - sum(spent.values())
    return {"total": total, "spans": result.span_count, **spent}


def print_split(suite_path: Path, dumps: list[tuple[str, Path]]) -> None:
    parts = ("decode", "convert", "evaluate", "report", "gc", "batch")
    print(f"{'input':<14}{'spans/CPU s':>12}" + "".join(f"{p:>14}" for p in parts))
    for name, dump in dumps:
        out = subprocess.run(
            [sys.executable, __file__, "--child-split", str(suite_path), str(dump)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        m = json.loads(out.strip().splitlines()[-1])
        cells = "".join(f"{m[p]:>7.2f}s {m[p] / m['total']:>4.0%}" for p in parts)
        print(f"{name:<14}{m['spans'] / m['total']:>12,.0f}{cells}")


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


def cache_bytecode(directory: Path) -> None:
    """Let the child processes keep compiled modules, as an installed package has them.

    A machine that sets ``PYTHONDONTWRITEBYTECODE`` (this project's CI image does) makes every
    fresh ``tooltrail`` process compile its ~150 modules again: 0.24 s of start-up that a pip
    install, which writes the ``.pyc`` files once, does not pay. The children write theirs
    under ``directory`` (``PYTHONPYCACHEPREFIX``), leaving the checkout as it is, and one
    warm-up import compiles them before anything is timed."""
    if not os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
        return
    os.environ["PYTHONPYCACHEPREFIX"] = str(directory / "pycache")
    warm = "import tooltrail.cli.eval, tooltrail.cli.serve, tooltrail.batch.tasks"
    subprocess.run([sys.executable, "-c", warm], check=True)
    print(
        "PYTHONDONTWRITEBYTECODE was set: child processes cache bytecode under "
        f"{directory / 'pycache'}, as an installed package does",
        file=sys.stderr,
    )


def write_dumps(
    directory: Path, n_spans: int, name: str, plain: int = 0, json_lines: bool = True
) -> tuple[Path, Path, list[bytes]]:
    """The protobuf dump and (unless not ``json_lines``) the JSON-lines dump of the same
    requests, and each request's bytes."""
    requests = generate(n_spans, plain=plain)
    pb, jsonl = directory / f"{name}.pb", directory / f"{name}.jsonl"
    with open(pb, "wb") as out:
        for request in requests:
            out.write(encode_for_file(request, "proto"))
    if json_lines:
        with open(jsonl, "wb") as out:
            for request in requests:
                out.write(encode_for_file(request, "json"))
    return pb, jsonl, [r.SerializeToString() for r in requests]


def _seconds(fn: Any, *args: Any) -> float:
    gc.collect()
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def raw_parse_rate(records: list[bytes], clock: Any = time.perf_counter) -> tuple[float, int]:
    """Spans per second of ``FromString`` over ``records``, the best of three, by ``clock``
    (wall-clock; ``time.process_time`` for CPU time)."""
    parse = ExportTraceServiceRequest.FromString
    best, spans = float("inf"), 0
    for _ in range(3):
        gc.collect()
        start = clock()
        spans = sum(len(parse(b).resource_spans[0].scope_spans[0].spans) for b in records)
        best = min(best, clock() - start)
    return spans / best, spans


def compare_cpu(
    trees: dict[str, str],
    suite_path: Path,
    dump: Path,
    records: list[bytes],
    rounds: int,
    formats: list[str],
) -> None:
    """Interleaved CPU-time runs of ``tooltrail eval --workers 1`` per source tree and report
    format (``--cpu``, ``--format``)."""
    tooltrail = Path(sys.executable).parent / "tooltrail"
    runs = [(f"{name} {fmt}", src, fmt) for fmt in formats for name, src in trees.items()]
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    raw: list[float] = []
    spans = 0
    for round_ in range(rounds):
        rate, spans = raw_parse_rate(records, time.process_time)
        raw.append(rate)
        for name, src, fmt in runs:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            done = subprocess.run(
                [str(tooltrail), "eval", str(suite_path), str(dump), "--workers", "1"]
                + ["--format", fmt, "--out", os.devnull],
                env={**os.environ, "PYTHONPATH": src},
                capture_output=True,
                text=True,
            )
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            seconds = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            cpu[name].append(seconds)
            summary = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
            print(f"round {round_ + 1} {name}: {seconds:.2f} CPU s ({summary})", flush=True)
    raw_rate = statistics.median(raw)
    print(f"\nraw FromString: median {raw_rate:,.0f} spans per CPU s")
    for name, times in cpu.items():
        seconds = statistics.median(times)
        rate = spans / seconds
        print(
            f"{name}: median {seconds:.2f} CPU s, {rate:,.0f} spans per CPU s, "
            f"{rate / raw_rate:.1%} of the raw parse (runs: {', '.join(f'{r:.2f}' for r in times)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=500_000)
    parser.add_argument("--small", type=int, default=100_000)
    parser.add_argument("--plain", type=int, default=0, help="plain spans under each tool call")
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    parser.add_argument(
        "--split", action="store_true", help="where one worker's CPU time goes, by part"
    )
    parser.add_argument(
        "--child", nargs=3, metavar=("SUITE", "DUMP", "WORKERS"), help=argparse.SUPPRESS
    )
    parser.add_argument("--child-split", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument(
        "--cpu",
        nargs="+",
        metavar="NAME=SRC",
        help="compare source trees: interleaved CPU-time runs of eval --workers 1",
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --cpu")
    parser.add_argument(
        "--format",
        action="append",
        help="the report format of --cpu runs (repeatable; default text)",
    )
    options = parser.parse_args()
    if options.child:
        suite_path, dump, workers = options.child
        child(suite_path, dump, int(workers))
        return
    if options.child_split:
        print(json.dumps(split(*options.child_split)))
        return

    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-bench-eval-"))
    directory.mkdir(parents=True, exist_ok=True)
    suite_path = directory / "suite.yaml"
    suite_path.write_text(SUITE)
    cache_bytecode(directory)
    t0 = time.perf_counter()
    if options.cpu:
        pb, _, records = write_dumps(directory, options.spans, "cpu", options.plain, False)
        trees = dict(tree.split("=", 1) for tree in options.cpu)
        compare_cpu(trees, suite_path, pb, records, options.rounds, options.format or ["text"])
        return
    if options.split:
        pb, js, _ = write_dumps(directory, options.spans, "split", options.plain)
        print(f"{options.spans} spans, {options.plain} plain spans per tool call, one worker")
        print_split(suite_path, [("protobuf", pb), ("JSON lines", js)])
        return
    big_pb, big_json, records = write_dumps(directory, options.spans, "big", options.plain)
    small_pb, small_json, _ = write_dumps(directory, options.small, "small", options.plain)
    raw_rate, n = raw_parse_rate(records)
    floor_rate = n / min(_seconds(floor_protobuf, records) for _ in range(3))
    del records
    print(
        f"{n} spans: protobuf {big_pb.stat().st_size / 1e6:.0f} MB, JSON lines "
        f"{big_json.stat().st_size / 1e6:.0f} MB (generated in {time.perf_counter() - t0:.0f}s); "
        f"{os.cpu_count()} cores"
    )
    print(f"raw protobuf FromString: {raw_rate:,.0f} spans/s")
    print(
        f"floor, the least conversion work in Python (bench_convert.FLOOR): {floor_rate:,.0f} "
        f"spans/s, {floor_rate / raw_rate:.0%} of the raw parse: no evaluation in Python "
        "over this parse runs faster\n"
    )
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
