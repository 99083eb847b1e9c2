"""Benchmark: CPU time of ``read_traces`` on JSON lines through two builds of the core.

To compare two builds of ``tooltrail-core`` (say, two JSON parsers) on the same file in one
run: each round reads the dump once per build, each read in a fresh process (the build's
unpacked wheel first on ``PYTHONPATH``), the builds taking turns so that the load of a shared
machine falls on both alike. Prints the median CPU seconds and spans/s of each build.

Usage: ``python benchmarks/bench_core_json_ab.py A_DIR B_DIR [--spans 50000] [--rounds 5]``
(``A_DIR``, ``B_DIR``: directories holding an unpacked ``tooltrail_core`` wheel).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_eval import write_dumps  # noqa: E402

READ = (
    "import resource, sys\n"
    "import tooltrail_core\n"
    "assert tooltrail_core.__file__.startswith(sys.argv[2]), tooltrail_core.__file__\n"
    "from tooltrail.convert import read_traces\n"
    "start = resource.getrusage(resource.RUSAGE_SELF)\n"
    "sum(1 for _ in read_traces(sys.argv[1]))\n"
    "end = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print(end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime)\n"
)


def cpu_seconds(dump: Path, build: str) -> float:
    """CPU seconds of one ``read_traces`` over ``dump`` in a process reading with ``build``."""
    src = str(Path(__file__).resolve().parent.parent / "src")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, build]), TOOLTRAIL_CORE="core")
    done = subprocess.run(
        [sys.executable, "-c", READ, str(dump), build],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("builds", nargs=2, help="two directories with an unpacked core wheel")
    parser.add_argument("--spans", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", help="write the dump here (default: a temporary directory)")
    options = parser.parse_args()
    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-json-ab-"))
    directory.mkdir(parents=True, exist_ok=True)
    _, jsonl, _ = write_dumps(directory, options.spans, "ab")
    builds = [str(Path(b).resolve()) for b in options.builds]
    times: dict[str, list[float]] = {b: [] for b in builds}
    for round_ in range(options.rounds):
        for build in builds if round_ % 2 == 0 else builds[::-1]:
            times[build].append(cpu_seconds(jsonl, build))
    print(f"{'build':40s} {'CPU s (median)':>15s} {'spans/s':>10s}")
    for build in builds:
        median = statistics.median(times[build])
        print(f"{build:40s} {median:15.3f} {options.spans / median:10,.0f}")
    first, second = (statistics.median(times[b]) for b in builds)
    print(f"second / first: {second / first:.3f}")


if __name__ == "__main__":
    main()
