"""Issue 38's targets as instruction counts a span, each against its natural limit counted the
same way: the figures the machine's load does not move (``bench_targets.py`` times them).

    python benchmarks/bench_instructions.py [--spans 10000] [--only eval,live,serve]

Every figure is ``valgrind --tool=callgrind``'s count of one fresh process at two sizes, the
difference divided by the spans between them, so start-up and imports cancel out:

- ``tooltrail eval --workers 1`` on length-prefixed protobuf (JSON and text report) against
  ``ExportTraceServiceRequest.FromString`` of the same records (goal >= 0.35 of its rate, so
  at most 1 / 0.35 = 2.9 times its instructions), and on JSON lines (JSON report) against
  ``orjson.loads`` of every line (goal: at most its instructions);
- ``serve``'s receive-and-judge path (``serve_path.py``, 20 and 40 requests of 510 spans);
- live (``bench_live.py --only ... --steady``, 100 and 500 traces of 10 spans): all threads'
  instructions with tooltrail against the SDK alone, tool and non-tool spans (goal <= +10%).

Needs valgrind (``apt install valgrind``). Takes a few minutes: callgrind runs code about fifty
times slower.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench_eval import SUITE, write_dumps

HERE = Path(__file__).resolve().parent
TOOLTRAIL = Path(sys.executable).parent / "tooltrail"
#: ``bench_serve.py``'s requests: spans in each.
SERVE_REQUEST_SPANS = 510
#: ``bench_live.py``'s traces: spans in each.
LIVE_TRACE_SPANS = 10


def instructions(command: list[str], scratch: Path) -> int:
    """What callgrind counts for ``command`` (every thread of its process, children not
    followed)."""
    out = scratch / "callgrind.out"
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command],
        capture_output=True,
        text=True,
    )
    if done.returncode not in (0, 1):  # eval: 1 when some traces fail the suite, as they do
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            return int(line.split()[1])
    raise SystemExit(f"no total in callgrind's output of {' '.join(command)}")


def per_span(
    command: Callable[[int], list[str]],
    sizes: tuple[int, int],
    spans: tuple[int, int],
    scratch: Path,
) -> float:
    """Instructions a span: ``command(size)`` at both sizes, which hold ``spans`` spans."""
    small, large = (instructions(command(size), scratch) for size in sizes)
    return (large - small) / (spans[1] - spans[0])


def count_spans(records: list[bytes]) -> int:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    return sum(
        len(scope.spans)
        for record in records
        for resource in ExportTraceServiceRequest.FromString(record).resource_spans
        for scope in resource.scope_spans
    )


def parse_only(kind: str, path: str) -> None:
    """The limit, run as its own process: every record of a dump parsed and dropped."""
    if kind == "protobuf":
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        parse = ExportTraceServiceRequest.FromString
        data = Path(path).read_bytes()
        at = 0
        while at < len(data):  # the collector's file framing: a 4-byte big-endian length
            size = int.from_bytes(data[at : at + 4], "big")
            parse(data[at + 4 : at + 4 + size])
            at += 4 + size
    else:
        import orjson

        with open(path, "rb") as lines:
            for line in lines:
                orjson.loads(line)


def eval_figures(spans: int, scratch: Path) -> list[str]:
    suite = scratch / "suite.yaml"
    suite.write_text(SUITE)
    sizes = (spans, 2 * spans)
    dumps = {size: write_dumps(scratch, size, f"d{size}") for size in sizes}
    counts = tuple(count_spans(dumps[size][2]) for size in sizes)
    me = str(Path(__file__).resolve())

    def evaluate(kind: int, fmt: str) -> Callable[[int], list[str]]:
        return lambda size: [
            str(TOOLTRAIL),
            "eval",
            str(suite),
            str(dumps[size][kind]),
            "--workers",
            "1",
            "--format",
            fmt,
            "--out",
            "/dev/null",
        ]

    def parsed(kind: int, name: str) -> Callable[[int], list[str]]:
        return lambda size: [sys.executable, me, "--parse", name, str(dumps[size][kind])]

    raw_pb = per_span(parsed(0, "protobuf"), sizes, counts, scratch)
    raw_json = per_span(parsed(1, "json"), sizes, counts, scratch)
    lines = [f"limits: FromString {raw_pb:,.0f}, orjson.loads {raw_json:,.0f} instructions a span"]
    for label, kind, fmt, limit in (
        ("eval, protobuf, JSON report", 0, "json", raw_pb),
        ("eval, protobuf, text report", 0, "text", raw_pb),
        ("eval, JSON lines, JSON report", 1, "json", raw_json),
    ):
        count = per_span(evaluate(kind, fmt), sizes, counts, scratch)
        lines.append(
            f"{label}: {count:,.0f} instructions a span = {limit / count:.3f} of the limit's rate"
        )
    return lines


def serve_figures(scratch: Path) -> list[str]:
    def serve(requests: int) -> list[str]:
        return [sys.executable, str(HERE / "serve_path.py"), str(requests)]

    sizes = (20, 40)
    counts = (20 * SERVE_REQUEST_SPANS, 40 * SERVE_REQUEST_SPANS)
    count = per_span(serve, sizes, counts, scratch)
    return [f"serve's path: {count:,.0f} instructions a span"]


def live_figures(scratch: Path) -> list[str]:
    lines = []
    sizes = (100, 500)
    counts = (100 * LIVE_TRACE_SPANS, 500 * LIVE_TRACE_SPANS)
    for workload in ("non-tool", "tool"):
        figures = {}
        for pipeline in ("sdk", "tooltrail"):

            def live(traces: int, pipeline: str = pipeline, workload: str = workload) -> list[str]:
                return [
                    sys.executable,
                    str(HERE / "bench_live.py"),
                    "--only",
                    pipeline,
                    "--workload",
                    workload,
                    "--traces",
                    str(traces),
                    "--steady",
                ]

            figures[pipeline] = per_span(live, sizes, counts, scratch)
        added = figures["tooltrail"] / figures["sdk"] - 1
        lines.append(
            f"live, {workload} spans: SDK alone {figures['sdk']:,.0f}, with tooltrail "
            f"{figures['tooltrail']:,.0f} instructions a span, all threads: {added:+.1%}"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=10_000, help="the smaller dump's spans")
    parser.add_argument("--only", default="eval,live,serve", help="comma-separated parts")
    parser.add_argument("--parse", nargs=2, metavar=("KIND", "PATH"), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.parse:
        parse_only(*options.parse)
        return 0
    parts = {part.strip() for part in options.only.split(",")}
    with tempfile.TemporaryDirectory(prefix="tooltrail-bench-instructions-") as tmp:
        scratch = Path(tmp)
        if "eval" in parts:
            print("\n".join(eval_figures(options.spans, scratch)), flush=True)
        if "serve" in parts:
            print("\n".join(serve_figures(scratch)), flush=True)
        if "live" in parts:
            print("\n".join(live_figures(scratch)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
