"""Benchmark: CPU time of ``read_traces`` and ``tooltrail eval --workers 1`` on a JSON lines
dump through two trees (a ``src`` directory and an unpacked ``tooltrail_core`` wheel each).

For a change to both sides of the JSON lines path (the framing in ``otlp/read/records.py``
and the core's parser), where ``bench_core_json_ab.py`` swaps the core build only. Each
round runs each command once per tree, each in a fresh process, the trees taking turns so
that the load of a shared machine falls on both alike; CPU seconds (user and system) of the
process. Prints the median of each, and the spans per CPU second.

Usage: ``python benchmarks/bench_json_lines_ab.py DUMP SUITE SRC_A CORE_A SRC_B CORE_B
[--spans N] [--rounds 4]`` (``--spans``: the spans of ``DUMP``, for the rate).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

READ = (
    "import resource, sys\n"
    "import tooltrail, tooltrail_core\n"
    "assert tooltrail.__file__.startswith(sys.argv[2]), tooltrail.__file__\n"
    "assert tooltrail_core.__file__.startswith(sys.argv[3]), tooltrail_core.__file__\n"
    "from tooltrail.convert import read_traces\n"
    "start = resource.getrusage(resource.RUSAGE_SELF)\n"
    "sum(1 for _ in read_traces(sys.argv[1]))\n"
    "end = resource.getrusage(resource.RUSAGE_SELF)\n"
    "print(end.ru_utime + end.ru_stime - start.ru_utime - start.ru_stime)\n"
)


def _env(src: str, core: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([src, core]), TOOLTRAIL_CORE="core")


def read_seconds(dump: str, src: str, core: str) -> float:
    """CPU seconds of one ``read_traces`` over ``dump`` (after the imports)."""
    argv = [sys.executable, "-c", READ, dump, src, core]
    done = subprocess.run(argv, env=_env(src, core), capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def eval_seconds(dump: str, suite: str, src: str, core: str) -> float:
    """CPU seconds of a whole ``tooltrail eval --workers 1`` process (and its children)."""
    argv = [sys.executable, "-c", "from tooltrail.cli import main; main()", "eval",
            suite, dump, "--workers", "1", "--out", os.devnull]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, env=_env(src, core), capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"eval failed ({done.returncode}): {done.stderr[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump")
    parser.add_argument("suite")
    parser.add_argument("trees", nargs=4, help="SRC_A CORE_A SRC_B CORE_B")
    parser.add_argument("--spans", type=int, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    options = parser.parse_args()
    trees = [
        (os.path.realpath(options.trees[0]), os.path.realpath(options.trees[1])),
        (os.path.realpath(options.trees[2]), os.path.realpath(options.trees[3])),
    ]
    times: dict[tuple[str, int], list[float]] = {}
    for round_ in range(options.rounds):
        order = [0, 1] if round_ % 2 == 0 else [1, 0]
        for index in order:
            src, core = trees[index]
            times.setdefault(("read_traces", index), []).append(
                read_seconds(options.dump, src, core)
            )
        for index in order:
            src, core = trees[index]
            times.setdefault(("eval --workers 1", index), []).append(
                eval_seconds(options.dump, options.suite, src, core)
            )
        last = ", ".join(f"{what} {'AB'[index]}: {t[-1]:.2f}" for (what, index), t in times.items())
        print(f"round {round_ + 1}: {last}", flush=True)
    print(f"{'':28s} {'CPU s A':>8s} {'spans/s A':>10s} {'CPU s B':>8s} {'spans/s B':>10s} B/A")
    for command in ("read_traces", "eval --workers 1"):
        a, b = (statistics.median(times[command, index]) for index in (0, 1))
        rates = f"{a:8.2f} {options.spans / a:10,.0f} {b:8.2f} {options.spans / b:10,.0f}"
        print(f"{command:28s} {rates} {b / a:.3f}")


if __name__ == "__main__":
    main()
