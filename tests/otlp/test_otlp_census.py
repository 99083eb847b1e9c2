"""The census (``otlp.census.span_counts``) counts exactly the spans ``read_spans`` yields.

``read_traces`` trusts these counts to convert a trace right after its last span, so every
difference would split or delay a trace. Checked on the corpus, on hand-made odd spans and
on OTLP/JSON documents mutated field by field.
"""

from __future__ import annotations

import base64
from collections import Counter
from pathlib import Path

import orjson
import pytest
from fixtures import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooltrail.otlp import Limits, frame, read_spans
from tooltrail.otlp.read.census import span_counts

FILES = sorted(p for p in CORPUS.rglob("*") if p.suffix in (".pb", ".jsonl", ".json"))
FILES = [p for p in FILES if not p.name.endswith(".truth.json")]
LINE = (CORPUS / "strands" / "g_parallel_calls.otlp.jsonl").read_bytes().splitlines()[0]


def _read_counts(path: Path, **kwargs) -> dict[str, int]:
    return dict(Counter(span.trace_id for span in read_spans(path, **kwargs)))


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_census_of_a_corpus_file_matches_the_spans_read(path):
    assert span_counts(path) == _read_counts(path) != {}


def _span_of(doc: dict) -> dict:
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]


def _write(tmp_path: Path, docs: list[dict], extra: bytes = b"") -> Path:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(d) for d in docs) + b"\n" + extra)
    return path


ODD_SPANS = {
    "upper-case ids": lambda s: s.update(traceId=s["traceId"].upper()),
    "base64 trace id": lambda s: s.update(
        traceId=base64.b64encode(bytes.fromhex(s["traceId"])).decode()
    ),
    "base64 span id": lambda s: s.update(
        spanId=base64.b64encode(bytes.fromhex(s["spanId"])).decode()
    ),
    "snake_case ids": lambda s: s.update(trace_id=s.pop("traceId"), span_id=s.pop("spanId")),
    "snake_case bad parent alone": lambda s: (
        s.update(parent_span_id="xyz") or s.pop("parentSpanId")
    ),
    "snake_case bad parent too": lambda s: s.update(parent_span_id="xyz"),
    "snake_case times": lambda s: s.update(
        start_time_unix_nano=s.pop("startTimeUnixNano"), end_time_unix_nano="soon"
    ),
    "all-zero span id": lambda s: s.update(spanId="0" * 16),
    "all-zero trace id": lambda s: s.update(traceId="0" * 32),
    "short trace id": lambda s: s.update(traceId="abc"),
    "trace id not a string": lambda s: s.update(traceId=7),
    "span id of 15 digits": lambda s: s.update(spanId=s["spanId"][:15]),
    "span id of 17 digits": lambda s: s.update(spanId=s["spanId"] + "a"),
    "span id with a space": lambda s: s.update(spanId=s["spanId"][:8] + " " + s["spanId"][9:]),
    "span id not hex": lambda s: s.update(spanId="zz" + s["spanId"][2:]),
    "missing span id": lambda s: s.pop("spanId"),
    "null name": lambda s: s.update(name=None),
    "name not a string": lambda s: s.update(name=["a"]),
    "non-ASCII name": lambda s: s.update(name="réservation ✈"),
    "enum name kind": lambda s: s.update(kind="SPAN_KIND_CLIENT"),
    "bad kind": lambda s: s.update(kind="SIDEWAYS"),
    "float kind": lambda s: s.update(kind=1.0),
    "boolean kind": lambda s: s.update(kind=True),
    "numeric times": lambda s: s.update(startTimeUnixNano=5, endTimeUnixNano=7.0),
    "bad time": lambda s: s.update(startTimeUnixNano="soon"),
    "empty time": lambda s: s.update(endTimeUnixNano=""),
    "missing time": lambda s: s.pop("startTimeUnixNano"),
    "signed time": lambda s: s.update(startTimeUnixNano="+5"),
    "time with spaces": lambda s: s.update(endTimeUnixNano=" 7 "),
    "time with underscores": lambda s: s.update(startTimeUnixNano="1_000"),
    "time in Arabic-Indic digits": lambda s: s.update(startTimeUnixNano="\u0663\u0664"),
    "time in superscript digits": lambda s: s.update(endTimeUnixNano="\u00b2"),
    "time of 641 digits": lambda s: s.update(startTimeUnixNano="9" * 641),
    "time of 5000 digits": lambda s: s.update(endTimeUnixNano="9" * 5000),
    "status as text": lambda s: s.update(status="ERROR"),
    "empty status text": lambda s: s.update(status=""),
    "null status": lambda s: s.update(status=None),
    "status code name": lambda s: s.update(status={"code": "STATUS_CODE_ERROR"}),
    "status message not a string": lambda s: s.update(status={"code": 2, "message": 5}),
    "events not a list": lambda s: s.update(events={"name": "e"}),
    "null events": lambda s: s.update(events=None),
    "events of anything": lambda s: s.update(events=[1, "x", None, {"name": 2}]),
    "attributes not a list": lambda s: s.update(attributes="x"),
    "zero parent": lambda s: s.update(parentSpanId="0" * 16),
    "empty parent": lambda s: s.update(parentSpanId=""),
    "null parent": lambda s: s.update(parentSpanId=None),
    "bad parent": lambda s: s.update(parentSpanId="xyz"),
    "parent of 15 digits": lambda s: s.update(parentSpanId="a" * 15),
    "parent of 18 digits": lambda s: s.update(parentSpanId="ab" * 9),
    "upper-case parent": lambda s: s.update(parentSpanId="AB" * 8),
}


