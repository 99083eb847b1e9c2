"""Traces the compiled core collects convert as the Python path's do, whatever else arrives.

With the core, the converter's readers (``convert.engine.READ_PARTS``) hand out runs of the
spans the core read (``TracePart``), and ``TraceCollector`` keeps a trace made only of those in
the core (``CoreTrace``) until the core's builder builds it (``Builder.build_core``). Anything
else for such a trace moves it into a ``TraceFacts`` first: a span the core declined (amid its
parts, or read from a JSON document by the Python decoder), a log record with content, a part
arriving for a trace Python already holds. These tests read such inputs both ways, through the
core and with ``TOOLTRAIL_CORE=python``, and require the same traces and diagnostics;
``tests/convert/test_engine_differential.py`` does the same for every fixture file alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from core_paths import engine_reading, reading_with

from tooltrail.convert import engine as core
from tooltrail.convert import read_traces
from tooltrail.convert.collect import TraceCollector
from tooltrail.convert.decoded import is_log_record
from tooltrail.convert.engine import READ_FACTS, READ_PARTS, build_counts
from tooltrail.convert.facts import TraceFacts
from tooltrail.otlp import Limits, encode_request, frame, read_spans
from tooltrail.otlp.decode.span import Diagnostic
from tooltrail.otlp.read.mixed import read_spans_and_logs

try:
    import tooltrail_core
except ImportError:
    HAS_PARTS = False
else:
    HAS_PARTS = getattr(tooltrail_core, "FACTS_MODE", 0) >= core.PARTS_MODE

needs_parts = pytest.mark.skipif(
    not HAS_PARTS, reason="the compiled core (tooltrail-core, core/) with parts is absent"
)

DATA = Path(__file__).parents[1] / "data"
#: Every span of it is read by the core's port: one trace of 9 spans, kept in the core.
REFUND = DATA / "corpus/mlflow-genai-semconv/a_refund_ok.otlp.pb"
#: One span of its trace is declined by the port (ADK's retry plugin), amid its parts.
RETRY = DATA / "corpus/google-adk/f_tool_error_retry.otlp.pb"
#: Spans and the GenAI log records that carry the model's content, in one JSON document.
WEATHER = DATA / "logs/openai_v2_weather.json"


def _read(
    paths: list[Path], monkeypatch: pytest.MonkeyPatch, which: str, **options: Any
) -> tuple[list[str], list[Diagnostic]]:
    with reading_with(monkeypatch, which):
        diagnostics: list[Diagnostic] = []
        traces = [repr(t) for t in read_traces(paths, diagnostics=diagnostics, **options)]
    return traces, diagnostics


def assert_same(paths: list[Path], monkeypatch: pytest.MonkeyPatch, **options: Any) -> int:
    """``read_traces(paths)`` gives the same traces (``repr``: every field) and diagnostics
    through the core and the Python path; returns how many traces the core's builder built."""
    want = _read(paths, monkeypatch, core.PYTHON, **options)
    before = build_counts()[0]
    got = _read(paths, monkeypatch, core.CORE, **options)
    built = build_counts()[0] - before
    assert got[0] == want[0]
    assert got[1] == want[1]
    assert want[0]
    return built


