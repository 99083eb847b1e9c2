"""Benchmark: the compiled core against the Python path, and both against the raw parse.

Generates GenAI agent traces (``bench_convert``'s generator), writes them as length-prefixed
protobuf and JSON lines, and in one run times, in CPU seconds (the machine is shared: wall time
measures the neighbours too):

- ``ExportTraceServiceRequest.FromString`` of every protobuf record (the raw parse);
- decoding alone: the core engine's protobuf decoder (``Reader.traces``) and the Python path's
  ``spans_from_bytes`` over the same records, with ``dialects.INTEREST``; and the core's
  decoder in the facts mode (``convert.engine.READ_FACTS``: each span's ``SpanFact`` built in
  the core);
- ``read_traces`` on each file, through the core (in the facts mode, as ``read_traces`` reads)
  and through the Python path (in-process, ``TOOLTRAIL_CORE`` switched between runs);
- ``tooltrail eval --workers 1`` end to end on each file, each path in a fresh process.

Usage: ``python benchmarks/bench_core.py [--spans N] [--dir DIR]``. Without the core installed
it says so and times the Python path only.
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_eval import SUITE, write_dumps  # noqa: E402
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)

from tooltrail import dialects  # noqa: E402
from tooltrail.convert import engine as core  # noqa: E402
from tooltrail.convert import read_traces  # noqa: E402
from tooltrail.convert.facts import FactSpan  # noqa: E402
from tooltrail.otlp import Limits  # noqa: E402
from tooltrail.otlp.decode.lazy import Where  # noqa: E402
from tooltrail.otlp.decode.pb import spans_from_bytes  # noqa: E402


def cpu_seconds(fn: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` runs, the garbage collector paused as ``read_traces``
    pauses it."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            fn()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best


def child_cpu(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds of a fresh process running ``argv`` (and its children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=200_000)
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    options = parser.parse_args()
    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-bench-core-"))
    directory.mkdir(parents=True, exist_ok=True)
    pb, jsonl, records = write_dumps(directory, options.spans, "core")
    suite = directory / "suite.yaml"
    suite.write_text(SUITE)
    n = options.spans
    have_core = core.core_module() is not None
    print(
        f"{n} spans in {len(records)} records; protobuf {pb.stat().st_size / 1e6:.0f} MB, "
        f"JSON lines {jsonl.stat().st_size / 1e6:.0f} MB; reading path: {core.reading_path()}"
    )
    rows: list[tuple[str, float]] = []
    parse = ExportTraceServiceRequest.FromString
    rows.append(("raw ParseFromString, protobuf", cpu_seconds(lambda: [parse(b) for b in records])))
    interest = dialects.INTEREST
    where = Where("dump", None, 0, Limits(), [])
    rows.append(
        (
            "decode, Python path (spans_from_bytes)",
            cpu_seconds(lambda: [spans_from_bytes(b, where, interest=interest) for b in records]),
        )
    )
    if have_core:
        engine = core.CoreEngine(core.core_module())
        plain = engine.decoders(core.SPANS).protobuf
        rows.append(
            (
                "decode, core (Reader.traces)",
                cpu_seconds(lambda: [plain(b, where) for b in records]),
            )
        )
        facts = engine.decoders(core.READ_FACTS).protobuf
        rows.append(
            (
                "decode + facts, core (Reader.traces, READ_FACTS)",
                cpu_seconds(lambda: [facts(b, where) for b in records]),
            )
        )
        spans = [s for b in records for s in facts(b, where) or ()]
        covered = sum(1 for s in spans if s.__class__ is FactSpan)
        print(f"facts mode: {covered} of {len(spans)} spans read as facts by the core")
    for fmt, dump in (("protobuf", pb), ("JSON lines", jsonl)):
        for path in [core.PYTHON] + ([core.CORE] if have_core else []):
            os.environ[core.CORE_ENV] = path
            core.reset()
            seconds = cpu_seconds(lambda d=dump: sum(1 for _ in read_traces(str(d))), repeat=2)
            rows.append((f"read_traces, {fmt}, {path}", seconds))
    for fmt, dump in (("protobuf", pb), ("JSON lines", jsonl)):
        for path in [core.PYTHON] + ([core.CORE] if have_core else []):
            env = dict(os.environ, **{core.CORE_ENV: path})
            argv = [sys.executable, "-c", "from tooltrail.cli import main; main()", "eval",
                    str(suite), str(dump), "--workers", "1", "--out", os.devnull]  # fmt: skip
            rows.append((f"tooltrail eval --workers 1, {fmt}, {path}", child_cpu(argv, env)))
    raw = rows[0][1]
    print(f"{'':48s} {'CPU s':>7s} {'spans/s':>10s} {'of raw':>7s}")
    for label, seconds in rows:
        print(f"{label:48s} {seconds:7.2f} {n / seconds:10,.0f} {raw / seconds:7.1%}")


if __name__ == "__main__":
    main()