@pytest.mark.parametrize("index", [0, 4], ids=["first span of its trace", "a later span"])
@pytest.mark.parametrize("change", sorted(ODD_SPANS))
def test_the_census_applies_the_span_readers_rules_to_odd_json_spans(tmp_path, change, index):
    doc = orjson.loads(LINE)
    ODD_SPANS[change](doc["resourceSpans"][0]["scopeSpans"][0]["spans"][index])
    path = _write(tmp_path, [doc, orjson.loads(LINE)])
    assert span_counts(path) == _read_counts(path)


def _uneven(doc: dict, key: str) -> None:
    """Two ids of the wrong lengths that join into the right number of hex digits."""
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[1][key], spans[2][key] = "ab" * 7 + "c", "ab" * 8 + "c"


def _second_group(doc: dict) -> None:
    doc["resourceSpans"].append(orjson.loads(LINE)["resourceSpans"][0])


ODD_LINES = {
    "span ids of 15 and 17 digits": lambda d: _uneven(d, "spanId"),
    "parents of 15 and 17 digits": lambda d: _uneven(d, "parentSpanId"),
    "null resource": lambda d: d["resourceSpans"][0].update(resource=None),
    "resource not an object": lambda d: d["resourceSpans"][0].update(resource=[1]),
    "null scopeSpans": lambda d: d["resourceSpans"][0].update(scopeSpans=None),
    "null spans": lambda d: d["resourceSpans"][0]["scopeSpans"][0].update(spans=None),
    "no spans": lambda d: d["resourceSpans"][0]["scopeSpans"][0].update(spans=[]),
    "spans not a list": lambda d: d["resourceSpans"][0]["scopeSpans"][0].update(spans={}),
    "a span not an object": lambda d: d["resourceSpans"][0]["scopeSpans"][0]["spans"].insert(1, 5),
    "snake_case scope_spans": lambda d: d["resourceSpans"][0].update(
        scope_spans=d["resourceSpans"][0].pop("scopeSpans")
    ),
    "instrumentationLibrarySpans too": lambda d: d["resourceSpans"][0].update(
        instrumentationLibrarySpans=[{"spans": [dict(_span_of(d), spanId="ab" * 8)]}]
    ),
    "snake_case resource_spans": lambda d: d.update(resource_spans=d.pop("resourceSpans")),
    "no resourceSpans": lambda d: d.pop("resourceSpans"),
    "resourceSpans not a list": lambda d: d.update(resourceSpans={}),
    "the same trace in two groups": _second_group,
    "a second scope with an odd span": lambda d: d["resourceSpans"][0]["scopeSpans"].append(
        {"spans": [dict(_span_of(d), spanId="cd" * 8, kind="SPAN_KIND_SERVER")]}
    ),
}


@pytest.mark.parametrize("change", sorted(ODD_LINES))
def test_the_census_applies_the_span_readers_rules_to_odd_json_lines(tmp_path, change):
    doc = orjson.loads(LINE)
    ODD_LINES[change](doc)
    path = _write(tmp_path, [doc, orjson.loads(LINE)])
    assert span_counts(path) == _read_counts(path)


@pytest.mark.parametrize("value", [b'"zz"', b"7"])
@pytest.mark.parametrize("key", [b"spanId", b"kind", b"startTimeUnixNano", b"parentSpanId"])
def test_a_member_written_twice_is_read_as_the_reader_reads_it(tmp_path, key, value):
    member = b'"' + key + b'":'
    path = tmp_path / "t.jsonl"
    path.write_bytes(LINE.replace(member, member + value + b"," + member, 1) + b"\n")
    assert span_counts(path) == _read_counts(path)


