"""TraceBuffer with the real SDK: whole traces, exactly once, bounded, nothing lost."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from tooltrail.live import CompletedTrace, TraceBuffer
from tooltrail.pipeline.buffer import is_local_root


class Collect:
    """A sink keeping every trace it is given, and the thread it was given on."""

    def __init__(self) -> None:
        self.traces: list[CompletedTrace] = []
        self.threads: set[str] = set()
        self.flushed = 0
        self.shut = False

    def export_trace(self, trace: CompletedTrace) -> None:
        self.threads.add(threading.current_thread().name)
        self.traces.append(trace)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.flushed += 1
        return True

    def shutdown(self) -> None:
        self.shut = True

    def names(self) -> list[list[str]]:
        return [sorted(s.name for s in t.spans) for t in self.traces]


def pipeline(**options: Any) -> tuple[TracerProvider, TraceBuffer, Collect]:
    sink = Collect()
    buffer = TraceBuffer(sink, **options)
    provider = TracerProvider()
    provider.add_span_processor(buffer)
    return provider, buffer, sink


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def one_trace(tracer: trace.Tracer, children: int = 2, root: str = "agent") -> None:
    with tracer.start_as_current_span(root):
        for i in range(children):
            with tracer.start_as_current_span(f"child{i}"):
                pass


def test_a_trace_is_handed_on_whole_after_its_root_ends_and_the_grace_passes() -> None:
    # 2 s: the check below comes within it even if this thread is held up on a loaded machine
    provider, buffer, sink = pipeline(grace_s=2.0)
    one_trace(provider.get_tracer("t"))
    assert sink.traces == []  # still within the grace period
    wait_for(lambda: len(sink.traces) == 1)
    assert sink.names() == [["agent", "child0", "child1"]]
    assert sink.traces[0].partial is False and sink.traces[0].reason == "complete"
    buffer.shutdown()


def test_traces_are_handed_on_off_the_application_thread() -> None:
    provider, buffer, sink = pipeline(grace_s=0)
    one_trace(provider.get_tracer("t"))
    wait_for(lambda: len(sink.traces) == 1)
    assert sink.threads == {"tooltrail-trace-buffer"}
    buffer.shutdown()


def test_children_still_open_when_the_root_ends_are_waited_for() -> None:
    provider, buffer, sink = pipeline(grace_s=0.01)
    tracer = provider.get_tracer("t")
    root = tracer.start_span("agent")
    child = tracer.start_span("background", context=trace.set_span_in_context(root))
    root.end()
    # time is what is tested: the grace passes, and nothing is delivered while a child is open
    time.sleep(0.1)
    assert sink.traces == []
    child.end()
    wait_for(lambda: len(sink.traces) == 1)
    assert sink.names() == [["agent", "background"]]
    assert not sink.traces[0].partial
    buffer.shutdown()


def test_a_span_with_a_remote_parent_is_a_local_root() -> None:
    provider, buffer, sink = pipeline(grace_s=0)
    remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    context = trace.set_span_in_context(NonRecordingSpan(remote))
    with provider.get_tracer("t").start_as_current_span("server", context=context):
        pass
    wait_for(lambda: len(sink.traces) == 1)
    assert sink.traces[0].trace_id == 0xABC and not sink.traces[0].partial
    buffer.shutdown()


def test_eight_threads_of_a_thousand_traces_all_arrive_complete_exactly_once() -> None:
    provider, buffer, sink = pipeline(grace_s=0.005)
    tracer = provider.get_tracer("t")
    start = threading.Barrier(8)

    def work() -> None:
        start.wait()
        for _ in range(1000):
            one_trace(tracer, children=2)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wait_for(lambda: buffer.stats().traces_complete == 8000, timeout=120)
    buffer.shutdown()
    assert len(sink.traces) == 8000
    assert len({t.trace_id for t in sink.traces}) == 8000
    assert all(not t.partial and len(t.spans) == 3 for t in sink.traces)
    span_ids = [s.context.span_id for t in sink.traces for s in t.spans]
    assert len(span_ids) == len(set(span_ids)) == 24000
    stats = buffer.stats()
    assert (stats.spans_received, stats.spans_delivered, stats.traces_partial) == (24000, 24000, 0)


def test_asyncio_tasks_interleaving_traces_each_arrive_complete_once() -> None:
    provider, buffer, sink = pipeline(grace_s=0.005)
    tracer = provider.get_tracer("t")

    async def run(i: int) -> None:
        with tracer.start_as_current_span(f"agent{i}"):
            for step in range(3):
                await asyncio.sleep(0)
                with tracer.start_as_current_span(f"step{step}"):
                    await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(run(i) for i in range(300)))

    asyncio.run(main())
    wait_for(lambda: buffer.stats().traces_complete == 300)
    buffer.shutdown()
    assert len(sink.traces) == 300
    assert all(len(t.spans) == 4 and not t.partial for t in sink.traces)


def test_a_trace_whose_root_never_ends_goes_on_partial_after_max_age() -> None:
    # 2 s: the check below comes before it even if this thread is held up on a loaded machine
    provider, buffer, sink = pipeline(grace_s=0, max_age_s=2.0)
    tracer = provider.get_tracer("t")
    root = tracer.start_span("agent")  # never ended
    tracer.start_span("tool", context=trace.set_span_in_context(root)).end()
    # time is what is tested: nothing goes on before max_age (then the wait below is bounded)
    time.sleep(0.05)
    assert sink.traces == []
    wait_for(lambda: len(sink.traces) == 1)
    assert sink.traces[0].partial and sink.traces[0].reason == "max_age"
    assert sink.names() == [["tool"]]
    assert buffer.stats().partial_by_reason["max_age"] == 1
    buffer.shutdown()


def test_when_too_many_traces_are_held_the_oldest_goes_on_partial() -> None:
    provider, buffer, sink = pipeline(grace_s=10, max_traces=2)
    tracer = provider.get_tracer("t")
    roots = [tracer.start_span(f"agent{i}") for i in range(3)]
    for i, root in enumerate(roots):
        tracer.start_span(f"tool{i}", context=trace.set_span_in_context(root)).end()
    wait_for(lambda: len(sink.traces) == 1)
    assert sink.traces[0].reason == "max_traces" and sink.names() == [["tool0"]]
    assert buffer.stats().traces_held == 2
    buffer.shutdown()


def test_a_trace_over_the_span_limit_goes_on_in_pieces_and_loses_nothing() -> None:
    provider, buffer, sink = pipeline(grace_s=0, max_spans=5)
    one_trace(provider.get_tracer("t"), children=11)
    wait_for(lambda: sum(len(t.spans) for t in sink.traces) == 12)
    reasons = [t.reason for t in sink.traces]
    assert reasons == ["max_spans", "max_spans", "late"]
    assert all(t.partial for t in sink.traces)
    assert Counter(n for names in sink.names() for n in names) == Counter(
        ["agent"] + [f"child{i}" for i in range(11)]
    )
    buffer.shutdown()


def test_a_span_ending_after_its_trace_was_handed_on_comes_as_a_late_piece() -> None:
    provider, buffer, sink = pipeline(grace_s=0)
    tracer = provider.get_tracer("t")
    root = tracer.start_span("agent")
    straggler = tracer.start_span("straggler", context=trace.set_span_in_context(root))
    root.end()
    buffer.force_flush()  # root handed on; the straggler is still open
    straggler.end()
    wait_for(lambda: len(sink.traces) == 2)
    assert [t.reason for t in sink.traces] == ["flush", "late"]
    assert sink.traces[1].trace_id == sink.traces[0].trace_id
    buffer.shutdown()


def test_force_flush_hands_on_everything_held() -> None:
    provider, buffer, sink = pipeline(grace_s=10)
    tracer = provider.get_tracer("t")
    one_trace(tracer)  # complete, waiting out its grace period
    open_root = tracer.start_span("open")
    tracer.start_span("done", context=trace.set_span_in_context(open_root)).end()
    assert buffer.force_flush(5000) is True
    assert sorted((t.reason, len(t.spans)) for t in sink.traces) == [("complete", 3), ("flush", 1)]
    assert sink.flushed == 1
    assert buffer.stats().spans_held == 0
    buffer.shutdown()


def test_shutdown_in_the_middle_of_traces_loses_nothing() -> None:
    provider, buffer, sink = pipeline(grace_s=10)
    tracer = provider.get_tracer("t")
    ended = 0
    roots = []
    for i in range(20):
        root = tracer.start_span(f"agent{i}")
        for j in range(3):
            tracer.start_span(f"tool{j}", context=trace.set_span_in_context(root)).end()
            ended += 1
        if i % 2:
            root.end()
            ended += 1
        else:
            roots.append(root)
    provider.shutdown()
    assert sum(len(t.spans) for t in sink.traces) == ended
    assert sorted(Counter(t.reason for t in sink.traces).items()) == [
        ("complete", 10),
        ("shutdown", 10),
    ]
    assert sink.shut
    for root in roots:
        root.end()
    assert buffer.stats().spans_after_shutdown == 10


def test_a_failing_sink_does_not_keep_traces_from_the_others() -> None:
    class Broken(Collect):
        def export_trace(self, trace: CompletedTrace) -> None:
            raise OSError("disk full")

    good = Collect()
    buffer = TraceBuffer(Broken(), good, grace_s=0)
    provider = TracerProvider()
    provider.add_span_processor(buffer)
    one_trace(provider.get_tracer("t"))
    wait_for(lambda: len(good.traces) == 1)
    assert buffer.stats().sink_errors == 1
    buffer.shutdown()


def test_partial_traces_are_summarised_in_one_warning_per_interval(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="tooltrail.pipeline.buffer")
    # An interval well past max_age: the three traces, made at once, are all handed on before
    # the first summary even on a loaded machine (a summary at 0.3 s could come between them).
    provider, buffer, sink = pipeline(grace_s=0, max_age_s=0.05, log_interval_s=1.0)
    tracer = provider.get_tracer("t")
    roots = [tracer.start_span(f"agent{i}") for i in range(3)]
    for root in roots:
        tracer.start_span("tool", context=trace.set_span_in_context(root)).end()
    wait_for(lambda: len(sink.traces) == 3)
    wait_for(lambda: any("handed on partial" in r.getMessage() for r in caplog.records))
    # time is what is tested: no second message comes in the next 0.4 s (the warning is once)
    time.sleep(0.4)
    messages = [r.getMessage() for r in caplog.records if "handed on partial" in r.getMessage()]
    assert messages == ["tooltrail: 3 traces handed on partial (max_age=3)"]
    buffer.shutdown()


def test_bad_bounds_are_refused() -> None:
    with pytest.raises(ValueError):
        TraceBuffer(max_traces=0)


def test_the_public_api_path_groups_traces_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    from tooltrail.pipeline import sdk

    monkeypatch.setattr(sdk, "READERS", sdk.PUBLIC)  # what an SDK the probe refuses gets
    provider, buffer, sink = pipeline(grace_s=0)
    remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    with provider.get_tracer("t").start_as_current_span(
        "server", context=trace.set_span_in_context(NonRecordingSpan(remote))
    ):
        pass
    for _ in range(50):
        one_trace(provider.get_tracer("t"))
    wait_for(lambda: len(sink.traces) == 51)
    assert all(not t.partial for t in sink.traces)
    assert sorted(len(t.spans) for t in sink.traces) == [1] + [3] * 50
    buffer.shutdown()


def test_any_item_of_tooltrails_own_shape_can_be_buffered() -> None:
    """Not only SDK spans: anything with ``trace_id`` and ``local_root`` (``Traced``), as the
    spans and log records a receiver decoded, goes to the same buffer through ``add``, typed
    as it is (``CompletedTrace[Decoded]``)."""

    @dataclass
    class Decoded:
        trace_id: int
        local_root: bool

    received: list[CompletedTrace[Decoded]] = []

    class Collect:
        def export_trace(self, trace: CompletedTrace[Decoded]) -> None:
            received.append(trace)

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

        def shutdown(self) -> None:
            pass

    buffer = TraceBuffer(Collect(), grace_s=0)
    child, root, other = Decoded(5, False), Decoded(5, True), Decoded(6, False)
    buffer.add(child)
    buffer.add(other)  # no root: held
    buffer.add(root)
    wait_for(lambda: len(received) == 1)
    assert received[0].spans == [child, root] and not received[0].partial
    assert is_local_root(root) and not is_local_root(child)
    buffer.shutdown()
    assert [t.spans for t in received[1:]] == [[other]] and received[1].partial


def test_the_oldest_rootless_trace_old_enough_can_be_handed_on_now() -> None:
    provider, buffer, sink = pipeline(grace_s=10)
    tracer = provider.get_tracer("t")
    complete = tracer.start_span("complete-root")
    tracer.start_span("complete-tool", context=trace.set_span_in_context(complete)).end()
    complete.end()  # complete, waiting out its grace: not rootless
    roots = [tracer.start_span(f"agent{i}") for i in range(2)]  # never ended
    for i, root in enumerate(roots):
        tracer.start_span(f"tool{i}", context=trace.set_span_in_context(root)).end()
    assert buffer.hand_on_oldest_rootless(min_age_s=60) is None  # none is that old
    # time is what is tested: the rootless traces grow older than min_age_s
    time.sleep(0.05)
    handed = buffer.hand_on_oldest_rootless(min_age_s=0.01)
    assert handed == (roots[0].get_span_context().trace_id, 1)
    wait_for(lambda: len(sink.traces) == 1)
    assert sink.traces[0].partial and sink.traces[0].reason == "evicted"
    assert sink.names() == [["tool0"]]
    assert buffer.stats().partial_by_reason["evicted"] == 1
    assert buffer.stats().traces_held == 2
    buffer.shutdown()


class IdleAware(Collect):
    """A sink that also says when the buffer told it nothing more is ready (``idle``)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    def export_trace(self, trace: CompletedTrace) -> None:
        super().export_trace(trace)
        self.events.append("trace")

    def idle(self) -> None:
        self.events.append("idle")


def test_a_sink_is_told_idle_after_each_burst_it_was_given() -> None:
    """After delivering what was ready, the buffer calls a sink's ``idle`` once (never before
    a first trace, never twice in a row), so a sink holding writes for a burst writes them."""
    sink = IdleAware()
    buffer = TraceBuffer(sink, grace_s=0.0)
    provider = TracerProvider()
    provider.add_span_processor(buffer)
    tracer = provider.get_tracer("t")
    time.sleep(0.2)  # the delivery thread idle before any trace: no call yet
    assert sink.events == []
    for _ in range(20):
        one_trace(tracer)
    wait_for(lambda: sink.events.count("trace") == 20 and sink.events[-1] == "idle")
    one_trace(tracer)  # a second burst, later
    wait_for(lambda: sink.events.count("trace") == 21 and sink.events[-1] == "idle")
    buffer.shutdown()
    assert sink.events[0] == "trace"
    assert all(a != b or a == "trace" for a, b in zip(sink.events, sink.events[1:], strict=False))
    assert 2 <= sink.events.count("idle") <= 21
