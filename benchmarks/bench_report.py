"""How long the HTML report of a large run takes to write, against the JSON report of the same
run: 100,000 traces by default.

Goal (issue 17): the HTML page of 100,000 traces written in under 2x the JSON report's time, and
a page that opens in a browser in a few seconds. Rows come from ``evaluate_suite`` on refund
traces (20% fail: the wrong amount); the trajectories of the rows a report embeds (the first
500 failing, 20 passing) are built first, as ``tooltrail eval`` does before writing (not
timed). Then, each timed alone to a file: ``write_json`` (every row, plus the trajectories) and
``write_html`` (the summary over every row, 2,000 failing rows listed, the 520 timelines).
With ``--browser`` (Chromium installed) the page is also opened headless and the time to its
DOM measured. Run: ``python benchmarks/bench_report.py [--traces N] [--repeat R] [--browser]``.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable

from bench_checks import CASE, REPLY  # the refund policy the check benchmark evaluates

from tooltrail import (
    EvalSpan,
    EvalTrace,
    EvaluationSample,
    TestSuite,
    evaluate_suite,
)
from tooltrail.live.redact import Redaction
from tooltrail.report.html import write_html
from tooltrail.report.json import write_json
from tooltrail.report.trajectory import (
    Trajectory,
    build_trajectory,
    embedded_rows,
    failure_marks,
)


def make_trace(rng: random.Random, index: int) -> EvalTrace:
    """Lookup, verify, refund: 20% refund the wrong amount; 1 ms per call."""
    amount = 49.99 if rng.random() < 0.8 else 499.9
    calls = [
        ("lookup_order", {"order_id": "ORD-7731"}),
        ("verify_identity", {"customer_id": "C-118"}),
        ("issue_refund", {"order_id": "ORD-7731", "amount": amount}),
    ]
    start = 1_700_000_000_000_000_000 + index * 10_000_000
    spans = [
        EvalSpan(
            tool_name=name,
            attributes={"tool_args": args},
            name=f"execute_tool {name}",
            span_id=f"{index:08x}{n:08x}",
            parent_span_id=f"{index:08x}ffffffff",
            start_ns=start + n * 1_000_000,
            end_ns=start + n * 1_000_000 + 800_000,
        )
        for n, (name, args) in enumerate(calls)
    ]
    return EvalTrace(trace_id=f"{index:032x}", spans=spans, output=REPLY)


def timed(write: Callable[[], None], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        began = time.perf_counter()
        write()
        best = min(best, time.perf_counter() - began)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of R runs each")
    parser.add_argument("--browser", action="store_true", help="also open the page headless")
    args = parser.parse_args()

    rng = random.Random(17)
    traces = [make_trace(rng, i) for i in range(args.traces)]
    suite = TestSuite(name="refund-agent", version="1.0", cases=[CASE])
    samples = [EvaluationSample("refund", REPLY, t, label=f"run {i}") for i, t in enumerate(traces)]
    report = evaluate_suite(suite, samples)
    rules = Redaction()
    trajectories: dict[int, Trajectory] = {}
    for index in embedded_rows(report.cases):
        trace, row = traces[index], report.cases[index]
        trajectory = build_trajectory(trace, [], rules)
        trajectory.marks = failure_marks(trace, row)
        trajectories[index] = trajectory
    failing = sum(1 for row in report.cases if not row.passed)

    with tempfile.TemporaryDirectory() as tmp:
        json_path = os.path.join(tmp, "report.json")
        html_path = os.path.join(tmp, "report.html")

        def to_json() -> None:
            with open(json_path, "w", encoding="utf-8") as out:
                write_json(report, out, trajectories=trajectories)

        def to_html() -> None:
            with open(html_path, "w", encoding="utf-8") as out:
                write_html(report, out, trajectories=trajectories)

        json_s = timed(to_json, args.repeat)
        html_s = timed(to_html, args.repeat)
        json_mb = os.path.getsize(json_path) / 1e6
        html_mb = os.path.getsize(html_path) / 1e6
        print(f"{args.traces:,} traces, {failing:,} failing, {len(trajectories)} trajectories")
        print(f"JSON report: {json_s:7.3f} s  {json_mb:8.2f} MB")
        print(f"HTML report: {html_s:7.3f} s  {html_mb:8.2f} MB")
        print(f"HTML / JSON time: {html_s / json_s:.2f}x (goal: under 2x)")
        browser = shutil.which("chromium") or shutil.which("chromium-browser")
        if args.browser and browser:
            profile = os.path.join(tmp, "profile")
            began = time.perf_counter()
            subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 f"--user-data-dir={profile}", "--dump-dom", f"file://{html_path}"],
                capture_output=True, check=True, timeout=300,
            )  # fmt: skip
            loaded = time.perf_counter() - began
            print(f"Chromium headless, page loaded and DOM dumped: {loaded:.2f} s")
        elif args.browser:
            print("no chromium found: browser timing skipped")


if __name__ == "__main__":
    main()
