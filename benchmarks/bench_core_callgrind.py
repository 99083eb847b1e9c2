"""Benchmark: callgrind instructions per span of ``read_traces``, core and Python path.

Instruction counts do not depend on the load of a shared machine. Each count is of a fresh
process reading a dump with ``read_traces`` under ``valgrind --tool=callgrind``; the figure
per span is the difference between a big and a small dump of the same generator
(``bench_eval.write_dumps``: GenAI agent traces) divided by the difference in spans, so that
start-up and imports cancel out.

Usage: ``python benchmarks/bench_core_callgrind.py [--small 2000] [--big 6000] [--dir DIR]``
(valgrind must be installed; a run takes some minutes).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_eval import write_dumps  # noqa: E402

READ = (
    "import sys; from tooltrail.convert import read_traces; "
    "sum(1 for _ in read_traces(sys.argv[1]))"
)


def instructions(path: Path, reading_path: str, out: Path) -> int:
    """Instructions callgrind counts for a process reading ``path`` with ``read_traces``."""
    env = dict(os.environ, TOOLTRAIL_CORE=reading_path)
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            READ,
            str(path),
        ],  # fmt: skip
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"valgrind failed on {path}: {done.stderr[-2000:]}")
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"no instruction count in valgrind's output: {done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=2000)
    parser.add_argument("--big", type=int, default=6000)
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    options = parser.parse_args()
    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-callgrind-"))
    dumps = {}
    for size in (options.small, options.big):
        where = directory / str(size)
        where.mkdir(parents=True, exist_ok=True)
        pb, jsonl, _ = write_dumps(where, size, "callgrind")
        dumps[size] = {"protobuf": pb, "JSON lines": jsonl}
    spans = options.big - options.small
    print(f"{'read_traces':24s} {'path':8s} {'instructions/span':>18s}")
    for fmt in ("protobuf", "JSON lines"):
        for reading_path in ("python", "core"):
            counts = [
                instructions(dumps[size][fmt], reading_path, directory / f"cg.{size}.out")
                for size in (options.small, options.big)
            ]
            print(f"{fmt:24s} {reading_path:8s} {(counts[1] - counts[0]) / spans:18,.0f}")


if __name__ == "__main__":
    main()
