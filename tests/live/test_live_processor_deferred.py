"""ToolArgsProcessor with deferred ends: tool spans are finished on a worker thread, and still
reach every wrapped processor exactly once, tagged and redacted, by force_flush or shutdown."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from test_live_helpers import Recorder, corpus_spans, provider_with, replay, tool_spans

from tooltrail.live import CompletedTrace, ToolArgsProcessor, TraceBuffer
from tooltrail.pipeline.buffer import CallbackSink


class ThreadRecorder(Recorder):
    """A Recorder that also notes which thread handed it each ended span."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[int] = []
        self.shut_down_with = -1

    def on_end(self, span: ReadableSpan) -> None:
        self.threads.append(threading.get_ident())
        super().on_end(span)

    def shutdown(self) -> None:
        self.shut_down_with = len(self.ended)


def _tool_span(provider: TracerProvider, i: int, arguments: str | None = None) -> None:
    provider.get_tracer("t").start_span(
        "execute_tool issue_refund",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "issue_refund",
            "gen_ai.tool.call.id": f"call_{i}",
            "gen_ai.tool.call.arguments": arguments or json.dumps({"order_id": f"ORD-{i}"}),
        },
    ).end()


def _calls(spans: list[ReadableSpan]) -> list[tuple[str, Any]]:
    return [(s.attributes["tool_name"], json.loads(s.attributes["tool_args"])) for s in spans]


def test_ends_are_deferred_by_default_when_every_wrapped_processor_delivers_later() -> None:
    batch = BatchSpanProcessor(InMemorySpanExporter())
    buffer = TraceBuffer()
    try:
        assert ToolArgsProcessor(batch, buffer).deferred is not None
        assert ToolArgsProcessor(batch, Recorder()).deferred is None
        assert ToolArgsProcessor(Recorder()).deferred is None
        assert ToolArgsProcessor(Recorder(), defer=True).deferred is not None
        assert ToolArgsProcessor(batch, defer=False).deferred is None
    finally:
        batch.shutdown()
        buffer.shutdown()


def test_a_deferred_tool_span_is_finished_off_the_application_thread() -> None:
    rec = ThreadRecorder()
    processor = ToolArgsProcessor(rec, defer=True)
    provider = provider_with(processor)
    _tool_span(provider, 1)
    deadline = time.monotonic() + 60
    while not rec.ended and time.monotonic() < deadline:
        time.sleep(0.005)
    assert rec.threads and threading.get_ident() not in rec.threads
    assert _calls(rec.ended) == [("issue_refund", {"order_id": "ORD-1"})]
    provider.shutdown()


def test_non_tool_spans_still_pass_straight_through_on_the_calling_thread() -> None:
    rec = ThreadRecorder()
    provider = provider_with(ToolArgsProcessor(rec, defer=True))
    provider.get_tracer("t").start_span("GET /orders", attributes={"http.method": "GET"}).end()
    assert [s.name for s in rec.ended] == ["GET /orders"]
    assert rec.threads == [threading.get_ident()]
    provider.shutdown()


def test_deferred_corpus_tool_spans_get_the_same_tags_as_synchronous_ones() -> None:
    spans = corpus_spans("strands", "f_tool_error_retry")
    now, later = Recorder(), Recorder()
    replay(provider_with(ToolArgsProcessor(now, defer=False)), spans, attributes_at_start=False)
    provider = provider_with(ToolArgsProcessor(later, defer=True))
    replay(provider, spans, attributes_at_start=False)
    provider.force_flush()
    synchronous = sorted(map(repr, _calls(tool_spans(now.ended))))
    assert synchronous and sorted(map(repr, _calls(tool_spans(later.ended)))) == synchronous


def test_redaction_holds_on_deferred_spans() -> None:
    rec = Recorder()
    provider = provider_with(ToolArgsProcessor(rec, defer=True))
    _tool_span(provider, 1, '{"cardNumber": "4111111111111111", "amount": 5}')
    provider.force_flush()
    span = rec.ended[0]
    assert "4111" not in span.attributes["tool_args"]
    assert "4111" not in span.attributes["gen_ai.tool.call.arguments"]


