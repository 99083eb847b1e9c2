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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooltrail.otlp import Limits, frame, read_spans
from tooltrail.otlp.census import span_counts

CORPUS = Path(__file__).parent / "data" / "corpus"
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
    "base64 span id": lambda s: s.update(
        spanId=base64.b64encode(bytes.fromhex(s["spanId"])).decode()
    ),
    "snake_case ids": lambda s: s.update(trace_id=s.pop("traceId"), span_id=s.pop("spanId")),
    "all-zero span id": lambda s: s.update(spanId="0" * 16),
    "short trace id": lambda s: s.update(traceId="abc"),
    "null name": lambda s: s.update(name=None),
    "enum name kind": lambda s: s.update(kind="SPAN_KIND_CLIENT"),
    "bad kind": lambda s: s.update(kind="SIDEWAYS"),
    "numeric times": lambda s: s.update(startTimeUnixNano=5, endTimeUnixNano=7.0),
    "bad time": lambda s: s.update(startTimeUnixNano="soon"),
    "status as text": lambda s: s.update(status="ERROR"),
    "status code name": lambda s: s.update(status={"code": "STATUS_CODE_ERROR"}),
    "events not a list": lambda s: s.update(events={"name": "e"}),
    "null events": lambda s: s.update(events=None),
    "zero parent": lambda s: s.update(parentSpanId="0" * 16),
    "bad parent": lambda s: s.update(parentSpanId="xyz"),
}


@pytest.mark.parametrize("change", sorted(ODD_SPANS))
def test_the_census_applies_the_span_readers_rules_to_odd_json_spans(tmp_path, change):
    doc = orjson.loads(LINE)
    ODD_SPANS[change](_span_of(doc))
    path = _write(tmp_path, [doc, orjson.loads(LINE)])
    assert span_counts(path) == _read_counts(path)


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
    from tooltrail.otlp.span import Span

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
    [None, 0, 1, 2.5, "", "x", "12", "SPAN_KIND_SERVER", [], {}, {"code": 2}, "ab" * 8, "0" * 32]
)
_KEYS = st.sampled_from(
    ["traceId", "trace_id", "spanId", "span_id", "parentSpanId", "name", "kind", "status",
     "startTimeUnixNano", "end_time_unix_nano", "events", "attributes"]
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
