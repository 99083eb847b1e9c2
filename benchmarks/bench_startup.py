"""Benchmark: start-up costs users feel, each the median of N fresh interpreters.

- ``tooltrail --help`` (goal: under 0.3 s);
- ``import tooltrail.live`` in an agent process against ``import opentelemetry.sdk.trace``,
  the SDK the agent loads anyway (goal: within 0.1 s of it);
- ``python -c pass``, the floor.

Usage: ``python benchmarks/bench_startup.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time


def median_seconds(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    python = sys.executable
    cli = shutil.which("tooltrail")
    rows = [
        ("python -c pass", [python, "-c", "pass"]),
        ("tooltrail --help", [cli, "--help"] if cli else [python, "-m", "tooltrail.cli"]),
        ("import opentelemetry.sdk.trace", [python, "-c", "import opentelemetry.sdk.trace"]),
        ("import tooltrail.live", [python, "-c", "import tooltrail.live"]),
        (
            "import tooltrail.live.processor",
            [python, "-c", "import tooltrail.live.processor"],
        ),
    ]
    found = {}
    print(f"{'':34s} {'median s':>9s}  (of {runs})")
    for label, command in rows:
        found[label] = median_seconds(command, runs)
        print(f"{label:34s} {found[label]:9.3f}")
    sdk = found["import opentelemetry.sdk.trace"]
    for label in ("import tooltrail.live", "import tooltrail.live.processor"):
        print(f"{label:34s} {found[label] - sdk:+9.3f} over the SDK's import")


if __name__ == "__main__":
    main()
