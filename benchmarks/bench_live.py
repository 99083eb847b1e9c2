"""Per-span cost of tooltrail's live pipeline, measured against the SDK alone in the same run.

Baseline: ``BatchSpanProcessor(no-op exporter)``. With tooltrail: the same processor behind
``ToolArgsProcessor`` together with a ``TraceBuffer`` (no-op sink), as ``install`` sets it up.
Each workload is a trace of one agent span and nine children, either plain spans with a few
attributes or GenAI ``execute_tool`` spans carrying their arguments. Runs alternate between the
two pipelines (paired runs); the median of the paired ratios is reported. Goal: at most 10%
added per span.

Three clocks: ``app`` is the CPU time of the application's thread during the start+end loop
(``time.thread_time``: the worker threads' share, tooltrail's and the SDK's, is excluded);
``loop`` is the wall time of that loop (it includes waiting for the GIL while a worker runs);
``cpu`` is the process CPU time of the loop plus ``shutdown`` (every thread: all the work).
``--defer off`` makes ``ToolArgsProcessor`` finish tool spans on the application's thread.

    python benchmarks/bench_live.py [--traces 500] [--rounds 15] [--defer on|off]

On a shared machine timings drift; instruction counts do not. ``--only`` runs one pipeline and
workload once, for a counter such as valgrind (run it twice with different ``--traces`` and
divide the difference by the extra spans, so start-up cancels out). With
``--separate-threads=yes`` the main thread's file (``-01``) is the application thread's share;
``--only`` lets the workers catch up before ``shutdown``, so deferred work is not counted there:

    valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=/tmp/cg.%p \\
        python benchmarks/bench_live.py --only tooltrail --workload tool --traces 500
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from tooltrail.live import CompletedTrace, ToolArgsProcessor, TraceBuffer

CHILDREN = 9
QUEUE = 1 << 20


class NoOpExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class NoOpSink:
    def export_trace(self, trace: CompletedTrace) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        pass


def batch() -> BatchSpanProcessor:
    return BatchSpanProcessor(NoOpExporter(), max_queue_size=QUEUE, max_export_batch_size=512)


def baseline() -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(batch())
    return provider


def with_tooltrail(defer: bool = True) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(ToolArgsProcessor(batch(), TraceBuffer(NoOpSink()), defer=defer))
    return provider


def plain_traces(provider: TracerProvider, traces: int) -> int:
    tracer = provider.get_tracer("bench")
    for _ in range(traces):
        with tracer.start_as_current_span(
            "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            for j in range(CHILDREN):
                with tracer.start_as_current_span(
                    "GET /orders",
                    attributes={"http.method": "GET", "http.route": "/orders", "n": j},
                ):
                    pass
    return traces * (CHILDREN + 1)


ARGS = [json.dumps({"order_id": f"ORD-{i}", "amount": 49.99, "note": "refund"}) for i in range(64)]


def tool_traces(provider: TracerProvider, traces: int) -> int:
    tracer = provider.get_tracer("bench")
    for i in range(traces):
        with tracer.start_as_current_span(
            "invoke_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            for j in range(CHILDREN):
                with tracer.start_as_current_span(
                    "execute_tool issue_refund",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "issue_refund",
                        "gen_ai.tool.call.id": f"call_{j}",
                        "gen_ai.tool.call.arguments": ARGS[(i + j) % 64],
                    },
                ):
                    pass
    return traces * (CHILDREN + 1)


CLOCKS = ("app", "loop", "cpu")


def wait_for_workers(provider: TracerProvider) -> None:
    """Sleep until tooltrail's worker has taken every deferred tool span, as it would while an
    application waits on I/O; then ``shutdown`` leaves no deferred work to this thread."""
    for processor in provider._active_span_processor._span_processors:  # noqa: SLF001
        deferred = getattr(processor, "deferred", None)
        while deferred is not None and len(deferred):
            time.sleep(0.01)


def per_span_us(
    make: Callable[[], TracerProvider], work: Callable[[TracerProvider, int], int], traces: int
) -> tuple[float, float, float]:
    """Per span, in us: the application thread's CPU time and wall time in the loop, and the
    process CPU time (every thread) of the loop plus ``shutdown``, so held spans are paid for.
    """
    provider = make()
    work(provider, 50)  # warm up
    provider.force_flush()
    cpu, wall, app = time.process_time(), time.perf_counter(), time.thread_time()
    spans = work(provider, traces)
    app, wall = time.thread_time() - app, time.perf_counter() - wall
    provider.shutdown()
    cpu = time.process_time() - cpu
    return app / spans * 1e6, wall / spans * 1e6, cpu / spans * 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="tooltrail live overhead per span")
    parser.add_argument("--traces", type=int, default=500, help="traces per run (10 spans each)")
    parser.add_argument("--rounds", type=int, default=15, help="paired runs per workload")
    parser.add_argument("--only", choices=("sdk", "tooltrail"), help="run one pipeline once")
    parser.add_argument("--workload", choices=("non-tool", "tool"), default="non-tool")
    parser.add_argument("--defer", choices=("on", "off"), default="on", help="tool span ends")
    parser.add_argument(
        "--steady",
        action="store_true",
        help="with --only: threads switch only where the loop waits (for a counter)",
    )
    args = parser.parse_args(argv)
    ours_make = partial(with_tooltrail, args.defer == "on")
    if args.only:
        if args.steady:
            # The interpreter hands its lock to another thread only when this one waits (the
            # workers then run in ``wait_for_workers``): counts do not depend on interleaving.
            sys.setswitchinterval(1000)
        make = baseline if args.only == "sdk" else ours_make
        work = plain_traces if args.workload == "non-tool" else tool_traces
        provider = make()
        work(provider, args.traces)
        wait_for_workers(provider)
        provider.shutdown()
        return 0
    print(
        f"{args.traces} traces x {CHILDREN + 1} spans per run, {args.rounds} paired runs per "
        f"workload, defer {args.defer}; medians (app: CPU of the application's thread in the "
        "loop, loop: its wall time, cpu: every thread, loop + shutdown)"
    )
    print(f"{'workload':<16}{'clock':<6}{'SDK alone':>12}{'+ tooltrail':>14}{'added':>10}")
    for label, work in (("non-tool spans", plain_traces), ("tool spans", tool_traces)):
        pairs: list[tuple[tuple[float, ...], tuple[float, ...]]] = []
        for i in range(args.rounds):
            if i % 2:  # alternate which goes first, so drift in machine load cancels out
                ours = per_span_us(ours_make, work, args.traces)
                base = per_span_us(baseline, work, args.traces)
            else:
                base = per_span_us(baseline, work, args.traces)
                ours = per_span_us(ours_make, work, args.traces)
            pairs.append((base, ours))
        for k, clock in enumerate(CLOCKS):
            b = statistics.median(p[0][k] for p in pairs)
            o = statistics.median(p[1][k] for p in pairs)
            added = statistics.median(p[1][k] / p[0][k] - 1 for p in pairs) * 100
            print(f"{label:<16}{clock:<6}{b:>10.2f}us{o:>12.2f}us{added:>9.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