def _sdk_batches(tmp_path: Path) -> Path:
    """Spans recorded by the OpenTelemetry SDK, written as collector JSON lines of a few
    traces each (the benchmark's shape): nested spans, events, error statuses, a trace over
    two lines."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import SpanKind, Status, StatusCode

    from tooltrail.otlp import encode_for_file

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "census"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("census-tests")
    for run in range(6):
        with tracer.start_as_current_span("invoke_agent support", attributes={"run": run}):
            for step in range(3):
                with tracer.start_as_current_span("chat gpt-4o", kind=SpanKind.CLIENT) as chat:
                    chat.add_event("gen_ai.choice", {"index": step})
                with tracer.start_as_current_span("execute_tool lookup_order") as tool:
                    if step == 2:
                        tool.set_status(Status(StatusCode.ERROR, "timeout"))
    spans = list(exporter.get_finished_spans())
    half = len(spans) // 2 + 3  # not on a trace boundary
    path = tmp_path / "sdk.jsonl"
    path.write_bytes(
        b"".join(encode_for_file(encode_spans(b), "json") for b in (spans[:half], spans[half:]))
    )
    return path


def test_the_census_of_sdk_batches_matches_the_spans_read(tmp_path):
    path = _sdk_batches(tmp_path)
    counts = span_counts(path)
    assert counts == _read_counts(path)
    assert sorted(counts.values()) == [7] * 6


def test_canonical_lines_are_counted_without_the_general_json_route(tmp_path, monkeypatch):
    from tooltrail.otlp.read import census

    def refuse(line, where):
        raise AssertionError("a canonical line took the general route")

    monkeypatch.setattr(census, "_trace_ids_of_heads", refuse)
    path = _sdk_batches(tmp_path)
    assert span_counts(path) == _read_counts(path)
    path = _write(tmp_path, [orjson.loads(LINE)])
    assert span_counts(path) == _read_counts(path) != {}


def test_a_bad_resource_rejects_the_whole_line_in_the_census_too(tmp_path):
    doc = orjson.loads(LINE)
    doc["resourceSpans"][0]["resource"] = {"attributes": [{"key": 7}]}
    path = _write(tmp_path, [doc])
    assert span_counts(path) == _read_counts(path) == {}


def test_lines_that_are_not_utf8_or_not_json_count_nothing(tmp_path):
    path = _write(tmp_path, [orjson.loads(LINE)], b'{"resourceSpans": [\xff]}\nnot json\n')
    assert span_counts(path) == _read_counts(path)


def test_protobuf_spans_with_bad_ids_are_not_counted(tmp_path):
    from tooltrail.otlp import encode_request
    from tooltrail.otlp.decode.span import Span

    request = encode_request([Span("ab" * 16, "01" * 8), Span("ab" * 16, "02" * 8)])
    request.resource_spans[0].scope_spans[0].spans[1].span_id = b"\x00" * 8
    path = tmp_path / "t.pb"
    path.write_bytes(frame(request.SerializeToString()))
    assert span_counts(path) == _read_counts(path) == {"ab" * 16: 1}


def test_the_census_honours_the_record_limit(tmp_path):
    path = _write(tmp_path, [orjson.loads(LINE)])
    limits = Limits(max_record_bytes=len(LINE) // 2)
    assert span_counts(path, limits=limits) == _read_counts(path, limits=limits) == {}


_VALUES = st.sampled_from(
    [
        None,
        0,
        1,
        2.5,
        True,
        "",
        "x",
        "12",
        "+12",
        " 12",
        "1_2",
        "\u0661",
        "SPAN_KIND_SERVER",
        [],
        [1],
        {},
        {"code": 2},
        {"code": "2"},
        "ab" * 8,
        "AB" * 8,
        "0" * 16,
        "ab" * 16,
        "0" * 32,
        "ab cd ef 01 23 45",
        "ab" * 7 + "z",
    ]
)
_KEYS = st.sampled_from(
    ["traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id", "name",
     "kind", "status", "startTimeUnixNano", "endTimeUnixNano", "end_time_unix_nano", "events",
     "attributes"]
)  # fmt: skip


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.integers(0, 50), _KEYS, _VALUES, st.booleans()), max_size=6))
def test_the_census_matches_the_reader_on_mutated_json_spans(tmp_path, edits):
    doc = orjson.loads(LINE)
    spans = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    for index, key, value, delete in edits:
        span = spans[index % len(spans)]
        if delete:
            span.pop(key, None)
        else:
            span[key] = value
    path = _write(tmp_path, [doc])
    assert span_counts(path) == _read_counts(path)