def _collected(paths: list[Path], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The class of each open trace after collecting ``paths`` through the core, by trace id."""
    with reading_with(monkeypatch, core.CORE):
        collector = TraceCollector(diagnostics=[])
        for item in read_spans_and_logs(paths, **engine_reading(READ_PARTS), diagnostics=[]):
            if is_log_record(item):
                collector.add_log(item)
            else:
                collector.add(item)
        return {trace_id: type(t).__name__ for trace_id, t in collector.open.items()}


def _spans_as_protobuf(source: Path, into: Path) -> Path:
    """The spans of ``source`` (any format) written as one framed protobuf request."""
    spans = list(read_spans(source))
    into.write_bytes(frame(encode_request(spans).SerializeToString()))
    return into


def _logs_only(source: Path, into: Path) -> Path:
    """``source`` (an OTLP/JSON document of spans and logs) with its log records only."""
    document = json.loads(source.read_text())
    into.write_text(json.dumps({"resourceLogs": document["resourceLogs"]}))
    return into


@needs_parts
def test_the_core_keeps_the_traces_it_reads_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every span of the fixture is read by the port: each trace is kept in the core, handed
    out in parts (no span object at all) and built by the core from what it keeps."""
    with reading_with(monkeypatch, core.CORE):
        kinds = {
            type(item).__name__
            for item in read_spans_and_logs([REFUND], **engine_reading(READ_PARTS))
        }
    assert kinds == {"TracePart"}
    held = _collected([REFUND], monkeypatch)
    assert list(held.values()) == ["CoreTrace"]
    assert assert_same([REFUND], monkeypatch) == 1
    assert assert_same([REFUND], monkeypatch, group="conversation") == 1
    assert assert_same([REFUND], monkeypatch, usage=True, two_pass=True) == 1


@needs_parts
def test_a_span_the_core_declines_moves_its_trace_to_python(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A declined span amid a trace's parts: the trace is exported to a ``TraceFacts`` at that
    span and the parts after it are added span by span, in record order."""
    held = _collected([RETRY], monkeypatch)
    assert "TraceFacts" in held.values()
    assert_same([RETRY], monkeypatch)
    assert_same([RETRY], monkeypatch, usage=True, two_pass=True)
    assert_same([RETRY], monkeypatch, group="conversation")
    assert_same([RETRY, REFUND], monkeypatch)


@needs_parts
def test_a_trace_read_by_both_paths_from_two_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The same trace in a protobuf file (read by the core) and in a JSON document (read by
    the Python decoder, its spans again and its log records): in either order, the first copy
    of each span wins and the log content joins, as on the Python path."""
    pb = _spans_as_protobuf(WEATHER, tmp_path / "weather.pb")
    assert set(_collected([pb], monkeypatch).values()) == {"CoreTrace"}
    assert set(_collected([pb, WEATHER], monkeypatch).values()) == {"TraceFacts"}
    assert_same([pb, WEATHER], monkeypatch)
    assert_same([WEATHER, pb], monkeypatch)
    assert_same([pb, WEATHER], monkeypatch, two_pass=True)


@needs_parts
def test_log_content_joins_a_trace_the_core_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Log records with content for a trace the core keeps move it to Python, where they are
    joined to its spans; records that carry nothing leave it in the core."""
    pb = _spans_as_protobuf(WEATHER, tmp_path / "weather.pb")
    logs = _logs_only(WEATHER, tmp_path / "logs.json")
    assert set(_collected([pb, logs], monkeypatch).values()) == {"TraceFacts"}
    assert_same([pb, logs], monkeypatch)
    assert_same([pb, logs], monkeypatch, two_pass=True)
    without, _ = _read([pb], monkeypatch, core.CORE)
    joined, _ = _read([pb, logs], monkeypatch, core.CORE)
    assert joined != without  # the content came from the log records


@needs_parts
def test_the_limit_on_spans_per_trace_holds_in_the_core(monkeypatch: pytest.MonkeyPatch) -> None:
    """Spans over ``max_spans_per_trace`` are dropped in the core: the trace is partial and the
    over-limit is reported once, at the part that crossed it, as on the Python path."""
    limits = Limits(max_spans_per_trace=3)
    assert assert_same([REFUND], monkeypatch, limits=limits) == 1
    _, diagnostics = _read([REFUND], monkeypatch, core.CORE, limits=limits)
    assert len(diagnostics) == 1
    assert all("limits.max_spans_per_trace" in d.message for d in diagnostics)
    with reading_with(monkeypatch, core.CORE):
        assert all(t.partial for t in read_traces(REFUND, limits=limits))


@needs_parts
def test_a_record_read_twice_keeps_the_first_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    assert assert_same([REFUND, REFUND], monkeypatch) == 1
    assert_same([RETRY, RETRY], monkeypatch)


@needs_parts
def test_a_core_without_parts_hands_out_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A core built before the parts (``FACTS_MODE`` 1) reads in the facts mode one span at a
    time, and the collector keeps its traces in Python."""
    monkeypatch.setattr(tooltrail_core, "FACTS_MODE", 1)
    with reading_with(monkeypatch, core.CORE):
        kinds = {
            type(item).__name__
            for item in read_spans_and_logs([REFUND], **engine_reading(READ_PARTS))
        }
    assert kinds == {"FactSpan"}
    assert set(_collected([REFUND], monkeypatch).values()) == {"TraceFacts"}
    assert_same([RETRY, REFUND], monkeypatch)


def test_read_parts_is_read_facts_in_parts() -> None:
    assert READ_PARTS.parts and READ_PARTS.facts == READ_FACTS.facts and not READ_FACTS.parts


def test_the_python_path_keeps_traces_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    with reading_with(monkeypatch, core.PYTHON):
        collector = TraceCollector(diagnostics=[])
        for item in read_spans_and_logs([REFUND], **engine_reading(READ_PARTS), diagnostics=[]):
            assert not is_log_record(item)
            collector.add(item)
    assert collector.part_class is None
    assert all(isinstance(t, TraceFacts) for t in collector.open.values())
