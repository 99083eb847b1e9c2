"""Benchmark: peak memory per span of ``read_traces``, the compiled core against the Python path.

Writes ``bench_core``'s dumps (protobuf and JSON lines, the same traces) and reads each file
once per path, each read in a fresh process (``TOOLTRAIL_CORE`` set for it), all in one run.
A child first reads a tiny dump, so every module either path loads lazily (the core, protobuf,
msgspec, the dialects) is in memory, takes its peak resident size then as the baseline, reads
the dump, and reports its peak resident size minus the baseline, divided by the spans. Each
read is made twice: ``streamed`` consumes the traces one by one (as ``tooltrail eval`` does:
the reader holds only the traces not yet complete), ``held`` keeps them all in a list (the
traces themselves, the same objects on both paths, plus anything the reader keeps alive).

Why resident size and not ``tracemalloc``: tracemalloc sees only allocations through Python's
allocators, so it would miss what the core allocates in Rust (its buffers and decoded structs,
through the system allocator) and flatter the core; the resident size counts every byte both
paths touch. It is read from ``/proc/self/status`` (Linux): the baseline is ``VmRSS`` after the
warm-up, the peak ``VmHWM``. Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux carries it across
``execve``, so a child started by this (large) process would report this process's peak. The
resident size is coarse (pages, and the allocator may keep freed memory), which is why the
dumps are large and both paths get the same warm-up.

Usage: ``python benchmarks/bench_core_memory.py [--spans N] [--dir DIR]``. Without the core
installed it measures the Python path only.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_eval import write_dumps  # noqa: E402

from tooltrail.convert import engine as core  # noqa: E402

#: The child: warm up on a tiny dump, take the baseline, read the dump, print the figures.
CHILD = """
import json, sys
from tooltrail.convert import read_traces
from tooltrail.convert.engine import reading_path
def kib(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))
warm, dump, mode = sys.argv[1], sys.argv[2], sys.argv[3]
sum(1 for _ in read_traces(warm))
base = kib("VmRSS")
if mode == "held":
    kept = list(read_traces(dump))
    traces = len(kept)
else:
    traces = sum(1 for _ in read_traces(dump))
peak = kib("VmHWM")
print(json.dumps({"path": reading_path(), "traces": traces, "base_kib": base, "peak_kib": peak}))
"""


def measure(warm: Path, dump: Path, path: str, mode: str) -> dict[str, object]:
    """The figures of one read of ``dump`` through ``path`` in a fresh process, the traces
    ``streamed`` or ``held``."""
    env = dict(os.environ, **{core.CORE_ENV: path})
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(warm), str(dump), mode],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"reading {dump} through {path} failed: {done.stderr}")
    figures: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return figures


def dumps(directory: Path, n: int, name: str) -> tuple[Path, Path]:
    """The protobuf and JSON-lines dumps of ``n`` spans, written unless ``--dir`` has them."""
    pb, jsonl = directory / f"{name}-{n}.pb", directory / f"{name}-{n}.jsonl"
    if not (pb.exists() and jsonl.exists()):
        written = write_dumps(directory, n, f"{name}-{n}")[:2]
        assert written == (pb, jsonl)
    return pb, jsonl


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=150_000)
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    options = parser.parse_args()
    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-bench-memory-"))
    directory.mkdir(parents=True, exist_ok=True)
    n = options.spans
    pb, jsonl = dumps(directory, n, "memory")
    warm_pb, warm_jsonl = dumps(directory, 200, "warm")
    paths = [core.PYTHON] + ([core.CORE] if core.core_module() is not None else [])
    print(f"{n} spans; protobuf {pb.stat().st_size / 1e6:.0f} MB, "
          f"JSON lines {jsonl.stat().st_size / 1e6:.0f} MB")  # fmt: skip
    print(f"{'read_traces':38s} {'baseline MB':>11s} {'peak MB':>8s} {'bytes/span':>10s}")
    formats = (("protobuf", warm_pb, pb), ("JSON lines", warm_jsonl, jsonl))
    for mode, (fmt, warm, dump), path in itertools.product(("streamed", "held"), formats, paths):
        got = measure(warm, dump, path, mode)
        base, peak = int(str(got["base_kib"])), int(str(got["peak_kib"]))
        label, per_span = f"{mode}, {fmt}, {got['path']}", (peak - base) * 1024 / n
        print(f"{label:38s} {base / 1024:11.0f} {peak / 1024:8.0f} {per_span:10,.0f}")


if __name__ == "__main__":
    main()
