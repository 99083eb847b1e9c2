"""Issue 38's targets in one run, each a ratio against its natural limit measured in the same run.

    python benchmarks/bench_targets.py [--spans 500000] [--rounds 3] [--skip serve,live]

- ``eval --workers 1`` on length-prefixed protobuf, JSON report and text report: spans per CPU
  second against ``ExportTraceServiceRequest.FromString`` of the same records (goal >= 0.35);
- ``eval --workers 1`` on JSON lines, JSON report: against ``orjson.loads`` of every line of
  the same file (goal >= 1.0);
- the cost's growth with the dump (``--spans`` and a fifth of it, text report, start-up
  included): fixed CPU seconds and microseconds a span, from the two sizes; the driver's peak
  memory (``bench_eval.py``'s child run) at both;
- ``serve``, one worker (``bench_serve.py``): spans/s evaluated (goal >= 100,000), p99, every
  trace evaluated exactly once;
- live (``bench_live.py``): all threads' CPU per span added over the bare SDK, tool and
  non-tool spans (goal <= +10%).

Each eval round runs every command once, in a fresh process, CPU seconds (user + system: other
jobs on the machine count less than in wall time), with the limits measured in the same round;
medians of ``--rounds``. ``valgrind --tool=callgrind`` counts, the steadier figure, come from
``bench_instructions.py`` (the same targets, each against its limit counted the same way) and
the benchmarks that count one step (``bench_rows.py --callgrind``, ``bench_build.py``;
docs/eval.md, docs/serve.md).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from bench_eval import SUITE, cache_bytecode, measure, raw_parse_rate, write_dumps

HERE = Path(__file__).resolve().parent
TOOLTRAIL = Path(sys.executable).parent / "tooltrail"


def eval_cpu(suite: Path, dump: Path, fmt: str) -> float:
    """CPU seconds of ``tooltrail eval SUITE DUMP --workers 1 --format FMT`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [str(TOOLTRAIL), "eval", str(suite), str(dump), "--workers", "1", "--format", fmt]
        + ["--out", os.devnull],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):  # 1: some traces fail the suite, as they should
        raise SystemExit(f"eval {dump} --format {fmt} failed ({done.returncode}):\n{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def orjson_rate(dump: Path) -> float:
    """Spans per CPU second of ``orjson.loads`` of every line of a JSON-lines dump (best of 3)."""
    lines = dump.read_bytes().splitlines()
    best, spans = float("inf"), 0
    for _ in range(3):
        start = time.process_time()
        spans = 0
        for line in lines:
            request = orjson.loads(line)
            for resource_spans in request["resourceSpans"]:
                for scope in resource_spans["scopeSpans"]:
                    spans += len(scope["spans"])
        best = min(best, time.process_time() - start)
    return spans / best


def serve_figures() -> str:
    """``bench_serve.py``'s lines for spans/s evaluated, latency and exactly-once."""
    done = subprocess.run(
        [sys.executable, str(HERE / "bench_serve.py")], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_serve failed:\n{done.stdout}\n{done.stderr}")
    wanted = re.compile(r"evaluated:|p99|exactly once|server CPU")
    return "\n".join(line for line in done.stdout.splitlines() if wanted.search(line))


def live_figures(rounds: int) -> str:
    """``bench_live.py``'s rows of every thread's CPU (the target's clock)."""
    done = subprocess.run(
        [sys.executable, str(HERE / "bench_live.py"), "--rounds", str(max(rounds, 5))],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise SystemExit(f"bench_live failed:\n{done.stdout}\n{done.stderr}")
    return "\n".join(line for line in done.stdout.splitlines() if " cpu " in line)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=500_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    parser.add_argument("--skip", default="", help="comma-separated: serve, live")
    options = parser.parse_args()
    skip = {part.strip() for part in options.skip.split(",") if part.strip()}
    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-bench-targets-"))
    directory.mkdir(parents=True, exist_ok=True)
    suite = directory / "suite.yaml"
    suite.write_text(SUITE)
    cache_bytecode(directory)
    pb, jsonl, records = write_dumps(directory, options.spans, "big")
    small_pb, _, _ = write_dumps(directory, options.spans // 5, "small", json_lines=False)

    runs: dict[str, list[float]] = {
        "protobuf, JSON report": [],
        "protobuf, text report": [],
        "JSON lines, JSON report": [],
    }
    small_runs: list[float] = []
    raw: list[float] = []
    loads: list[float] = []
    for round_ in range(options.rounds):
        raw.append(raw_parse_rate(records, time.process_time)[0])
        loads.append(orjson_rate(jsonl))
        runs["protobuf, JSON report"].append(eval_cpu(suite, pb, "json"))
        runs["protobuf, text report"].append(eval_cpu(suite, pb, "text"))
        runs["JSON lines, JSON report"].append(eval_cpu(suite, jsonl, "json"))
        small_runs.append(eval_cpu(suite, small_pb, "text"))
        print(f"round {round_ + 1} of {options.rounds} done", file=sys.stderr, flush=True)
    spans = options.spans
    limit = {"protobuf": statistics.median(raw), "JSON lines": statistics.median(loads)}
    goal = {"protobuf": 0.35, "JSON lines": 1.0}
    print(f"{spans:,} spans; medians of {options.rounds} rounds, CPU seconds")
    print(
        f"raw FromString {limit['protobuf']:,.0f} spans/s, "
        f"orjson.loads {limit['JSON lines']:,.0f} spans/s (per CPU second)"
    )
    print(f"{'eval --workers 1':<28}{'CPU s':>8}{'spans/s':>11}{'of limit':>10}{'goal':>7}")
    for name, seconds in runs.items():
        encoding = name.split(",")[0]
        rate = spans / statistics.median(seconds)
        print(
            f"{name:<28}{statistics.median(seconds):>8.2f}{rate:>11,.0f}"
            f"{rate / limit[encoding]:>10.2f}{goal[encoding]:>7.2f}"
        )

    # The cost's growth with the dump: the text report's runs at both sizes, start-up included.
    big_s = statistics.median(runs["protobuf, text report"])
    small_s, small_spans = statistics.median(small_runs), spans // 5
    per_span = (big_s - small_s) / (spans - small_spans)
    print(
        f"cost: {big_s - per_span * spans:.2f} CPU s fixed + {per_span * 1e6:.1f} us a span "
        f"(eval --workers 1, text report, {small_spans:,} and {spans:,} spans)"
    )
    big, small = measure(suite, pb, 1), measure(suite, small_pb, 1)
    print(
        f"memory: driver peak {big['driver_kb'] / 1024:.0f} MB at {big['spans']:,} spans "
        f"({big['driver_kb'] * 1024 / big['spans']:,.0f} bytes a span), "
        f"{small['driver_kb'] / 1024:.0f} MB at {small['spans']:,}"
    )
    if "serve" not in skip:
        print("serve, one worker:\n" + serve_figures())
    if "live" not in skip:
        print("live, all threads' CPU (goal <= +10%):\n" + live_figures(options.rounds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
