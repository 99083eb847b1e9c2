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
from core_paths import needs_core
from external_truth import EXTERNAL
from fixtures import DATA, SHARED_CORPUS

from tooltrail.convert.facts import FactSpan
from tooltrail.otlp import (
    LogRecord,
    Span,
    encode_logs_request,
    encode_request,
    json_line,
    read_log_records,
    read_spans,
)
from tooltrail.otlp.decode.limits import Limits
from tooltrail.pipeline.buffer import LATE, CompletedTrace
from tooltrail.pipeline.inline import InlineEvaluator
from tooltrail.pipeline.revisions import WINDOW_PASSED, Judged, RevisionStore
from tooltrail.score import evaluate_cases
from tooltrail.serve.counters import ReceiverCounters
from tooltrail.serve.intake import ReceivedLog, ReceivedRequest, ReceivedSpan, decode_body
from tooltrail.serve.kept import KeptBodies, pack, unpack
from tooltrail.serve.logs_intake import decode_logs
from tooltrail.serve.received_items import LogsSeen, ReceivedItems
from tooltrail.serve.sinks import received_evaluator
from tooltrail.suite import TestSuite

FIXTURES = sorted(
    path
    for root in (DATA, SHARED_CORPUS, EXTERNAL)
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


def evaluator(items: ReceivedItems | None = None) -> InlineEvaluator:
    counters = ReceiverCounters()
    if items is None:
        logs = LogsSeen()
        logs.seen = True
        items = ReceivedItems(counters, logs=logs)
    return received_evaluator(SUITE, counters, items)


def received(
    path: Path, encoding: str, held: bool = False, facts: bool = False
) -> dict[int, list[Any]]:
    """The fixture's items by trace, as the receiver holds them after a ``encoding`` request
    of its spans and one of its log records; ``held``: with the request body and each span's
    place in it, as ``TraceIntake`` hands them on; ``facts``: read in the facts mode, as
    ``TraceIntake`` reads when no check reads content."""
    spans = list(read_spans(path))
    if not spans:
        return {}
    request = encode_request(spans)
    if encoding == "protobuf":
        body: bytes = request.SerializeToString()
    else:
        body = json_line(request)
    decoded = decode_body(encoding, body, facts=facts)
    request = ReceivedRequest(body, encoding, facts)
    items: list[Any] = [
        ReceivedSpan(s, int(s.trace_id, 16), request, i)
        if held
        else ReceivedSpan(s, int(s.trace_id, 16))
        for i, s in enumerate(decoded)
    ]
    records = list(read_log_records(path))
    if records:
        logs = encode_logs_request(records, resource=records[0].resource).SerializeToString()
        for record in decode_logs("protobuf", logs, Limits()).records:
            items.append(ReceivedLog(record, int(record.trace_id, 16)))
    by_trace: dict[int, list[Any]] = {}
    for item in items:
        by_trace.setdefault(item.trace_id, []).append(item)
    return by_trace


def judged(items: list[Any], trace_id: int) -> bytes:
    """The converted trace and its results, as canonical bytes (``True`` is not ``1``)."""
    judge = evaluator()
    trace = CompletedTrace(trace_id, items)
    eval_trace = judge.items.convert(trace, items, False, judge.usage, judge.content)
    if eval_trace is None:
        return b"not converted"
    results = evaluate_cases(SUITE.cases_for(eval_trace), eval_trace)
    return orjson.dumps(
        [dataclasses.asdict(eval_trace), [r.to_dict() for r in results]],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=repr,
    )


@pytest.mark.parametrize("held", [False, True], ids=["packed", "held"])
@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_a_trace_unpacked_judges_exactly_as_the_items_it_was_packed_from(
    path: Path, encoding: str, held: bool
) -> None:
    """Packed field by field (no body known), or pointing into the request body it came in."""
    traces = received(path, encoding, held)
    if not traces:
        pytest.skip("no spans")
    bodies = KeptBodies(1 << 30)
    for trace_id, items in traces.items():
        packed = pack(items, bodies)
        if held:
            assert isinstance(packed, tuple) and len(packed) == 2, "one body held"
            assert isinstance(packed[0], bytes) and isinstance(packed[1], bytes)
        else:
            assert isinstance(packed, bytes), "the receiver's items are kept packed"
        assert packed is not None
        again = unpack(packed, trace_id)
        assert [type(i) for i in again] == [type(i) for i in items]
        assert [(i.decoded.__class__, _head(i.decoded)) for i in again] == [
            (i.decoded.__class__, _head(i.decoded)) for i in items
        ]
        assert judged(again, trace_id) == judged(items, trace_id)
        if held:  # packed again (a second revision): the same places in the same body
            assert pack(again, bodies) == packed
            assert bodies.bodies_held == 1
            bodies.release(packed)
        bodies.release(packed)
    assert (bodies.bodies_held, bodies.bytes_held) == (0, 0)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_a_trace_read_in_the_facts_mode_is_read_again_the_same_way(
    path: Path, encoding: str
) -> None:
    """Items the core read in the facts mode (``FactSpan``) point into their body, which
    ``unpack`` reads again in the facts mode; kept field by field (no body, or a body over the
    bound), each ``FactSpan`` is a row with its ``SpanFact``: the same kinds of items either
    way, judged the same."""
    traces = received(path, encoding, held=True, facts=True)
    if not traces:
        pytest.skip("no spans")
    bodies = KeptBodies(1 << 30)
    for trace_id, items in traces.items():
        packed = pack(items, bodies)
        assert isinstance(packed, tuple) and len(packed) == 2, "one body held"
        again = unpack(packed, trace_id)
        assert [(i.__class__, i.decoded.__class__) for i in again] == [
            (i.__class__, i.decoded.__class__) for i in items
        ]
        assert judged(again, trace_id) == judged(items, trace_id)
        bodies.release(packed)
        rows = pack(items)
        assert isinstance(rows, bytes), "the receiver's items are kept packed"
        again = unpack(rows, trace_id)
        assert [(i.__class__, i.decoded.__class__) for i in again] == [
            (i.__class__, i.decoded.__class__) for i in items
        ]
        facts = [repr(i.decoded) for i in items if i.decoded.__class__ is FactSpan]
        assert [repr(i.decoded) for i in again if i.decoded.__class__ is FactSpan] == facts
        assert judged(again, trace_id) == judged(items, trace_id)
    assert (bodies.bodies_held, bodies.bytes_held) == (0, 0)


@needs_core
def test_the_facts_mode_judges_as_whole_spans_do() -> None:
    """The receiver's facts mode hands on ``FactSpan``s for the spans the core's port reads,
    and a trace converted from them is judged as from the whole spans."""
    fixture = DATA / "corpus" / "mlflow-genai-semconv" / "a_refund_ok.otlp.pb"
    ((trace_id, facts),) = received(fixture, "protobuf", facts=True).items()
    ((_, whole),) = received(fixture, "protobuf").items()
    assert {i.decoded.__class__ for i in facts} == {FactSpan}
    assert {i.decoded.__class__ for i in whole} == {Span}
    assert judged(facts, trace_id) == judged(whole, trace_id)


def test_a_body_over_the_byte_bound_is_not_held_and_the_trace_is_packed_instead() -> None:
    """``KeptBodies`` holds at most its byte bound: a body that would pass it is refused
    (counted), and that trace is kept field by field, still exactly."""
    fixture = DATA / "realworld" / "openai_agents_handoff_two_turns.json"
    traces = received(fixture, "protobuf", held=True)
    (trace_id, items), *_ = traces.items()
    body = items[0].request.body
    bodies = KeptBodies(len(body) - 1)
    packed = pack(items, bodies)
    assert isinstance(packed, bytes)
    assert (bodies.refused, bodies.bodies_held, bodies.bytes_held) == (1, 0, 0)
    assert judged(unpack(packed, trace_id), trace_id) == judged(items, trace_id)
    roomy = KeptBodies(len(body))
    held = pack(items, roomy)
    assert isinstance(held, tuple) and held[1] is body
    assert (roomy.refused, roomy.bodies_held, roomy.bytes_held) == (0, 1, len(body))


def _head(inner: Span | LogRecord) -> tuple[Any, ...]:
    if isinstance(inner, LogRecord):
        return (inner.trace_id, inner.span_id, inner.time_ns, inner.event_name)
    return (inner.span_id, inner.parent_span_id, inner.name, inner.start_ns, inner.end_ns)


def test_the_corpus_holds_log_records_and_span_events() -> None:
    """The round trip above covers every kind of row: protobuf spans, spans with events, and
    log records."""
    items = [i for path in FIXTURES for t in received(path, "json").values() for i in t]
    assert any(isinstance(i, ReceivedLog) for i in items)
    assert any(isinstance(i.decoded, Span) and i.decoded.events for i in items)


@pytest.mark.parametrize("held", [False, True], ids=["packed", "held"])
def test_a_revision_from_the_packed_form_is_the_whole_traces_verdict(held: bool) -> None:
    """A trace judged without its late piece, then revised: the revision (judged from what was
    kept packed) equals judging the whole trace at once; the store counts the merged trace."""
    fixture = SHARED_CORPUS / "google-adk" / "a_refund_ok.otlp.jsonl"
    if not fixture.exists():
        pytest.skip("no shared corpus")
    (trace_id, items), *_ = received(fixture, "protobuf", held).items()
    spans = [i for i in items if not isinstance(i, ReceivedLog)]
    assert len(spans) > 2
    root = next(i for i in spans if i.local_root)
    late = [i for i in spans if i is not root][-2:]
    first = [i for i in items if not any(i is x for x in late)]
    seen: list[tuple[Any, Any]] = []
    logs = LogsSeen()
    logs.seen = True
    received_items = ReceivedItems(ReceiverCounters(), logs=logs)
    judge = evaluator(received_items)
    judge.add_callback(lambda t, r: seen.append((t, r)))
    judge.export_trace(CompletedTrace(trace_id, first))
    kept = judge.revisions.find(trace_id)
    assert not isinstance(kept, str)
    gc.collect()
    assert kept.kept.__class__ is (tuple if held else bytes) and not gc.is_tracked(kept.kept)
    assert received_items.bodies.bodies_held == int(held)
    judge.export_trace(CompletedTrace(trace_id, late, reason=LATE, continued=True))
    assert judge.traces_revised == 1
    assert judge.revisions.items_kept == len(items)
    assert received_items.bodies.bodies_held == int(held), "the revision holds the same body, once"
    revised_trace, revised = seen[-1]
    whole = evaluator()
    whole.add_callback(lambda t, r: seen.append((t, r)))
    whole.export_trace(CompletedTrace(trace_id, items))
    whole_trace, results = seen[-1]
    assert [r.to_dict() for r in revised] == [r.to_dict() for r in results]
    assert revised_trace.tool_calls == whole_trace.tool_calls


def test_the_store_releases_each_kept_form_once_whichever_way_it_goes() -> None:
    """``RevisionStore`` hands every kept form it was given to ``on_release`` exactly once:
    replaced by a revision, past ``max_items``, past the window, past ``max_revisions``, or
    with revisions off. ``KeptBodies`` counts on it to let bodies go."""
    now = [0.0]
    released: list[str] = []
    store = RevisionStore(
        window_s=10, max_revisions=1, max_items=4, clock=lambda: now[0], on_release=released.append
    )
    a = Judged(kept="a1", size=2, partial=False, judged_at=0.0)
    store.keep(1, a)
    a.kept, a.size, a.rejudged = "a2", 3, 0  # a revision replaces the kept form in place
    store.keep(1, a)
    assert released == ["a1"]
    store.keep(2, Judged(kept="b", size=2, partial=False, judged_at=0.0))  # 5 > 4: a goes
    assert released == ["a1", "a2"]
    now[0] = 11.0
    assert store.find(2) == WINDOW_PASSED
    assert released == ["a1", "a2", "b"]
    c = Judged(kept="c1", size=1, partial=False, judged_at=11.0)
    store.keep(3, c)
    c.kept, c.rejudged = "c2", 1  # past max_revisions: neither form is held
    store.keep(3, c)
    assert released == ["a1", "a2", "b", "c1", "c2"]
    off = RevisionStore(window_s=0, on_release=released.append)
    off.keep(4, Judged(kept="d", size=1, partial=False, judged_at=0.0))
    assert released[-1] == "d" and store.items_kept == 0


def test_a_judged_traces_body_is_let_go_with_it() -> None:
    """Through the evaluator: bodies are held while a trace that points into them is kept,
    and let go when the cap on kept items lets the trace go."""
    fixture = SHARED_CORPUS / "google-adk" / "a_refund_ok.otlp.jsonl"
    if not fixture.exists():
        pytest.skip("no shared corpus")
    (trace_id, items), *_ = received(fixture, "protobuf", held=True).items()
    counters = ReceiverCounters()
    received_items = ReceivedItems(counters, max_kept_items=len(items))
    received_items.bodies = KeptBodies(1 << 20)  # room for two bodies; the cap lets one go
    judge = received_evaluator(SUITE, counters, received_items)
    judge.export_trace(CompletedTrace(trace_id, items))
    body = items[0].request.body
    bodies = received_items.bodies
    assert (bodies.bodies_held, bodies.bytes_held) == (1, len(body))
    copy = bytes(bytearray(body))  # another request with the same bytes
    assert copy is not body
    request = ReceivedRequest(copy, "protobuf")
    other = [ReceivedSpan(i.decoded, trace_id + 1, request, i.index) for i in items]
    judge.export_trace(CompletedTrace(trace_id + 1, other))  # a second body; the first goes
    assert judge.revisions.traces_evicted == 1
    kept = judge.revisions.find(trace_id + 1)
    assert not isinstance(kept, str) and kept.kept[1] is copy
    assert bodies.bodies_held == 1 and bodies.bytes_held == len(body)
