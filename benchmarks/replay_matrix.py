"""The whole replay matrix of issue 21: every fixture, every schedule, every receiver.

    python benchmarks/replay_matrix.py [--grace 2.0] [--real-grace 2.0] [--seed 21]
                                       [--targets live,serve/grpc/w2] [--sample N] [--details]

Replays each fixture ``tooltrail eval`` reads (``tests/data``, ``../shared/corpus``, the
external corpus when present; one of each pair of files with equal telemetry) on every
schedule of ``tests/replay.py`` into a real ``tooltrail serve`` (HTTP JSON, HTTP protobuf,
gRPC; ``--workers`` 1 and 2) and into the live ``TraceBuffer`` fed through the SDK, and
compares each trace's final verdict (highest ``revision``) and calls with ``tooltrail eval``'s
on the file. Prints, per receiver and in total: fixtures, replays, differences, lost traces,
unmarked duplicates, verdicts before the root, send errors, traces whose final verdict is a
revision, time; with ``--details`` every
difference (receiver, schedule, fixture, what differs). A difference in a replay whose
pieces arrive after the verdict is marked ``late`` (issue 21: needs verdict revisions).

Time is scaled (``tests/replay.py``, ``Timing``): schedules are in real seconds against a
``--real-grace`` of 2 s (5 s BatchSpanProcessor ticks, offsets of 0 to 5 s), run against a
receiver whose ``--grace`` is ``--grace`` (the same 2 s by default: real time; ``--grace 1``
runs twice as fast, with less room for a loaded machine). Exit status 1 when anything
differs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from replay import (  # noqa: E402 - the harness lives with the tests
    TARGETS,
    Timing,
    build_replays,
    distinct,
    judge,
    load_suite,
    make_target,
    recordings,
    revised,
    run_replays,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grace", type=float, default=2.0, help="the receivers' grace (s)")
    parser.add_argument(
        "--real-grace", type=float, default=2.0, help="the grace the schedules assume (s)"
    )
    parser.add_argument("--seed", type=int, default=21)
    parser.add_argument("--targets", default=",".join(TARGETS), help="comma-separated")
    parser.add_argument("--sample", type=int, default=None, help="recordings per schedule")
    parser.add_argument("--details", action="store_true", help="print every problem")
    args = parser.parse_args()
    timing = Timing(grace=args.grace, real_grace=args.real_grace)
    started = time.monotonic()
    files = recordings(load_suite())
    recs = distinct(files)
    print(
        f"fixtures: {len(files)} files, {len(recs)} distinct, "
        f"{sum(len(r.expected) for r in recs)} traces; grace {timing.real_grace} s "
        f"run as {timing.grace} s (time x{timing.scale:g})"
    )
    header = f"{'receiver':<24}{'replays':>8}{'diff':>6}{'late':>6}{'lost':>6}{'dup':>5}"
    print(header + f"{'early':>6}{'error':>6}{'revised':>8}{'time s':>8}")
    totals: Counter[str] = Counter()
    details: list[str] = []
    for name in args.targets.split(","):
        began = time.monotonic()
        replays = build_replays(recs, timing, live=name == "live", seed=args.seed,
                                sample=args.sample)  # fmt: skip
        with tempfile.TemporaryDirectory() as directory:
            target = make_target(name, timing, Path(directory))
            run_replays(target, replays)
            late = {r.key for r in replays if r.late_matters}
            problems = [p for r in replays for p in judge(target, r)]
            counts = Counter(p.kind for p in problems)
            counts["revised"] = revised(target, replays)
        counts["late"] = sum(1 for p in problems if p.kind == "difference" and p.replay in late)
        counts["replays"] = len(replays)
        totals.update(counts)
        details.extend(f"{'late ' if p.replay in late else ''}{p}" for p in problems)
        print(
            f"{name:<24}{len(replays):>8}{counts['difference']:>6}{counts['late']:>6}"
            f"{counts['lost']:>6}{counts['duplicate']:>5}{counts['early']:>6}"
            f"{counts['error']:>6}{counts['revised']:>8}{time.monotonic() - began:>8.1f}"
        )
    print(
        f"{'total':<24}{totals['replays']:>8}{totals['difference']:>6}{totals['late']:>6}"
        f"{totals['lost']:>6}{totals['duplicate']:>5}{totals['early']:>6}{totals['error']:>6}"
        f"{totals['revised']:>8}{time.monotonic() - started:>8.1f}"
    )
    if args.details:
        for line in sorted(details):
            print(line)
    bad = totals["difference"] + totals["lost"] + totals["duplicate"] + totals["early"]
    return 1 if bad + totals["error"] else 0


if __name__ == "__main__":
    sys.exit(main())
