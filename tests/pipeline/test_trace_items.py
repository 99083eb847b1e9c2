"""The inline evaluator's seams: ``pipeline.trace_items`` (how a trace's items are read and
kept), ``pipeline.observer`` (what a host is told), and the rule that no class subclasses
``InlineEvaluator``: what a receiver changes, it passes in.

Each ``TraceItems`` is read on real items: SDK spans ended by a real ``TracerProvider`` for
``SdkItems``; spans and log records encoded as OTLP requests and decoded as ``tooltrail
serve`` decodes them for ``serve.received_items.ReceivedItems``.
"""

from __future__ import annotations

import ast
import dataclasses
import gc
from pathlib import Path
from typing import Any

import orjson
import pytest
from fixtures import DATA
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tooltrail.convert import to_eval_trace
from tooltrail.live import tool
from tooltrail.otlp import encode_request, read_log_records, read_spans
from tooltrail.pipeline.adapt import otlp_spans
from tooltrail.pipeline.buffer import LATE, CompletedTrace
from tooltrail.pipeline.inline import InlineEvaluator
from tooltrail.pipeline.trace_items import SdkItems
from tooltrail.results import CaseResult
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import Received, ReceivedLog, ReceivedRequest, ReceivedSpan, decode_body
from tooltrail.serve.logs_intake import record_key
from tooltrail.serve.received_items import LogsSeen, ReceivedItems
from tooltrail.serve.sinks import received_evaluator
from tooltrail.suite import TestSuite

SRC = Path(__file__).resolve().parents[2] / "src" / "tooltrail"
SUITE = TestSuite.from_dict(
    {
        "name": "items",
        "cases": [
            {"id": "lookup", "match": {"agent_name": "items_agent"}, "required_tools": ["lookup"]}
        ],
    }
)
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "items_agent"}
#: A recorded trace whose content came as log records beside its spans.
OPENLIT = DATA / "recorded" / "openlit-openai-nocontent"
#: The hooks ``serve.sinks.ReceivedTraceEvaluator`` overrode when it subclassed the evaluator.
HOOKS = {
    "_convert",
    "_pack",
    "_unpack",
    "_release",
    "_unique",
    "_key",
    "_sizes",
    "_duplicates",
    "_late",
    "_write_line",
    "_failed",
    "_judged",
    "_first_verdict",
    "_logs_seen",
}


# -- the rule ----------------------------------------------------------------------------------


def subclasses_of(name: str, sources: dict[str, str]) -> list[str]:
    """``where:Class`` for every class among ``sources`` with a base named ``name``."""
    found = []
    for where, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                bases = {
                    base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                    for base in node.bases
                }
                if name in bases:
                    found.append(f"{where}:{node.name}")
    return found


def sources() -> dict[str, str]:
    return {
        str(path.relative_to(SRC)): path.read_text(encoding="utf-8")
        for path in sorted(SRC.rglob("*.py"))
    }


def test_no_class_in_src_subclasses_the_inline_evaluator() -> None:
    assert subclasses_of("InlineEvaluator", sources()) == []


def test_the_finder_sees_a_planted_subclass() -> None:
    planted = {
        "a.py": "class Received(InlineEvaluator):\n    pass\n",
        "b.py": "class Other(inline.InlineEvaluator): ...\n",
        "c.py": "class Fine(TraceSink): ...\n",
    }
    assert subclasses_of("InlineEvaluator", planted) == ["a.py:Received", "b.py:Other"]


