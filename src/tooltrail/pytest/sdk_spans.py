"""Captured SDK spans -> the trajectory, through the same adapter and converter as the live path."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan

from tooltrail.convert import to_eval_trace
from tooltrail.model import EvalTrace
from tooltrail.pipeline.adapt import otlp_spans


def trace_of_spans(spans: Sequence[ReadableSpan]) -> EvalTrace:
    """One ``EvalTrace`` of the spans (one trace, or several read as one conversation).

    The converter counts a trace with no agent span as one turn. In a test, tools are often
    called directly, each call a trace of its own: when every call is a root span, they are
    all turn 1 of one trajectory rather than one turn each.
    """
    if not spans:
        return EvalTrace(trace_id="", metadata={"turn_count": 0})
    # A test's few spans: read what budgets and content checks need, whatever the suite.
    trace = to_eval_trace(otlp_spans(spans), usage=True, content=True)
    calls = trace.tool_calls
    if len(calls) > 1 and all(not call.parent_span_id for call in calls):
        for call in calls:
            call.turn = 1
        trace.metadata["turn_count"] = 1
    return trace
