"""Issue 14 item 3, and the verdict of a cut trace: hooks that raise or block do not stop the
other traces; a stuck sink is reported once and left behind at shutdown; a piece of a trace is
judged ``partial``, once."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from test_live_buffer import Collect, one_trace, wait_for

from tooltrail.live import CompletedTrace, InlineEvaluator, TraceBuffer, tool
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {
        "name": "hooks",
        "cases": [
            {"id": "lookup", "match": {"agent_name": "hook_agent"}, "required_tools": ["lookup"]}
        ],
    }
)
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "hook_agent"}


def provider_with(buffer: TraceBuffer) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(buffer)
    return provider


def agent_trace(tracer: trace.Tracer) -> None:
    with tracer.start_as_current_span("invoke_agent hook_agent", attributes=AGENT):
        with tool("lookup", {"id": 1}, tracer=tracer):
            pass


def stuck_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "has not returned" in r.getMessage()]


def test_an_on_result_callback_that_raises_does_not_stop_the_others(tmp_path: Path) -> None:
    seen: list[str] = []

    def broken(eval_trace, results) -> None:
        raise RuntimeError("bug in the user's hook")

    evaluator = InlineEvaluator(
        SUITE,
        on_result=[broken, lambda t, r: seen.append(t.trace_id)],
        results_path=tmp_path / "results.jsonl",
    )
    buffer = TraceBuffer(evaluator, grace_s=0)
    tracer = provider_with(buffer).get_tracer("t")
    for _ in range(5):
        agent_trace(tracer)
    buffer.shutdown()
    assert len(seen) == 5 and evaluator.errors == 5
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 5


def test_a_blocking_on_result_is_reported_once_and_the_other_sinks_go_on(
    caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.WARNING, logger="tooltrail.pipeline.buffer")
    release = threading.Event()
    calls: list[int] = []

    def blocking(eval_trace, results) -> None:
        calls.append(1)
        release.wait()

    evaluator = InlineEvaluator(SUITE, on_result=blocking)
    good = Collect()
    buffer = TraceBuffer(evaluator, good, grace_s=0, sink_timeout_s=0.2, shutdown_timeout_s=1.0)
    tracer = provider_with(buffer).get_tracer("t")
    try:
        agent_trace(tracer)
        wait_for(lambda: calls == [1])
        for _ in range(5):
            agent_trace(tracer)
        wait_for(lambda: len(good.traces) == 6)
        stats = buffer.stats()
        assert stats.sinks_stuck == 1 and stats.sink_skipped == 5
        assert len(stuck_warnings(caplog)) == 1
        started = time.monotonic()
        buffer.shutdown()
        # Its 1 s limit, not the 10 s default nor for ever (generous for a loaded machine).
        assert time.monotonic() - started < 8
        assert good.shut
    finally:
        release.set()


def test_a_stuck_sink_gets_traces_again_once_it_returns() -> None:
    release = threading.Event()

    class Slow(Collect):
        def export_trace(self, trace: CompletedTrace) -> None:
            if not self.traces:
                release.wait()
            super().export_trace(trace)

    slow, good = Slow(), Collect()
    buffer = TraceBuffer(slow, good, grace_s=0, sink_timeout_s=0.2)
    tracer = provider_with(buffer).get_tracer("t")
    one_trace(tracer)
    one_trace(tracer)
    wait_for(lambda: len(good.traces) == 2)
    release.set()
    wait_for(lambda: len(slow.traces) == 1)
    one_trace(tracer)
    wait_for(lambda: len(slow.traces) == 2 and len(good.traces) == 3)
    assert buffer.stats().sink_skipped == 1
    buffer.shutdown()


def test_a_sink_blocking_in_shutdown_does_not_hold_shutdown() -> None:
    release = threading.Event()

    class Hangs(Collect):
        def shutdown(self) -> None:
            release.wait()

    buffer = TraceBuffer(Hangs(), grace_s=0, shutdown_timeout_s=0.5)
    one_trace(provider_with(buffer).get_tracer("t"))
    started = time.monotonic()
    try:
        buffer.shutdown()
        # Its 0.5 s limit, not the 10 s default nor for ever (generous for a loaded machine).
        assert time.monotonic() - started < 8
        assert buffer.stats().sinks_stuck == 1
    finally:
        release.set()


def test_a_trace_cut_by_max_age_is_judged_partial_then_revised(tmp_path: Path) -> None:
    """Its verdict says partial (``passed`` null); the late piece that follows when its root
    ends is merged with it and judged again: revision 1, complete."""
    results = tmp_path / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=results)
    buffer = TraceBuffer(evaluator, grace_s=0, max_age_s=0.1)
    tracer = provider_with(buffer).get_tracer("t")
    root = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    with trace.use_span(root, end_on_exit=False):
        with tracer.start_as_current_span("invoke_agent hook_agent", attributes=AGENT):
            pass  # an agent span inside, so the piece matches the suite
    wait_for(lambda: buffer.stats().traces_partial == 1)
    root.end()
    wait_for(lambda: evaluator.late_pieces == 1)
    buffer.shutdown()
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [(x["revision"], x["verdict"], x["passed"], x["reason"]) for x in lines] == [
        (0, "partial", None, "max_age"),
        (1, "fail", False, "late"),  # no lookup call: the whole trace fails
    ]
    assert evaluator.traces_revised == evaluator.verdicts_changed == 1


def test_a_trace_given_up_twice_is_named_once(tmp_path: Path) -> None:
    """A trace given up while still running (``max_buffered_spans``), whose later spans are
    given up again: one notice, one ``dropped`` line, every span counted."""
    results = tmp_path / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=results)
    buffer = TraceBuffer(evaluator, grace_s=0, max_buffered_spans=4)
    tracer = provider_with(buffer).get_tracer("t")
    running = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    inside = trace.set_span_in_context(running)
    for _ in range(3):
        tracer.start_span("step", context=inside).end()
    buffer.stats()  # sorts the queued spans into traces: 3 held
    other = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    for _ in range(2):
        tracer.start_span("step", context=trace.set_span_in_context(other)).end()
    assert buffer.stats().traces_dropped == 1  # 5 held > 4: the running trace goes
    other.end()
    wait_for(lambda: buffer.stats().traces_complete == 1)
    for _ in range(5):
        tracer.start_span("step", context=inside).end()
    stats = buffer.stats()  # 5 more of the running trace > 4: given up again, as a piece
    assert (stats.traces_dropped, stats.spans_dropped) == (1, 8)
    running.end()
    buffer.shutdown()
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    running_id = f"{running.get_span_context().trace_id:032x}"
    assert [x["reason"] for x in lines if x["trace_id"] == running_id] == ["dropped"]


def test_a_trace_holding_no_ended_span_is_not_given_up_for_room(tmp_path: Path) -> None:
    """Past ``max_buffered_spans`` the oldest held trace may have started spans only: giving
    it up frees nothing, and it must not be let go silently (its spans would come later as
    the piece of a trace never judged). The trace holding the spans goes; the other is judged
    whole once it completes."""
    results = tmp_path / "results.jsonl"
    buffer = TraceBuffer(
        InlineEvaluator(SUITE, results_path=results), grace_s=0, max_buffered_spans=4
    )
    tracer = provider_with(buffer).get_tracer("t")
    started = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    buffer.stats()  # held: a trace with one started span and none ended
    crowd = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    for _ in range(5):
        tracer.start_span("step", context=trace.set_span_in_context(crowd)).end()
    stats = buffer.stats()
    assert (stats.traces_dropped, stats.spans_dropped) == (1, 5)
    tracer.start_span("step", context=trace.set_span_in_context(started)).end()
    started.end()
    crowd.end()
    buffer.shutdown()
    by_trace: dict[str, list[str]] = {}
    for line in results.read_text().splitlines():
        record = json.loads(line)
        by_trace.setdefault(record["trace_id"], []).append(record["reason"])
    assert by_trace[f"{started.get_span_context().trace_id:032x}"] == ["complete"]
    assert by_trace[f"{crowd.get_span_context().trace_id:032x}"] == ["dropped"]


def test_a_trace_let_go_before_any_span_ended_is_judged_on_its_first_piece(
    tmp_path: Path,
) -> None:
    """``max_traces`` lets the oldest held trace go while its spans have only started: nothing
    of it was handed on, so its spans, when they end, are its first piece (judged), not the
    late piece of a trace that has no verdict to revise."""
    results = tmp_path / "results.jsonl"
    buffer = TraceBuffer(InlineEvaluator(SUITE, results_path=results), grace_s=0, max_traces=1)
    tracer = provider_with(buffer).get_tracer("t")
    first = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    buffer.stats()
    second = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    buffer.stats()  # one trace held at most: the first, holding no ended span, is let go
    second.end()
    tracer.start_span("step", context=trace.set_span_in_context(first)).end()
    first.end()
    buffer.shutdown()
    reasons = [
        json.loads(line)["reason"]
        for line in results.read_text().splitlines()
        if json.loads(line)["trace_id"] == f"{first.get_span_context().trace_id:032x}"
    ]
    assert reasons == ["complete"]


class _Gate:
    """A sink that holds the delivery thread on every trace until ``opened`` is set, so the
    traces behind it wait for the sinks (``_ready``) for as long as the test needs."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.opened = threading.Event()

    def export_trace(self, trace: CompletedTrace) -> None:
        self.entered.set()
        self.opened.wait(30)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None


