"""serve's receive-and-judge path in one process, for an instruction count (callgrind).

    valgrind --tool=callgrind python benchmarks/serve_path.py 20
    valgrind --tool=callgrind python benchmarks/serve_path.py 40   # [off]: --revision-window 0

Decodes and groups each of ``bench_serve.py``'s requests (``TraceIntake``, 510 spans each),
then judges each trace (``serve.sinks.received_evaluator``'s ``export_trace``, revisions kept
as serve keeps them), with serve's defaults. The difference between the counts of 40 and 20
requests, over the 10,200 spans between them, is the path's instructions per span, start-up
left out; the machine's load does not change it (docs/serve.md, Revisions). Run it with
``PYTHONPATH`` naming another tree to compare. The garbage collector is set as a ``tooltrail
serve`` process sets it (``serve.collector``), in a tree that has that module.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench_serve import SUITE, build_requests

from tooltrail.convert.engine import Needs
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import Received, TraceIntake
from tooltrail.serve.sinks import ResultsFile, received_evaluator
from tooltrail.suite import TestSuite

try:
    from tooltrail.serve.collector import set_for_serving
except ImportError:  # a tree from before it: the collector's defaults

    def set_for_serving() -> None:
        return None


class Collect:
    """Stands for the trace buffer: the intake's items, in order."""

    def __init__(self) -> None:
        self.items: list[Received] = []

    def add(self, item: Received) -> None:
        self.items.append(item)


def main() -> int:
    n = int(sys.argv[1])
    off = {"revision_window_s": 0} if sys.argv[2:] == ["off"] else {}
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "suite.yaml").write_text(SUITE, encoding="utf-8")
        suite = TestSuite.load(Path(tmp, "suite.yaml"))
        bodies, _ = build_requests(n, seed=1)
        evaluator = received_evaluator(
            suite, ReceiverCounters(), results=ResultsFile(Path(tmp, "results.jsonl")), **off
        )
        set_for_serving()
        for body in bodies:
            buffer = Collect()
            unbounded = 1 << 30
            intake = TraceIntake(
                buffer,
                ReceiverCounters(),
                max_buffered_spans=unbounded,
                max_traces=unbounded,
                retry_after=1,
                # as ``serve.stages`` decodes: for what the suite reads (the facts mode here)
                needs=Needs(usage=evaluator.usage, content=evaluator.content),
            )
            intake("protobuf", body)
            traces: dict[int, list[Received]] = {}
            for item in buffer.items:
                traces.setdefault(item.trace_id, []).append(item)
            for trace_id, items in traces.items():
                evaluator.export_trace(CompletedTrace(trace_id, items))
        evaluator.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