def methods_of(path: Path, cls: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    (node,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
    return {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_the_evaluator_has_no_hook_left_to_override() -> None:
    """The receiver's changes are arguments now: the evaluator defines none of the methods it
    used to override, and ``serve.sinks`` passes ``items`` and ``observer``."""
    methods = methods_of(SRC / "pipeline" / "inline.py", "InlineEvaluator")
    assert "export_trace" in methods  # the class was found and read
    assert methods & HOOKS == set()
    calls = [
        node
        for node in ast.walk(ast.parse((SRC / "serve" / "sinks.py").read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "InlineEvaluator"
    ]
    assert len(calls) == 1
    assert {"items", "observer", "results"} <= {k.arg for k in calls[0].keywords}


# -- SDK spans ---------------------------------------------------------------------------------


def sdk_trace(tools: tuple[str, ...] = ("lookup",)) -> list[ReadableSpan]:
    """The ended spans of one agent run calling ``tools``, in end order."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("items")
    with tracer.start_as_current_span("invoke_agent items_agent", attributes=AGENT):
        for name in tools:
            with tool(name, {"id": 1}, tracer=tracer):
                pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


def trace_id_of(spans: list[ReadableSpan]) -> int:
    context = spans[0].context
    assert context is not None
    return context.trace_id


def test_sdk_items_convert_as_tooltrail_eval_reads_the_spans() -> None:
    spans = sdk_trace(("lookup", "refund"))
    trace = CompletedTrace(trace_id_of(spans), spans)
    items = SdkItems()
    eval_trace = items.convert(trace, spans, False, False, False)
    assert eval_trace is not None
    assert [call.name for call in eval_trace.tool_calls] == ["lookup", "refund"]
    assert eval_trace == to_eval_trace(otlp_spans(spans))
    assert not eval_trace.partial
    partial = items.convert(trace, spans, True, False, False)
    assert partial is not None and partial.partial


def test_sdk_items_are_kept_as_they_are_and_told_apart_by_span_id() -> None:
    spans = sdk_trace(("lookup", "refund"))
    items = SdkItems()
    kept = items.pack(spans)
    assert items.unpack(kept, trace_id_of(spans)) is spans
    items.release(kept)
    ids = [span.context.span_id for span in spans if span.context is not None]
    assert [items.key(span) for span in spans] == ids and len(set(ids)) == 3
    assert items.unique(spans) is spans
    assert items.sizes(spans) == (3, 0)
    assert items.late_records(spans) == 0


def test_the_evaluator_merges_a_late_sdk_piece_by_span_id(tmp_path: Path) -> None:
    """The default items: a late piece repeating a judged span and bringing the missing call
    is merged (the repeat counted, not judged twice) and revises the verdict."""
    spans = sdk_trace(("lookup",))
    root = next(span for span in spans if span.parent is None)
    first = [root]  # judged without the call: fail
    evaluator = InlineEvaluator(SUITE, results_path=tmp_path / "results.jsonl")
    trace_id = trace_id_of(spans)
    evaluator.export_trace(CompletedTrace(trace_id, first))
    evaluator.export_trace(CompletedTrace(trace_id, spans, reason=LATE, continued=True))
    evaluator.shutdown()
    lines = [orjson.loads(line) for line in (tmp_path / "results.jsonl").read_bytes().splitlines()]
    assert [(line["revision"], line["verdict"]) for line in lines] == [(0, "fail"), (1, "pass")]
    assert (evaluator.spans_duplicate, evaluator.traces_revised) == (1, 1)
    assert evaluator.log_records_duplicate == evaluator.log_records_late == 0


# -- received spans and log records --------------------------------------------------------------


def received(held: bool = False) -> tuple[int, list[Received], list[Received]]:
    """The recorded trace as ``tooltrail serve`` holds it: its spans decoded from a protobuf
    request (``held``: with the request body and each span's place in it), and its log
    records. The trace id, the spans, the records."""
    spans = list(read_spans(OPENLIT / "a_refund_ok.otlp.pb"))
    body = encode_request(spans).SerializeToString()
    request = ReceivedRequest(body, "protobuf")
    decoded = decode_body("protobuf", body)
    trace_id = int(decoded[0].trace_id, 16)
    items: list[Received] = [
        ReceivedSpan(s, trace_id, request, i) if held else ReceivedSpan(s, trace_id)
        for i, s in enumerate(decoded)
        if int(s.trace_id, 16) == trace_id
    ]
    records: list[Received] = [
        ReceivedLog(record, trace_id)
        for record in read_log_records(OPENLIT / "a_refund_ok.logs.otlp.pb")
        if int(record.trace_id, 16) == trace_id
    ]
    assert items and records
    return trace_id, items, records


def with_logs(counters: ReceiverCounters | None = None, **kwargs: Any) -> ReceivedItems:
    logs = LogsSeen()
    logs.seen = True
    return ReceivedItems(counters or ReceiverCounters(), logs=logs, **kwargs)


def canonical(value: Any) -> bytes:
    return orjson.dumps(
        dataclasses.asdict(value),
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=repr,
    )


def test_received_items_convert_with_their_log_records_joined() -> None:
    trace_id, spans, records = received()
    items = with_logs()
    whole = spans + records
    eval_trace = items.convert(CompletedTrace(trace_id, whole), whole, False, True, True)
    assert eval_trace is not None
    expected = to_eval_trace([item.decoded for item in whole], [], usage=True, content=True)
    assert canonical(eval_trace) == canonical(expected)
    assert eval_trace.tool_calls


def test_log_records_without_a_span_are_not_judged_yet_and_counted() -> None:
    trace_id, _, records = received()
    counters = ReceiverCounters()
    items = with_logs(counters)
    assert items.convert(CompletedTrace(trace_id, records), records, False, False, False) is None
    assert counters.snapshot()["log_records_orphaned"] == len(records)


def test_received_items_are_kept_packed_and_read_back_the_same() -> None:
    trace_id, spans, records = received()
    items = with_logs()
    whole = spans + records
    kept = items.pack(whole)
    gc.collect()
    assert kept.__class__ is bytes and not gc.is_tracked(kept)
    back = items.unpack(kept, trace_id)
    assert [items.key(item) for item in back] == [items.key(item) for item in whole]
    assert [items.key(span) for span in spans] == [span.decoded.span_id for span in spans]
    assert [items.key(r) for r in records] == [record_key(r.decoded) for r in records]
    assert items.sizes(back) == (len(spans), len(records))


def test_a_kept_form_pointing_into_a_body_lets_it_go_on_release() -> None:
    trace_id, spans, _ = received(held=True)
    items = ReceivedItems(ReceiverCounters(), max_kept_items=len(spans) * 4)
    kept = items.pack(spans)
    assert kept.__class__ is tuple and items.bodies.bodies_held == 1
    assert [items.key(s) for s in items.unpack(kept, trace_id)] == [items.key(s) for s in spans]
    items.release(kept)
    assert (items.bodies.bodies_held, items.bodies.bytes_held) == (0, 0)


def test_a_retried_log_record_is_left_out_only_once_logs_were_seen() -> None:
    _, spans, records = received()
    repeated = spans + records + records[:2]
    unique = with_logs().unique(repeated)
    assert len(unique) == len(spans) + len(records)
    assert all(any(u is item for item in spans + records) for u in unique)
    unseen = ReceivedItems(ReceiverCounters())
    assert unseen.unique(repeated) is repeated  # no logs taken: no trace holds a record
    assert unseen.late_records(repeated) == 0
    assert with_logs().late_records(repeated) == len(records) + 2


def test_the_evaluator_counts_a_late_received_pieces_repeats_and_records() -> None:
    """Through the evaluator (no subclass): a first piece with a retried record, then a late
    piece repeating a span and a record and bringing new records; the receiver's counters
    follow the evaluator's."""
    trace_id, spans, records = received()
    counters = ReceiverCounters()
    items = with_logs(counters)
    evaluator = received_evaluator(SUITE, counters, items)
    evaluator.export_trace(CompletedTrace(trace_id, spans + records[:1] + records[:1]))
    late = spans[:1] + records[:1] + records[1:]
    evaluator.export_trace(CompletedTrace(trace_id, late, reason=LATE, continued=True))
    seen = counters.snapshot()
    assert evaluator.log_records_duplicate == seen["log_records_duplicate"] == 2
    assert evaluator.spans_duplicate == seen["spans_duplicate"] == 1
    assert evaluator.log_records_late == seen["log_records_late"] == len(records)
    assert evaluator.late_pieces == seen["late_pieces"] == 1
    assert seen["traces_evaluated"] == 1 and seen["traces_unmatched"] == 1


# -- the observer and the results lines ---------------------------------------------------------


class Recorder:
    """An ``EvaluationObserver`` and ``ResultLines`` that note what they are told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, Any]] = []

    def counted(self, deltas: Any) -> None:
        self.told.append(("counted", dict(deltas)))

    def failed(self) -> None:
        self.told.append(("failed", None))

    def judged(self, partial: bool, matched: bool) -> None:
        self.told.append(("judged", (partial, matched)))

    def first_verdict(self, results: list[CaseResult]) -> None:
        self.told.append(("first_verdict", [r.passed for r in results]))

    def dropped(self) -> None:
        self.told.append(("dropped", None))

    def append(self, data: bytes) -> None:
        self.told.append(("line", orjson.loads(data)["verdict"]))

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.told.append(("close", None))


def test_the_observer_is_told_each_count_after_the_line_in_order() -> None:
    spans = sdk_trace(("lookup",))
    recorder = Recorder()
    evaluator = InlineEvaluator(SUITE, observer=recorder, results=recorder)
    evaluator.export_trace(CompletedTrace(trace_id_of(spans), spans))
    evaluator.export_dropped(
        CompletedTrace(trace_id_of(spans) + 1, [], partial=True, reason="dropped")
    )
    evaluator.shutdown()
    assert recorder.told == [
        ("line", "pass"),
        ("counted", {"traces_evaluated": 1, "results_count": 1}),
        ("first_verdict", [True]),
        ("judged", (False, True)),
        ("counted", {"traces_dropped": 1}),
        ("line", "partial"),
        ("dropped", None),
        ("close", None),
    ]


def test_a_trace_that_cannot_be_judged_is_told_failed() -> None:
    recorder = Recorder()
    evaluator = InlineEvaluator(SUITE, observer=recorder, results=recorder)
    evaluator.export_trace(CompletedTrace(1, [object()]))  # not a span: conversion raises
    assert recorder.told == [("counted", {"errors": 1}), ("failed", None)]
    assert evaluator.errors == 1


def test_results_go_to_one_place() -> None:
    with pytest.raises(ValueError, match="not both"):
        InlineEvaluator(SUITE, results_path="results.jsonl", results=Recorder())


class AppendOnly:
    """A ``ResultLines`` written before ``flush`` existed: ``append`` and ``close`` only."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []

    def append(self, data: bytes) -> None:
        self.lines.append(data)

    def close(self) -> None:
        pass


def test_results_lines_without_flush_are_taken_as_written_at_once() -> None:
    spans = sdk_trace(("lookup",))
    results = AppendOnly()
    evaluator = InlineEvaluator(SUITE, results=results)  # type: ignore[arg-type]
    evaluator.export_trace(CompletedTrace(trace_id_of(spans), spans))
    evaluator.idle()  # what the trace buffer calls once nothing more is ready
    assert evaluator.force_flush()
    evaluator.shutdown()
    assert len(results.lines) == 1 and evaluator.errors == 0
