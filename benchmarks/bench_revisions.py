"""What ``--grace`` costs in verdict latency and revisions, when traces span two processes.

    python benchmarks/bench_revisions.py [--traces 1000] [--pairs 20] [--scale 0.2]

Each trace is one agent run spread over two processes: the root's (an agent span) and another
(a tool span under it, say a Go runtime or an MCP server). Each process exports on its own
BatchSpanProcessor tick: every 5 s (the SDK's ``schedule_delay``), at a random phase. Traces
end at random times over 10 s, each on one of ``--pairs`` process pairs, so the other process's
spans arrive anywhere from 5 s before to 5 s after the root's. Every tick posts one request per
process with the pieces it holds into a real ``TracePipeline`` (intake, buffer, evaluator,
results file).

For each ``--grace`` it reports, per trace: the first verdict's latency (from the trace's end
to its first results line), the final verdict's latency (to its last revision), the revisions
per 1,000 traces, and whether every final verdict is right (the whole trace passes). Time is
scaled by ``--scale`` (0.2: a 5 s tick takes 1 s); figures are in unscaled seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from tooltrail.serve.config import ServeConfig
from tooltrail.serve.stages import TracePipeline
from tooltrail.suite import TestSuite

SCHEDULE_DELAY_S = 5.0
SUITE = {
    "name": "two-process",
    "cases": [{"id": "lookup", "match": "all", "required_tools": ["lookup"]}],
}


def piece(trace_id: str, spans: list[dict[str, Any]], service: str) -> dict[str, Any]:
    return {
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]},
        "scopeSpans": [{"scope": {"name": "bench"}, "spans": spans}],
    }


def trace_pieces(n: int, end_ns: int) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(trace id, the root process's piece, the other process's piece)."""
    trace_id = f"{n + 1:032x}"
    root_id, tool_id = f"{2 * n + 1:016x}", f"{2 * n + 2:016x}"
    start = end_ns - 2_000_000_000
    root = {
        "traceId": trace_id, "spanId": root_id, "name": "invoke_agent bench",
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(end_ns), "kind": 1,
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
            {"key": "gen_ai.agent.name", "value": {"stringValue": "bench"}},
        ],
    }  # fmt: skip
    tool = {
        "traceId": trace_id, "spanId": tool_id, "parentSpanId": root_id,
        "name": "execute_tool lookup", "kind": 1,
        "startTimeUnixNano": str(start + 1), "endTimeUnixNano": str(end_ns - 1),
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
        ],
    }  # fmt: skip
    return trace_id, piece(trace_id, [root], "agent"), piece(trace_id, [tool], "tool-server")


def run(grace: float, args: argparse.Namespace, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    scale = args.scale
    phases = [(rng.uniform(0, SCHEDULE_DELAY_S), rng.uniform(0, SCHEDULE_DELAY_S))
              for _ in range(args.pairs)]  # fmt: skip
    # (send time, process, groups); end time per trace (unscaled seconds from the start).
    ticks: dict[tuple[float, int], list[dict[str, Any]]] = {}
    ends: dict[str, float] = {}
    base_ns = time.time_ns()
    for n in range(args.traces):
        end = rng.uniform(0, 10.0)
        pair = rng.randrange(args.pairs)
        trace_id, root_piece, other_piece = trace_pieces(n, base_ns + int(end * 1e9))
        ends[trace_id] = end
        for side, group in ((0, root_piece), (1, other_piece)):
            phase = phases[pair][side]
            tick = phase + SCHEDULE_DELAY_S * max(0, -(-(end - phase) // SCHEDULE_DELAY_S))
            ticks.setdefault((tick, 2 * pair + side), []).append(group)
    with tempfile.TemporaryDirectory() as tmp:
        results = Path(tmp, "results.jsonl")
        config = ServeConfig(
            grace=grace * scale, logs_grace=grace * scale, results=results,
            revision_window=args.window * scale, grpc_port=None, http_port=None,
        )  # fmt: skip
        pipeline = TracePipeline(config, TestSuite.from_dict(SUITE))
        started = time.monotonic()
        start_ns = time.time_ns()
        for (tick, _process), groups in sorted(ticks.items()):
            delay = started + tick * scale - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pipeline.ingest("json", json.dumps({"resourceSpans": groups}).encode())
        deadline = time.monotonic() + (grace + 10) * scale + 5
        while time.monotonic() < deadline:
            done = pipeline.stats()["traces_evaluated"]
            if done >= args.traces and time.monotonic() - started > (15 + grace) * scale:
                break
            time.sleep(0.05)
        pipeline.shutdown()
        lines = [json.loads(x) for x in results.read_text().splitlines()]
    first: dict[str, float] = {}
    last: dict[str, tuple[int, float, bool]] = {}
    for line in lines:
        at = (line["time_unix_nano"] - start_ns) / 1e9 / scale - ends[line["trace_id"]]
        first.setdefault(line["trace_id"], at)
        revision = line["revision"]
        if isinstance(revision, int) and revision >= last.get(line["trace_id"], (-1, 0, 0))[0]:
            last[line["trace_id"]] = (revision, at, bool(line["passed"]))
    revisions = sum(1 for x in lines if isinstance(x["revision"], int) and x["revision"] > 0)
    first_wrong = sum(1 for x in lines if x["revision"] == 0 and not x["passed"])
    return {
        "grace": grace,
        "first_p50": statistics.median(first.values()),
        "first_p99": statistics.quantiles(first.values(), n=100)[98],
        "final_p50": statistics.median(v[1] for v in last.values()),
        "final_p99": statistics.quantiles([v[1] for v in last.values()], n=100)[98],
        "revisions_per_1000": 1000 * revisions / args.traces,
        "first_wrong_per_1000": 1000 * first_wrong / args.traces,
        "final_right": sum(1 for v in last.values() if v[2]) / args.traces,
        "lost": args.traces - len(last),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--pairs", type=int, default=20, help="process pairs (random phases)")
    parser.add_argument("--scale", type=float, default=0.2, help="time scale (1: real time)")
    parser.add_argument("--window", type=float, default=35.0)
    parser.add_argument("--grace", type=float, nargs="*", default=[0.5, 2.0, 5.0, 6.0])
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    print("grace  first p50/p99 s  final p50/p99 s  revisions/1000  wrong first/1000  "
          "final right  lost")  # fmt: skip
    for grace in args.grace:
        r = run(grace, args, args.seed)
        print(
            f"{r['grace']:5.1f}  {r['first_p50']:6.2f}/{r['first_p99']:5.2f}    "
            f"{r['final_p50']:6.2f}/{r['final_p99']:5.2f}    {r['revisions_per_1000']:8.0f}"
            f"        {r['first_wrong_per_1000']:8.0f}        {r['final_right']:6.1%}  "
            f"{r['lost']:4d}"
        )


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
