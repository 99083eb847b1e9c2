"""What happens to a received trace once the buffer hands it on: dump, forward, score, release.

Each stage is a trace sink of the live path (``export_trace(trace)``, ``force_flush``,
``shutdown``), called by the ``TraceBuffer`` in order on its worker thread. The spans in a
``CompletedTrace`` here are ``ReceivedSpan`` wrappers; each stage unwraps them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from tooltrail.convert import to_eval_trace
from tooltrail.evaluate import CaseResult, evaluate_trace
from tooltrail.live.buffer import LATE, CompletedTrace
from tooltrail.live.inline import InlineEvaluator
from tooltrail.model import EvalTrace
from tooltrail.otlp import OtlpFileWriter, Span
from tooltrail.serve.counters import ReceiverCounters


def spans_of(trace: CompletedTrace) -> list[Span]:
    """The decoded spans inside the buffer's ``ReceivedSpan`` wrappers."""
    return [received.span for received in trace.spans]


class ReceivedTraceEvaluator(InlineEvaluator):
    """The live inline evaluator, fed decoded OTLP spans instead of SDK spans.

    Pieces that arrive after their trace was already evaluated (``late``) are not scored again:
    a verdict on a handful of stragglers would only be noise. They are still dumped and
    forwarded, and counted.
    """

    def __init__(self, suite: Any, counters: ReceiverCounters, **kwargs: Any) -> None:
        super().__init__(suite, **kwargs)
        self._counters = counters
        self.add_callback(self._count)

    def evaluate(self, trace: CompletedTrace) -> tuple[EvalTrace, list[CaseResult]] | None:
        if trace.reason == LATE:
            self._counters.add(late_pieces=1)
            return None
        try:
            eval_trace = to_eval_trace(spans_of(trace))
            eval_trace.partial = eval_trace.partial or trace.partial
            cases = self.suite.cases_for(eval_trace)
            results = [evaluate_trace(case, eval_trace, registry=self.registry) for case in cases]
        except Exception:
            self._counters.add(evaluation_errors=1, traces_evaluated=1)
            raise
        self._counters.add(
            traces_evaluated=1,
            traces_partial=1 if trace.partial else 0,
            traces_unmatched=0 if cases else 1,
        )
        return (eval_trace, results) if cases else None

    def _count(self, trace: EvalTrace, results: list[CaseResult]) -> None:
        passed = sum(1 for r in results if r.passed)
        self._counters.add(cases_passed=passed, cases_failed=len(results) - passed)


class DumpSink:
    """Writes each received trace as one OTLP request to a file in the collector's format."""

    def __init__(self, path: str | os.PathLike[str], *, format: str = "json") -> None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.writer = OtlpFileWriter(path, format=format)  # type: ignore[arg-type]

    def export_trace(self, trace: CompletedTrace) -> None:
        self.writer.write_spans(spans_of(trace))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.writer.flush()
        return True

    def shutdown(self) -> None:
        self.writer.close()


class ReleaseSink:
    """The last stage: tells the intake these spans are done, so it may take more."""

    def __init__(self, release: Callable[[int, int], None]) -> None:
        self._release = release

    def export_trace(self, trace: CompletedTrace) -> None:
        self._release(trace.trace_id, len(trace.spans))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None
