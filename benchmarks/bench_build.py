"""Benchmark: the trace builder alone (``convert.build.build_eval_trace``), facts collected once.

Reads a dump into ``TraceFacts`` (as ``read_traces`` does, in one pass), then builds every
trace's ``EvalTrace`` ``--repeat`` times and prints the median CPU time per span. For a count
that does not depend on the machine's load, run it twice under callgrind, with ``--stop
collected`` and ``--stop built``, and divide the difference by the spans::

    valgrind --tool=callgrind python benchmarks/bench_build.py DUMP --stop collected
    valgrind --tool=callgrind python benchmarks/bench_build.py DUMP --stop built

Usage: ``python benchmarks/bench_build.py DUMP [--usage-content] [--facts] [--builder B]
[--repeat R] [--stop S]``; make a dump with ``bench_eval.write_dumps`` (``bench_core.py --dir
DIR`` leaves one there). ``--facts`` collects as ``tooltrail eval`` does when the compiled core
is installed (``convert.engine.READ_PARTS``: the core builds each span's facts); without it the
spans are read with ``dialects.INTEREST`` and their facts built by ``TraceFacts.add``.
``--builder python`` builds with the Python builder (``convert.build.build_in_python``),
``core`` with the compiled core's port (``core/src/build.rs``; a trace it declines is built by
the Python builder, as ``tooltrail eval`` does), ``auto`` (the default) as
``build_eval_trace`` picks: the core's when the core is in use.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from collections.abc import Callable

from tooltrail.convert import engine as core
from tooltrail.convert.build import build_eval_trace, build_in_python
from tooltrail.convert.collect import TraceCollector
from tooltrail.convert.decoded import is_log_record
from tooltrail.convert.engine import SPANS, Needs, decoding_for
from tooltrail.convert.facts import TraceFacts
from tooltrail.model import EvalTrace
from tooltrail.otlp.read.mixed import read_spans_and_logs


def collect(path: str, usage_content: bool, facts: bool = False) -> list[TraceFacts]:
    """The facts of every trace of ``path`` (``facts``: read in the core's facts mode)."""
    collector = TraceCollector(usage=usage_content, content=usage_content)
    decoding = decoding_for(Needs(content=usage_content)) if facts else SPANS
    decoders = core.engine().decoders(decoding)
    for item in read_spans_and_logs([path], interest=decoding.interest, decoders=decoders):
        if is_log_record(item):
            collector.add_log(item)
        else:
            collector.add(item)
    return collector.take_all()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump")
    parser.add_argument("--usage-content", action="store_true", help="read usage and content")
    parser.add_argument("--facts", action="store_true", help="collect in the core's facts mode")
    parser.add_argument("--builder", choices=("auto", "python", "core"), default="auto")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--stop", choices=("collected", "built"), help="stop after collecting, or one build"
    )
    options = parser.parse_args()
    gc.disable()  # as read_traces pauses it while a trace is made
    build = _builder(options.builder)
    traces = collect(options.dump, options.usage_content, options.facts)
    if options.stop == "collected":
        return
    if options.stop == "built":
        for trace in traces:
            build([trace])
        return
    spans = sum(trace.span_count for trace in traces)
    seconds = []
    for _ in range(options.repeat):
        start = time.process_time()
        for trace in traces:
            build([trace])
        seconds.append(time.process_time() - start)
    median = statistics.median(seconds)
    print(
        f"{options.builder} builder: {median * 1e6 / spans:.3f} us CPU per span, median of "
        f"{options.repeat} ({len(traces)} traces, {spans} spans); core builds (built, "
        f"declined: shape, value, empty): {core.build_counts()}"
    )


def _builder(which: str) -> Callable[[list[TraceFacts]], EvalTrace]:
    """How each trace is built: ``--builder``'s choice."""
    if which == "python":
        return build_in_python
    if which == "auto":
        return build_eval_trace
    builder = core.engine().builder()
    if builder is None:
        raise SystemExit("--builder core: the compiled core (with its builder) is not in use")

    def in_core(traces: list[TraceFacts]) -> EvalTrace:
        built: EvalTrace | None = builder.build(traces)
        return built if built is not None else build_in_python(traces)

    return in_core


if __name__ == "__main__":
    main()