def test_stragglers_of_a_given_up_trace_go_before_a_complete_waiting_trace(
    tmp_path: Path,
) -> None:
    """The race behind the flaky ``given_up_twice`` test, made certain: a complete trace
    waits for the sinks (delivery held by a gate) when more spans of a trace that was given up
    arrive past ``max_buffered_spans``. The stragglers go, never the complete trace, however
    far the delivery thread has got."""
    results = tmp_path / "results.jsonl"
    gate = _Gate()
    buffer = TraceBuffer(
        gate,
        InlineEvaluator(SUITE, results_path=results),
        grace_s=0,
        max_buffered_spans=5,
        sink_timeout_s=60,
    )
    tracer = provider_with(buffer).get_tracer("t")
    tracer.start_span("blocker").end()
    assert gate.entered.wait(10)  # the delivery thread is held at the gate with it
    running = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    inside = trace.set_span_in_context(running)
    for _ in range(3):
        tracer.start_span("step", context=inside).end()
    buffer.stats()
    other = tracer.start_span("invoke_agent hook_agent", attributes=AGENT)
    for _ in range(2):
        tracer.start_span("step", context=trace.set_span_in_context(other)).end()
    assert buffer.stats().traces_dropped == 1  # 1 + 3 + 2 held > 5: the running trace goes
    other.end()
    wait_for(lambda: buffer.stats().traces_complete == 2)  # other waits behind the gate
    for _ in range(5):
        tracer.start_span("step", context=inside).end()
    stats = buffer.stats()
    assert (stats.traces_complete, stats.traces_dropped, stats.spans_dropped) == (2, 1, 8)
    gate.opened.set()
    running.end()
    buffer.shutdown()
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    by_trace = {}
    for line in lines:
        by_trace.setdefault(line["trace_id"], []).append(line["reason"])
    assert by_trace[f"{other.get_span_context().trace_id:032x}"] == ["complete"]
    assert by_trace[f"{running.get_span_context().trace_id:032x}"] == ["dropped"]
