"""Issue 14's load on the live path at full size: memory, verdicts and shutdown time.

Eight threads each create ``--traces`` agent traces of 13 spans (a root, three tool spans each
with an HTTP child and a nested tool span with its own HTTP child; one root in 20 never ends)
through ``live.install`` with a suite, a results file and a sink recording span ids
(``tests/live_load.py``, shared with ``tests/live/test_live_load.py``). Each run is a fresh process,
so its peak RSS (``ru_maxrss``, taken when ``shutdown`` returned, before the checks) is its
own; ``harness MB`` is what the harness's own records of every span id add to it. The sizes
are 1x, 2x and 4x ``--traces``; the modes are the plain load, a sink taking 2 ms per trace,
and the plain load while two other processes keep both cores busy.

For each run: traces created, seconds of load and of shutdown, peak RSS, traces judged
complete, traces given up (``traces_dropped``), and the problems the shared checks found
(every trace once, no duplicate span, one result line, no FAIL on a complete trace).

    python benchmarks/bench_live_load.py [--traces 5000] [--scales 1,2,4] [--modes all]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
THREADS = 8
MODES = {"plain": 0.0, "sink-2ms": 0.002, "busy-host": 0.0}


def child(traces: int, delay_s: float) -> None:
    """One run in this process; prints its figures as one JSON line."""
    sys.path.insert(0, str(TESTS))
    from live_load import problems, run_load

    with tempfile.TemporaryDirectory() as tmp:
        run = run_load(Path(tmp), threads=THREADS, traces=traces, sink_delay_s=delay_s)
        found = problems(run)
    stats = run.stats
    print(
        json.dumps(
            {
                "traces": len(run.created),
                "load_s": round(run.load_s, 1),
                "shutdown_s": round(run.shutdown_s, 2),
                "peak_rss_mb": round(run.peak_rss_mb),
                "harness_mb": round(harness_bytes(run) / (1 << 20)),
                "complete": stats.traces_complete,
                "dropped": stats.traces_dropped,
                "problems": len(found),
                "first_problems": found[:3],
            }
        )
    )


def harness_bytes(run: object) -> int:
    """What the harness itself holds that grows with the trace count (the ids of every span
    created and delivered, for the checks): not the pipeline's memory."""
    created = run.created  # type: ignore[attr-defined]
    pieces = run.recorder.pieces  # type: ignore[attr-defined]
    total = sys.getsizeof(created) + sys.getsizeof(pieces)
    for trace_id, value in created.items():
        total += sys.getsizeof(trace_id) + sys.getsizeof(value) + sys.getsizeof(value[0])
    for piece in pieces:
        total += sys.getsizeof(piece) + sys.getsizeof(piece[0]) + sys.getsizeof(piece[3])
    return total


def run_child(traces: int, mode: str) -> dict[str, object]:
    spinners = []
    if mode == "busy-host":
        spin = "while True: pass"
        spinners = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(2)]
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--child", str(traces), str(MODES[mode])],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=5000, help="traces per thread at 1x")
    parser.add_argument("--scales", default="1,2,4", help="sizes, as multiples of --traces")
    parser.add_argument("--modes", default="all", help=f"comma-separated of {', '.join(MODES)}")
    parser.add_argument("--child", nargs=2, metavar=("TRACES", "DELAY"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(int(args.child[0]), float(args.child[1]))
        return 0
    modes = list(MODES) if args.modes == "all" else args.modes.split(",")
    scales = [int(s) for s in args.scales.split(",")]
    print(f"{THREADS} threads x N traces of 13 spans (1 root in 20 never ends); live.install")
    header = (
        f"{'mode':10} {'scale':>5} {'traces':>7} {'load s':>7} {'shutdown s':>10} "
        f"{'peak RSS MB':>11} {'harness MB':>10} {'complete':>8} {'dropped':>7} {'problems':>8}"
    )
    print(header)
    failed = False
    for mode in modes:
        for scale in scales:
            r = run_child(args.traces * scale, mode)
            print(
                f"{mode:10} {scale:>4}x {r['traces']:>7} {r['load_s']:>7} {r['shutdown_s']:>10} "
                f"{r['peak_rss_mb']:>11} {r['harness_mb']:>10} {r['complete']:>8} "
                f"{r['dropped']:>7} {r['problems']:>8}",
                flush=True,
            )
            if r["problems"]:
                failed = True
                print(f"    {r['first_problems']}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
