"""Which reading path serve's intake decodes requests with, and how ``/stats`` tells.

The core is used unless the received spans must keep their wire form: ``--dump`` and
``--forward`` write them again from it, and the core's spans (and its ``SpanHead`` for spans no
dialect reads) have none.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from core_paths import needs_core
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from serve_helpers import ANY_TRACE_SUITE, post, wait_for_stat, write_suite

from tooltrail.convert import engine as core
from tooltrail.convert.engine import Needs
from tooltrail.convert.facts import FactSpan
from tooltrail.otlp import Span, SpanHead
from tooltrail.serve import ServeConfig, start_in_thread
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import WIRE_PATH, TraceIntake


@pytest.fixture(autouse=True)
def fresh_choice(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test picks the path from its own environment, and leaves no choice behind."""
    monkeypatch.delenv(core.CORE_ENV, raising=False)
    core.reset()
    yield
    core.reset()


def request() -> bytes:
    """An agent span, a tool call, and a span no dialect reads (a database query)."""
    message = ExportTraceServiceRequest()
    spans = message.resource_spans.add().scope_spans.add().spans
    trace_id, root_id = b"\x07" * 16, b"\x01" * 8
    root = spans.add(trace_id=trace_id, span_id=root_id, name="invoke_agent refund_agent")
    root.attributes.append(KeyValue(key="gen_ai.operation.name", value={"string_value": "x"}))
    tool = spans.add(
        trace_id=trace_id, span_id=b"\x02" * 8, parent_span_id=root_id, name="execute_tool t"
    )
    tool.attributes.append(KeyValue(key="gen_ai.tool.name", value={"string_value": "t"}))
    spans.add(trace_id=trace_id, span_id=b"\x03" * 8, parent_span_id=root_id, name="SELECT")
    return message.SerializeToString()


class Collect:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def add(self, item: Any) -> None:
        self.items.append(item)


def taken(wire: bool, facts: bool = False) -> tuple[list[Any], str]:
    buffer = Collect()
    intake = TraceIntake(
        buffer,
        ReceiverCounters(),
        max_buffered_spans=100,
        max_traces=10,
        retry_after=1,
        wire=wire,
        needs=Needs(content=not facts),
    )
    assert intake("protobuf", request()).accepted == 3
    return [item.decoded for item in buffer.items], intake.reading_path


@needs_core
def test_the_intake_reads_through_the_core_and_hands_on_heads_for_spans_no_dialect_reads() -> None:
    decoded, path = taken(wire=False)
    assert path.startswith("core ")
    assert [type(s) for s in decoded] == [Span, Span, SpanHead]
    assert [s.wire for s in decoded[:2]] == [None, None]


@needs_core
def test_in_the_facts_mode_the_core_hands_on_the_facts_of_the_spans_its_port_reads() -> None:
    decoded, path = taken(wire=False, facts=True)
    assert path.startswith("core ")
    assert [type(s) for s in decoded] == [FactSpan, FactSpan, SpanHead]
    assert decoded[1].fact.call.name == "t"


def test_with_the_wire_form_kept_the_intake_reads_every_span_whole_with_the_python_path() -> None:
    for facts in (False, True):  # (the wire form wins over the facts mode)
        decoded, path = taken(wire=True, facts=facts)
        assert path == WIRE_PATH
        assert [type(s) for s in decoded] == [Span, Span, Span]
        assert all(s.wire is not None for s in decoded)


@needs_core
def test_serve_reads_in_the_facts_mode_when_no_check_reads_content(tmp_path: Path) -> None:
    """The default suite reads no content: a served request's spans come as facts (counted by
    the core's readers, ``convert.engine.facts_counts``), and the trace is judged."""
    receiver = start_in_thread(
        ServeConfig(suite=write_suite(tmp_path, ANY_TRACE_SUITE), grpc_port=None, http_port=0)
    )
    try:
        port = receiver.receiver.http_port
        assert port is not None
        before = core.facts_counts()
        status, _, _ = post(port, request(), {"Content-Type": "application/x-protobuf"})
        assert status == 200
        wait_for_stat(port, "traces_evaluated", 1)
        facts, spans, heads = (a - b for a, b in zip(core.facts_counts(), before, strict=True))
        assert (facts, spans, heads) == (2, 0, 1)
    finally:
        receiver.stop()


def test_dump_and_forward_keep_the_wire_form(tmp_path: Path) -> None:
    assert not ServeConfig().keeps_wire
    assert ServeConfig(dump=tmp_path / "dump.jsonl").keeps_wire
    assert ServeConfig(forward="http://127.0.0.1:1").keeps_wire


def stats_path(tmp_path: Path, **settings: Any) -> str:
    """``reading_path`` of a receiver's ``/stats``, over loopback."""
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(tmp_path, ANY_TRACE_SUITE), grpc_port=None, http_port=0, **settings
        )
    )
    try:
        assert receiver.receiver.http_port is not None
        status, _, body = post(receiver.receiver.http_port, b"", path="/stats", method="GET")
        assert status == 200
        path: str = orjson.loads(body)["reading_path"]
        return path
    finally:
        receiver.stop()


@needs_core
def test_stats_say_the_core_by_default(tmp_path: Path) -> None:
    assert stats_path(tmp_path).startswith("core ")


def test_stats_say_python_when_switched_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(core.CORE_ENV, core.PYTHON)
    assert stats_path(tmp_path) == core.PYTHON


def test_stats_say_the_wire_form_is_kept_with_a_dump(tmp_path: Path) -> None:
    assert stats_path(tmp_path, dump=tmp_path / "dump.jsonl") == WIRE_PATH
