"""What ``tooltrail serve`` keeps of a judged trace (``serve.kept``) judges exactly as the
items it was packed from.

Every trace of every fixture (``tests/data``, ``../shared/corpus``, the external corpus when
present) is decoded as the receiver
decodes it (protobuf and OTLP/JSON requests, log records from a logs request), packed, unpacked
and converted: the trace, its calls, its usage and its results must equal those converted from
the original items. Then a late piece through the real evaluator: the revision judged from the
packed form is the verdict of the whole trace.
"""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path
from typing import Any

import orjson
import pytest
from external_truth import EXTERNAL

from tooltrail.evaluate import evaluate_cases
from tooltrail.otlp import (
    LogRecord,
    Span,
    decode_json_request,
    decode_request,
    encode_logs_request,
    encode_request,
    json_line,
    read_log_records,
    read_spans,
)
from tooltrail.otlp.decode.limits import Limits
from tooltrail.pipeline.buffer import LATE, CompletedTrace
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import ReceivedLog, ReceivedSpan, _TraceIds
from tooltrail.serve.kept import pack, unpack
from tooltrail.serve.logs import decode_logs
from tooltrail.serve.sinks import LogsSeen, ReceivedTraceEvaluator
from tooltrail.suite import TestSuite

DATA = Path(__file__).parent / "data"
SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
FIXTURES = sorted(
    path
    for root in (DATA, SHARED, EXTERNAL)
    if root.is_dir()
    for path in root.rglob("*")
    if path.suffix in (".json", ".jsonl", ".pb") and not path.name.endswith(".truth.json")
)
#: Reads calls, their arguments and order, and usage (tokens, cost), of every trace.
SUITE = TestSuite.from_dict(
    {
        "name": "kept",
        "prices": {"gpt-4o": {"input": 2.5, "output": 10}},
        "cases": [
            {
                "id": "all",
                "match": "all",
                "max_tool_calls": 3,
                "max_llm_calls": 2,
                "max_tokens": 1000,
                "max_cost_usd": 0.01,
                "evaluators": [{"name": "no_redundant_tool_calls", "threshold": 1.0}],
            }
        ],
    }
)


def evaluator() -> ReceivedTraceEvaluator:
    logs = LogsSeen()
    logs.seen = True
    return ReceivedTraceEvaluator(SUITE, ReceiverCounters(), logs=logs)


def received(path: Path, encoding: str) -> dict[int, list[Any]]:
    """The fixture's items by trace, as the receiver holds them after a ``encoding`` request
    of its spans and one of its log records."""
    spans = list(read_spans(path))
    if not spans:
        return {}
    request = encode_request(spans)
    if encoding == "protobuf":
        decoded = decode_request(request.SerializeToString(), origin="request", lazy=False)
    else:
        decoded = decode_json_request(json_line(request), origin="request", lazy=False)
    items: list[Any] = [ReceivedSpan(s, _TraceIds(int(s.trace_id, 16))) for s in decoded]
    records = list(read_log_records(path))
    if records:
        body = encode_logs_request(records, resource=records[0].resource).SerializeToString()
        for record in decode_logs("protobuf", body, Limits()).records:
            items.append(ReceivedLog(record, _TraceIds(int(record.trace_id, 16))))
    by_trace: dict[int, list[Any]] = {}
    for item in items:
        by_trace.setdefault(item.context.trace_id, []).append(item)
    return by_trace


def judged(items: list[Any], trace_id: int) -> bytes:
    """The converted trace and its results, as canonical bytes (``True`` is not ``1``)."""
    judge = evaluator()
    trace = CompletedTrace(trace_id, items)
    eval_trace = judge._convert(trace, items, False)
    if eval_trace is None:
        return b"not converted"
    results = evaluate_cases(SUITE.cases_for(eval_trace), eval_trace)
    return orjson.dumps(
        [dataclasses.asdict(eval_trace), [r.to_dict() for r in results]],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=repr,
    )


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_a_trace_unpacked_judges_exactly_as_the_items_it_was_packed_from(
    path: Path, encoding: str
) -> None:
    traces = received(path, encoding)
    if not traces:
        pytest.skip("no spans")
    for trace_id, items in traces.items():
        packed = pack(items)
        assert isinstance(packed, bytes), "the receiver's items are kept packed"
        again = unpack(packed, trace_id)
        assert [type(i) for i in again] == [type(i) for i in items]
        assert [(i.span.__class__, _head(i.span)) for i in again] == [
            (i.span.__class__, _head(i.span)) for i in items
        ]
        assert judged(again, trace_id) == judged(items, trace_id)


def _head(inner: Span | LogRecord) -> tuple[Any, ...]:
    if isinstance(inner, LogRecord):
        return (inner.trace_id, inner.span_id, inner.time_ns, inner.event_name)
    return (inner.span_id, inner.parent_span_id, inner.name, inner.start_ns, inner.end_ns)


def test_the_corpus_holds_log_records_and_span_events() -> None:
    """The round trip above covers every kind of row: protobuf spans, spans with events, and
    log records."""
    items = [i for path in FIXTURES for t in received(path, "json").values() for i in t]
    assert any(isinstance(i, ReceivedLog) for i in items)
    assert any(isinstance(i.span, Span) and i.span.events for i in items)


def test_a_revision_from_the_packed_form_is_the_whole_traces_verdict() -> None:
    """A trace judged without its late piece, then revised: the revision (judged from what was
    kept packed) equals judging the whole trace at once; the store counts the merged trace."""
    fixture = SHARED / "google-adk" / "a_refund_ok.otlp.jsonl"
    if not fixture.exists():
        pytest.skip("no shared corpus")
    (trace_id, items), *_ = received(fixture, "protobuf").items()
    spans = [i for i in items if not isinstance(i, ReceivedLog)]
    assert len(spans) > 2
    root = next(i for i in spans if i.parent is None)
    late = [i for i in spans if i is not root][-2:]
    first = [i for i in items if not any(i is x for x in late)]
    seen: list[tuple[Any, Any]] = []
    judge = evaluator()
    judge.add_callback(lambda t, r: seen.append((t, r)))
    judge.export_trace(CompletedTrace(trace_id, first))
    kept = judge.revisions.find(trace_id)
    assert not isinstance(kept, str)
    assert kept.kept.__class__ is bytes and not gc.is_tracked(kept.kept)
    judge.export_trace(CompletedTrace(trace_id, late, reason=LATE, continued=True))
    assert judge.traces_revised == 1
    assert judge.revisions.items_kept == len(items)
    revised_trace, revised = seen[-1]
    whole = evaluator()
    whole.add_callback(lambda t, r: seen.append((t, r)))
    whole.export_trace(CompletedTrace(trace_id, items))
    whole_trace, results = seen[-1]
    assert [r.to_dict() for r in revised] == [r.to_dict() for r in results]
    assert revised_trace.tool_calls == whole_trace.tool_calls
