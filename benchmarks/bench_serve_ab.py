"""``bench_serve.py`` over several source trees in one session, runs interleaved.

    python benchmarks/bench_serve_ab.py before=/tmp/before/src main=/tmp/main/src \
        branch=src [--rounds 8] [-- --spans 200000 ...]
    python benchmarks/bench_serve_ab.py python=src:python core=src -- --spans 100000

A tree given as ``SRC:python`` runs with ``TOOLTRAIL_CORE=python`` (the Python reading path);
any other tree runs with ``TOOLTRAIL_CORE`` removed from the environment (the compiled core,
when it is installed).

A shared machine's load drifts over minutes, so trees compared one after the other are
compared at different loads. Here each round runs every tree once, in an order rotated from
round to round, and the figures are reported per tree (median and range) with each tree's
server CPU time per span relative to the first tree's, round by round (the steadier figure:
CPU time, not wall time). Extract a commit's tree with
``git archive COMMIT src | tar -x -C DIR``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).with_name("bench_serve.py")
FIGURES = {
    "evaluated": re.compile(r"evaluated: .* = ([\d,]+) spans/s"),
    "cpu_us": re.compile(r"server CPU: .* = ([\d.]+) us per span"),
    "p99_ms": re.compile(r"p99 ([\d.]+) ms"),
    "p50_ms": re.compile(r"p50 ([\d.]+) ms"),
}


def run(tree: str, bench_args: list[str]) -> dict[str, float]:
    tree, _, path = tree.partition(":")
    env = dict(os.environ, PYTHONPATH=tree)
    env.pop("TOOLTRAIL_CORE", None)
    if path:
        env["TOOLTRAIL_CORE"] = path
    done = subprocess.run(
        [sys.executable, str(BENCH), *bench_args], env=env, capture_output=True, text=True
    )
    if done.returncode != 0 or "exactly once: True" not in done.stdout:
        raise SystemExit(f"{tree}: bench_serve failed\n{done.stdout}\n{done.stderr}")
    out: dict[str, float] = {}
    for name, pattern in FIGURES.items():
        found = pattern.search(done.stdout)
        if found is None:
            raise SystemExit(f"{tree}: no {name} in\n{done.stdout}")
        out[name] = float(found.group(1).replace(",", ""))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trees", nargs="+", metavar="NAME=SRC")
    parser.add_argument("--rounds", type=int, default=8)
    args, bench_args = parser.parse_known_args()
    bench_args = [a for a in bench_args if a != "--"]
    trees = [tuple(t.split("=", 1)) for t in args.trees]
    runs: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
    for r in range(args.rounds):
        order = trees[r % len(trees) :] + trees[: r % len(trees)]
        for name, tree in order:
            figures = run(tree, bench_args)
            runs[name].append(figures)
            shown = ", ".join(f"{k} {v:g}" for k, v in figures.items())
            print(f"round {r + 1} {name:>8}: {shown}", flush=True)
    first = trees[0][0]
    print(f"\n{'tree':>8} | evaluated spans/s median (range) | CPU us/span median (range) | "
          f"CPU vs {first} median (range) | p99 ms median (range) | p50 ms median")  # fmt: skip
    for name, _ in trees:
        figures = runs[name]

        def col(key: str, fmt: str, rows: list[dict[str, float]] = figures) -> str:
            values = [f[key] for f in rows]
            return (f"{statistics.median(values):{fmt}} "
                    f"({min(values):{fmt}}-{max(values):{fmt}})")  # fmt: skip

        ratios = [f["cpu_us"] / b["cpu_us"] for f, b in zip(figures, runs[first], strict=True)]
        print(f"{name:>8} | {col('evaluated', ',.0f')} | {col('cpu_us', '.1f')} | "
              f"{statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f}) | "
              f"{col('p99_ms', '.0f')} | "
              f"{statistics.median(f['p50_ms'] for f in figures):.0f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