def test_force_flush_delivers_every_tool_span_from_many_threads_exactly_once() -> None:
    rec = Recorder()
    processor = ToolArgsProcessor(rec, defer=True)
    provider = provider_with(processor)

    def agent(k: int) -> None:
        for i in range(250):
            _tool_span(provider, k * 1000 + i)

    threads = [threading.Thread(target=agent, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert processor.force_flush(10_000) is True
    ids = [s.attributes["gen_ai.tool.call.id"] for s in rec.ended]
    assert len(ids) == 2000 and len(set(ids)) == 2000
    assert all("tool_args" in s.attributes for s in rec.ended)
    provider.shutdown()


def test_shutdown_delivers_every_queued_span_before_shutting_the_wrapped_processors() -> None:
    rec = ThreadRecorder()
    provider = provider_with(ToolArgsProcessor(rec, defer=True))
    for i in range(300):
        _tool_span(provider, i)
    provider.shutdown()
    assert rec.shut_down_with == 300
    assert len({s.attributes["gen_ai.tool.call.id"] for s in rec.ended}) == 300


class Blocking(SpanProcessor):
    """Holds the first span it is given until released, so the worker stays busy."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.ended: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        if not self.entered.is_set():
            self.entered.set()
            assert self.release.wait(10)
        self.ended.append(span)


def test_a_full_queue_finishes_spans_on_the_caller_thread_and_counts_them() -> None:
    blocking = Blocking()
    processor = ToolArgsProcessor(blocking, defer=True, max_deferred=3)
    provider = provider_with(processor)
    _tool_span(provider, 0)
    assert blocking.entered.wait(5)  # the worker is stuck inside the first span's delivery
    for i in range(1, 9):
        _tool_span(provider, i)
    assert processor.deferred is not None and processor.deferred.inline == 5
    assert len(blocking.ended) == 5  # the overflow went through synchronously, tagged
    assert all("tool_args" in s.attributes for s in blocking.ended)
    blocking.release.set()
    assert processor.force_flush(5000) is True
    ids = sorted(s.attributes["gen_ai.tool.call.id"] for s in blocking.ended)
    assert ids == sorted(f"call_{i}" for i in range(9))
    provider.shutdown()


def test_a_flush_that_runs_out_of_time_reports_false_and_loses_nothing() -> None:
    blocking = Blocking()
    processor = ToolArgsProcessor(blocking, defer=True)
    provider = provider_with(processor)
    _tool_span(provider, 0)
    assert blocking.entered.wait(5)
    _tool_span(provider, 1)
    assert processor.force_flush(50) is False
    blocking.release.set()
    provider.shutdown()
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in blocking.ended) == [
        "call_0",
        "call_1",
    ]


def test_a_span_ending_after_shutdown_is_passed_on_without_raising() -> None:
    rec = Recorder()
    processor = ToolArgsProcessor(rec, defer=True)
    provider = provider_with(processor)
    processor.shutdown()
    span = provider.get_tracer("t").start_span(
        "execute_tool x", attributes={"gen_ai.operation.name": "execute_tool"}
    )
    span.end()
    assert [s.name for s in rec.ended] == ["execute_tool x"]


def test_a_failing_reader_on_the_worker_passes_the_span_on_as_it_was() -> None:
    def broken(span: Any) -> Any:
        raise ValueError("bad reader")

    rec = Recorder()
    processor = ToolArgsProcessor(rec, read_call=broken, defer=True, tag_on_start=False)
    provider = provider_with(processor)
    provider.get_tracer("t").start_span("execute_tool x").end()
    processor.force_flush()
    assert [s.name for s in rec.ended] == ["execute_tool x"]
    assert processor.errors == 1


def test_traces_through_the_buffer_arrive_complete_with_their_deferred_tool_spans() -> None:
    got: list[CompletedTrace] = []
    buffer = TraceBuffer(CallbackSink(got.append), grace_s=0.01)
    provider = provider_with(ToolArgsProcessor(buffer))
    tracer = provider.get_tracer("t")
    for t in range(20):
        with tracer.start_as_current_span("invoke_agent"):
            for i in range(9):
                _tool_span(provider, t * 10 + i)
    deadline = time.monotonic() + 60
    while sum(len(trace.spans) for trace in got) < 200 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(got) == 20
    assert not any(trace.partial for trace in got)
    assert all(len(tool_spans(trace.spans)) == 9 for trace in got)
    provider.shutdown()


def test_the_default_pipeline_exports_every_tool_span_tagged_after_a_flush() -> None:
    exporter = InMemorySpanExporter()
    provider = provider_with(ToolArgsProcessor(BatchSpanProcessor(exporter)))
    for i in range(100):
        _tool_span(provider, i)
    assert provider.force_flush(10_000) is True
    exported = exporter.get_finished_spans()
    assert len(exported) == 100 and all("tool_args" in s.attributes for s in exported)
    provider.shutdown()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_finishes_its_own_tool_spans_and_not_the_parents() -> None:
    rec = Recorder()
    provider = provider_with(ToolArgsProcessor(rec, defer=True))
    _tool_span(provider, 1)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own worker delivers its own span
        try:
            # 0 or 1, as the parent's worker's tick fell; read here, where no thread of the
            # parent runs (read before the fork, the worker could still deliver in between).
            before_fork = len(rec.ended)
            _tool_span(provider, 2)
            provider.force_flush(5000)
            ids = [s.attributes["gen_ai.tool.call.id"] for s in rec.ended[before_fork:]]
            os.write(write_end, json.dumps(ids).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        child_ids = json.loads(pipe.read() or "null")
    os.waitpid(pid, 0)
    provider.shutdown()
    assert child_ids == ["call_2"]
    assert [s.attributes["gen_ai.tool.call.id"] for s in rec.ended] == ["call_1"]
