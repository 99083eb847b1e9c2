"""The msgspec fast path for canonical OTLP/JSON (otlp/jsontyped.py) reads every record to
the same spans, values and diagnostics as the orjson path it stands in front of.

The orjson path is ``spans_from_json`` given what ``orjson.loads`` returns (unchanged code);
the fast path is ``spans_from_json`` given what ``parse_json`` returns for the same bytes.
"""

from __future__ import annotations

import base64
import json
import math
import sys
from typing import Any

import orjson
import pytest
from fixtures import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooltrail import dialects
from tooltrail.otlp import (
    DEFAULT_LIMITS,
    DecodeError,
    Diagnostic,
    Limits,
    LogRecord,
    encode_logs_request,
    read_log_records,
    read_spans,
)
from tooltrail.otlp.decode import otlpjson
from tooltrail.otlp.decode.jsontyped import TypedRequest, decode_typed, typed_spans
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.otlpjson import decode_json_request, parse_json, spans_from_json
from tooltrail.otlp.decode.span import SpanHead
from tooltrail.otlp.write.encode import logs_json_line

CORPUS_FILES = sorted(CORPUS.rglob("*.otlp.jsonl")) + sorted(CORPUS.glob("*/sdk-json/*.json"))
TRACE = "5a50218595e4f754599d6af1d3f8d89d"
SPAN = "db1518f67e439f59"
PARENT = "3fb244ff5120ecfc"
SMALL = Limits(max_attribute_value_bytes=8, max_attributes=3, max_depth=2, max_events_per_span=1)
MODES = [
    pytest.param({"lazy": True}, id="lazy"),
    pytest.param({"lazy": True, "interest": dialects.INTEREST}, id="lazy-interest"),
    pytest.param({"lazy": False}, id="eager"),
]


def _canon(value: Any) -> Any:
    """Values comparable with ``==`` (NaN equal to NaN), containers compared in order."""
    if isinstance(value, float) and math.isnan(value):
        return "<nan>"
    if isinstance(value, dict):
        return [(k, _canon(v)) for k, v in value.items()]
    if isinstance(value, (list, tuple)):
        return [_canon(v) for v in value]
    return value


def _plain(span: Any) -> tuple[Any, ...]:
    """Everything a span holds, lazy parts read (in one fixed order, so that late
    diagnostics come in the same order on both paths)."""
    head = (
        type(span).__name__,
        span.trace_id,
        span.span_id,
        span.parent_span_id,
        span.name,
        span.start_ns,
        span.end_ns,
        span.status_code,
        _canon(dict(span.resource)),
        span.scope_name,
        span.origin,
    )
    if isinstance(span, SpanHead):
        return head
    attributes = _canon(dict(span.attributes.items()))
    events = [(e.name, e.time_ns, _canon(dict(e.attributes))) for e in span.events]
    return (*head, span.kind, span.status_message, attributes, _canon(events))


def _read(doc: Any, limits: Limits, **mode: Any) -> tuple[Any, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    where = Where("dump.jsonl", 7, None, limits, diagnostics)
    try:
        spans = spans_from_json(doc, where, **mode)
    except DecodeError as exc:
        return ("DecodeError", str(exc)), diagnostics
    return [_plain(span) for span in spans], diagnostics


def _both(line: bytes, limits: Limits = DEFAULT_LIMITS, **mode: Any) -> tuple[Any, Any]:
    """(orjson path, fast path) results for one record."""
    return _read(orjson.loads(line), limits, **mode), _read(parse_json(line), limits, **mode)


def _is_typed(line: bytes, limits: Limits = DEFAULT_LIMITS, **mode: Any) -> bool:
    """Whether the fast path itself read the record (rather than handing it back)."""
    typed = decode_typed(line)
    if typed is None:
        return False
    where = Where("dump.jsonl", 7, None, limits, [])
    return typed_spans(typed.request, where, **mode) is not None


def _corpus_lines() -> list[tuple[str, bytes]]:
    out = []
    for path in CORPUS_FILES:
        for i, line in enumerate(path.read_bytes().splitlines()):
            if line.strip():
                out.append((f"{path.relative_to(CORPUS)}:{i + 1}", line))
    return out


CORPUS_LINES = _corpus_lines()


def test_the_corpus_has_json_lines_of_every_framework():
    assert len({name.split("/")[0] for name, _ in CORPUS_LINES}) >= 9


@pytest.mark.parametrize("mode", MODES)
def test_every_corpus_record_reads_to_the_same_spans_on_both_paths(mode):
    for name, line in CORPUS_LINES:
        assert _is_typed(line, **mode), name
        old, new = _both(line, **mode)
        assert new == old, name


@pytest.mark.parametrize("mode", MODES)
def test_every_corpus_record_under_small_limits_reads_the_same(mode):
    for name, line in CORPUS_LINES:
        old, new = _both(line, SMALL, **mode)
        assert old[1], name  # the limits were hit and reported
        assert new == old, name


def test_read_spans_over_the_corpus_equals_the_orjson_path(monkeypatch):
    def everything() -> list[Any]:
        diagnostics: list[Diagnostic] = []
        spans = read_spans(CORPUS, interest=dialects.INTEREST, diagnostics=diagnostics)
        return [[_plain(s) for s in spans], diagnostics]

    fast = everything()
    monkeypatch.setattr(otlpjson, "decode_typed", lambda data: None)
    assert fast == everything()
    assert len(fast[0]) > 1000


# --- records the fast path must hand back, and bad input -----------------------------------


def _request(span: dict, *, key: str = "scopeSpans", resource: Any = None) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": []} if resource is None else resource,
                key: [{"scope": {"name": "s"}, "spans": [span]}],
            }
        ]
    }


def _span(**fields: Any) -> dict:
    span = {
        "traceId": TRACE,
        "spanId": SPAN,
        "parentSpanId": PARENT,
        "name": "execute_tool lookup_order",
        "kind": 1,
        "startTimeUnixNano": "1796002339386388406",
        "endTimeUnixNano": "1796002339388009260",
        "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "lookup_order"}}],
        "status": {},
    }
    span.update(fields)
    return {k: v for k, v in span.items() if v is not _DROP}


_DROP = object()
_DEEP = {"kvlistValue": {"values": [{"key": "z", "value": {"intValue": 1}}]}}
for _ in range(2):
    _DEEP = {"arrayValue": {"values": [_DEEP]}}

#: Each: (what, request). Either the typed decode refuses them or the typed reader hands
#: them back; on both paths they must read the same.
HANDED_BACK = {
    "snake_case keys": {
        "resource_spans": [{"scope_spans": [{"spans": [{"trace_id": TRACE, "span_id": SPAN}]}]}]
    },
    "snake_case span keys": _request(
        {"trace_id": TRACE, "span_id": SPAN, "start_time_unix_nano": "5"}
    ),
    "instrumentationLibrarySpans": _request(_span(), key="instrumentationLibrarySpans"),
    "dict attributes": _request(_span(attributes={"a": 1, "b": {"stringValue": "x"}})),
    "base64 ids": _request(
        _span(
            traceId=base64.b64encode(bytes.fromhex(TRACE)).decode(),
            spanId=base64.b64encode(bytes.fromhex(SPAN)).decode(),
        )
    ),
    "all-zero trace id": _request(_span(traceId="0" * 32)),
    "all-zero span id": _request(_span(spanId="0" * 16)),
    "invalid hex id": _request(_span(spanId="zz" * 8)),
    "short id": _request(_span(spanId="abc")),
    "missing trace id": _request(_span(traceId=_DROP)),
    "bad parent id": _request(_span(parentSpanId="xyz")),
    "null parent id": _request(_span(parentSpanId=None)),
    "enum names": _request(_span(kind="SPAN_KIND_SERVER", status={"code": "STATUS_CODE_ERROR"})),
    "time not a number": _request(_span(startTimeUnixNano="soon")),
    "float time": _request(_span(endTimeUnixNano=1.5e18)),
    "empty times": _request(_span(startTimeUnixNano="", endTimeUnixNano=0)),
    "time past 64 bits": _request(_span(startTimeUnixNano=2**64 + 1)),
    "null kind": _request(_span(kind=None)),
    "name not a string": _request(_span(name=5)),
    "status not an object": _request(_span(status="error")),
    "status message not a string": _request(_span(status={"code": 2, "message": 7})),
    "events not a list": _request(_span(events={"name": "e"})),
    "bad event": _request(_span(events=[5, {"name": 3}, {"name": "ok", "timeUnixNano": "x"}])),
    "events past the limit": _request(_span(events=[{"name": f"e{i}"} for i in range(3)])),
    "attribute without key": _request(_span(attributes=[{"value": {"stringValue": "v"}}])),
    "attribute key not a string": _request(_span(attributes=[{"key": 1, "value": {}}])),
    "attribute not an object": _request(_span(attributes=["k"])),
    "attributes past the limit": _request(
        _span(attributes=[{"key": f"k{i}", "value": {"intValue": i}} for i in range(5)])
    ),
    "attribute null value": _request(_span(attributes=[{"key": "k", "value": None}])),
    "attribute missing value": _request(_span(attributes=[{"key": "k"}])),
    "attribute value not an object": _request(_span(attributes=[{"key": "k", "value": "v"}])),
    "wrong AnyValue types": _request(
        _span(
            attributes=[
                {"key": "s", "value": {"stringValue": 5}},
                {"key": "i", "value": {"intValue": "five"}},
                {"key": "b", "value": {"boolValue": "yes"}},
                {"key": "d", "value": {"doubleValue": "much"}},
                {"key": "y", "value": {"bytesValue": "!!"}},
                {"key": "a", "value": {"arrayValue": 3}},
            ]
        )
    ),
    "two members in one AnyValue": _request(
        _span(attributes=[{"key": "k", "value": {"stringValue": "a", "intValue": "5"}}])
    ),
    "snake_case AnyValue": _request(_span(attributes=[{"key": "k", "value": {"int_value": 5}}])),
    "long string cut": _request(
        _span(attributes=[{"key": "k", "value": {"stringValue": "x" * 100}}])
    ),
    "nested past the depth limit": _request(_span(attributes=[{"key": "k", "value": _DEEP}])),
    "resource not an object": _request(_span(), resource=["x"]),
    "resource attributes not a list": _request(_span(), resource={"attributes": 5}),
    "resource value cut": _request(
        _span(),
        resource={"attributes": [{"key": "service.name", "value": {"stringValue": "y" * 50}}]},
    ),
    "scope not an object": {"resourceSpans": [{"scopeSpans": [{"scope": 3, "spans": [_span()]}]}]},
    "unknown span field": _request(_span(somethingNew=1)),
    "logs document": {"resourceLogs": []},
    "not traces": {"hello": 1},
    "resourceSpans not a list": {"resourceSpans": {}},
    "spans not a list": {"resourceSpans": [{"scopeSpans": [{"spans": 5}]}]},
    "span not an object": {"resourceSpans": [{"scopeSpans": [{"spans": [5, _span()]}]}]},
    "document not an object": [1, 2],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("what", sorted(HANDED_BACK))
def test_a_record_outside_the_canonical_shape_reads_as_on_the_orjson_path(what, mode):
    line = json.dumps(HANDED_BACK[what]).encode()
    old, new = _both(line, SMALL, **mode)
    assert new == old


@pytest.mark.parametrize(
    "what", ["snake_case keys", "instrumentationLibrarySpans", "dict attributes"]
)
def test_the_typed_decode_refuses_other_spellings(what):
    assert not isinstance(parse_json(json.dumps(HANDED_BACK[what]).encode()), TypedRequest)


@pytest.mark.parametrize("what", ["base64 ids", "invalid hex id", "time not a number"])
def test_the_typed_reader_hands_back_records_it_cannot_read_without_reporting(what):
    typed = decode_typed(json.dumps(HANDED_BACK[what]).encode())
    assert typed is not None
    diagnostics: list[Diagnostic] = []
    where = Where("dump.jsonl", 1, None, Limits(), diagnostics)
    assert typed_spans(typed.request, where) is None
    assert diagnostics == []


def test_upper_case_ids_and_numeric_int64_stay_on_the_fast_path():
    line = json.dumps(
        _request(
            _span(
                traceId=TRACE.upper(),
                spanId=SPAN.upper(),
                startTimeUnixNano=1796002339386388406,
                attributes=[{"key": "n", "value": {"intValue": 9007199254740993}}],
            )
        )
    ).encode()
    assert _is_typed(line)
    spans, _ = _read(parse_json(line), Limits())
    assert spans[0][1:3] == (TRACE, SPAN)
    assert spans[0][5] == 1796002339386388406
    assert spans[0][13] == [("n", 9007199254740993)]


def test_an_integer_past_64_bits_in_a_value_reads_as_orjson_reads_it():
    big = 123456789012345678901234567890
    line = json.dumps(
        _request(
            _span(
                attributes=[
                    {"key": "i", "value": {"intValue": big}},
                    {"key": "a", "value": {"arrayValue": {"values": [{"doubleValue": -big}]}}},
                ]
            )
        )
    ).encode()
    assert _is_typed(line)
    old, new = _both(line)
    assert new == old
    assert dict(new[0][0][13])["i"] == int(float(big)) != big


def test_an_ambiguous_any_value_keeps_the_last_member_as_before():
    line = json.dumps(HANDED_BACK["two members in one AnyValue"]).encode()
    assert _is_typed(line)
    (spans, _), _ = _both(line)
    assert spans[0][13] == [("k", 5)]


@pytest.mark.parametrize(
    "line",
    [b'{"resourceSpans": [', b'{"resourceSpans": []} x', b"", b'{"a": "\xff"}', b"\xef\xbb\xbf{}"],
)
def test_invalid_json_gives_the_same_message_as_before(line):
    with pytest.raises(orjson.JSONDecodeError) as expected:
        orjson.loads(line)
    with pytest.raises(DecodeError) as got:
        parse_json(line)
    assert got.value.reason == f"invalid JSON ({expected.value})"


def test_a_str_request_with_a_lone_surrogate_gives_the_same_message_as_before():
    text = '{"resourceSpans": [], "x": "\ud800"}'
    with pytest.raises(orjson.JSONDecodeError) as expected:
        orjson.loads(text)
    with pytest.raises(DecodeError) as got:
        decode_json_request(text)
    assert got.value.reason == f"invalid JSON ({expected.value})"


def test_a_str_request_reads_as_its_bytes_do():
    line = CORPUS_LINES[-1][1]
    assert isinstance(parse_json(line.decode()), TypedRequest)
    from_text = decode_json_request(line.decode(), lazy=True)
    from_bytes = decode_json_request(line, lazy=True)
    assert [_plain(s) for s in from_text] == [_plain(s) for s in from_bytes]


def _nested(depth: int) -> bytes:
    """A record with one attribute value nested ``depth`` arrays deep (3 JSON levels each)."""
    value = b'{"stringValue": "x"}'
    for _ in range(depth):
        value = b'{"arrayValue": {"values": [' + value + b"]}}"
    span = b'{"traceId": "%s", "spanId": "%s", "attributes": [{"key": "k", "value": %s}]}'
    span = span % (TRACE.encode(), SPAN.encode(), value)
    return b'{"resourceSpans": [{"scopeSpans": [{"spans": [' + span + b"]}]}]}"


@pytest.mark.parametrize("limit", [1000, 5000, 20_000])
def test_nesting_orjson_refuses_is_refused_whatever_the_recursion_limit(limit):
    line = _nested(600)  # 1200+ levels of JSON objects and lists
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        with pytest.raises(DecodeError, match="invalid JSON"):
            parse_json(line)
    finally:
        sys.setrecursionlimit(previous)


def _deep_at(place: str, n: int) -> bytes:
    """A record with ``n`` nested lists in one of the places that hold plain JSON."""
    nest = "[" * n + "]" * n
    span = f'"traceId": "{TRACE}", "spanId": "{SPAN}"'
    resource = scope = '{"name": "s"}'
    if place in ("events", "links"):
        span += f', "{place}": [{nest}]'
    elif place == "values":
        span += f', "attributes": [{{"key": "k", "value": {{"arrayValue": {{"values": {nest}}}}}}}]'
    elif place == "resource":
        resource = f'{{"attributes": [], "x": {nest}}}'
    else:
        scope = f'{{"name": "s", "x": {nest}}}'
    return (
        f'{{"resourceSpans": [{{"resource": {resource}, "scopeSpans": '
        f'[{{"scope": {scope}, "spans": [{{{span}}}]}}]}}]}}'
    ).encode()


@pytest.mark.parametrize("place", ["values", "events", "links", "resource", "scope"])
def test_the_fast_path_reads_exactly_the_nesting_orjson_reads(place):
    """On Python 3.12+ (or with a raised recursion limit) msgspec itself nests deeper."""
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(5000)
    try:
        verdicts = set()
        for n in range(1000, 1030):
            line = _deep_at(place, n)
            try:
                orjson.loads(line)
                readable = True
            except orjson.JSONDecodeError:
                readable = False
            verdicts.add(readable)
            assert (decode_typed(line) is not None) == readable, n
    finally:
        sys.setrecursionlimit(previous)
    assert verdicts == {True, False}  # the boundary lies in the range


def test_nesting_orjson_reads_reads_the_same_on_both_paths():
    line = _nested(100)
    old, new = _both(line)
    assert new == old


def test_decode_json_request_of_bytes_equals_decoding_the_parsed_request():
    line = CORPUS_LINES[0][1]
    fast = decode_json_request(line, interest=dialects.INTEREST, lazy=True)
    plain = decode_json_request(orjson.loads(line), interest=dialects.INTEREST, lazy=True)
    assert [_plain(s) for s in fast] == [_plain(s) for s in plain]


def test_a_logs_reader_still_skips_trace_lines(tmp_path):
    path = tmp_path / "mixed.jsonl"
    record = LogRecord(trace_id=TRACE, span_id=SPAN, event_name="gen_ai.evaluation.result")
    path.write_bytes(CORPUS_LINES[0][1] + b"\n" + logs_json_line(encode_logs_request([record])))
    diagnostics: list[Diagnostic] = []
    records = list(read_log_records(path, diagnostics=diagnostics))
    assert [(r.trace_id, r.event_name) for r in records] == [(TRACE, "gen_ai.evaluation.result")]
    assert diagnostics == []


# --- generated canonical records -------------------------------------------------------------

_INT64 = st.integers(-(2**63), 2**63 - 1)
#: Any text JSON can carry (no lone surrogates: neither parser accepts them).
_TEXT = st.characters(codec="utf-8")
_KEYS = st.sampled_from(
    ["gen_ai.operation.name", "gen_ai.tool.name", "traceloop.span.kind", "k", "x.y", "é"]
) | st.text(_TEXT, max_size=6)


def _hex_id(size: int) -> st.SearchStrategy[str]:
    ids = st.binary(min_size=size, max_size=size).filter(any).map(bytes.hex)
    return st.tuples(ids, st.booleans()).map(lambda t: t[0].upper() if t[1] else t[0])


_SCALARS = st.one_of(
    st.text(_TEXT, max_size=12).map(lambda s: {"stringValue": s}),
    st.one_of(_INT64, _INT64.map(str), st.integers(-(10**25), 10**25)).map(
        lambda i: {"intValue": i}
    ),
    st.booleans().map(lambda b: {"boolValue": b}),
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.integers(-(10**22), 10**22),
        st.sampled_from(["NaN", "Infinity", "-Infinity", "1.5"]),
    ).map(lambda d: {"doubleValue": d}),
    st.binary(max_size=12).map(lambda b: {"bytesValue": base64.b64encode(b).decode()}),
    st.just({}),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda vs: {"arrayValue": {"values": vs}}),
        st.lists(st.tuples(_KEYS, inner), max_size=3).map(
            lambda kvs: {"kvlistValue": {"values": [{"key": k, "value": v} for k, v in kvs]}}
        ),
    ),
    max_leaves=6,
)
_ATTRIBUTES = st.lists(
    st.tuples(_KEYS, _VALUES | st.none()).map(
        lambda kv: {"key": kv[0]} if kv[1] is None else {"key": kv[0], "value": kv[1]}
    ),
    max_size=5,
)
_TIME = st.integers(0, 2**63 - 1)
_EVENTS = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "name": st.text(_TEXT, max_size=5),
            "timeUnixNano": _TIME | _TIME.map(str),
            "attributes": _ATTRIBUTES,
        },
    ),
    max_size=2,
)
_SPANS = st.fixed_dictionaries(
    {
        "traceId": st.sampled_from([TRACE, TRACE.upper(), "0af7651916cd43dd8448eb211c80319c"]),
        "spanId": _hex_id(8),
        "startTimeUnixNano": _TIME | _TIME.map(str),
        "endTimeUnixNano": _TIME | _TIME.map(str),
    },
    optional={
        "parentSpanId": st.sampled_from(["", "0" * 16, PARENT]) | _hex_id(8),
        "name": st.sampled_from(["execute_tool x", "chat m", "ai.toolCall", "GET /", ""]),
        "kind": st.integers(0, 5),
        "attributes": _ATTRIBUTES,
        "events": _EVENTS,
        "status": st.fixed_dictionaries(
            {}, optional={"code": st.integers(0, 2), "message": st.text(_TEXT, max_size=5)}
        ),
        "flags": st.integers(0, 512),
        "traceState": st.just(""),
        "droppedAttributesCount": st.just(0),
        "links": st.just([]),
    },
)
_REQUESTS = st.lists(
    st.fixed_dictionaries(
        {
            "scopeSpans": st.lists(
                st.fixed_dictionaries(
                    {"spans": st.lists(_SPANS, max_size=4)},
                    optional={
                        "scope": st.fixed_dictionaries(
                            {}, optional={"name": st.text(_TEXT, max_size=4)}
                        )
                    },
                ),
                max_size=2,
            )
        },
        optional={"resource": st.fixed_dictionaries({"attributes": _ATTRIBUTES})},
    ),
    min_size=1,
    max_size=2,
).map(lambda groups: {"resourceSpans": groups})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    request=_REQUESTS,
    ascii_only=st.booleans(),
    limits=st.sampled_from([Limits(), SMALL]),
    mode=st.sampled_from([m.values[0] for m in MODES]),
)
def test_generated_canonical_records_read_the_same_on_both_paths(request, ascii_only, limits, mode):
    line = json.dumps(request, ensure_ascii=ascii_only).encode()
    assert _is_typed(line, limits, **mode)
    old, new = _both(line, limits, **mode)
    assert new == old


_BAD = st.sampled_from([None, "x", 5, -1.5, True, [], {}, [1], {"a": 1}, "0" * 16, 2**70])


def _mutate(request: dict, path: list[int], bad: Any) -> dict:
    """``request`` with one member somewhere replaced by ``bad``."""
    spots: list[tuple[Any, Any]] = []
    stack: list[Any] = [request]
    while stack:
        node = stack.pop()
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        for key in keys:
            spots.append((node, key))
            if isinstance(node[key], (dict, list)):
                stack.append(node[key])
    if spots:
        node, key = spots[path[0] % len(spots)]
        node[key] = bad
    return request


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    request=_REQUESTS,
    where=st.lists(st.integers(0, 10**6), min_size=1, max_size=1),
    bad=_BAD,
    limits=st.sampled_from([Limits(), SMALL]),
    mode=st.sampled_from([m.values[0] for m in MODES]),
)
def test_generated_records_with_one_wrong_member_read_the_same_on_both_paths(
    request, where, bad, limits, mode
):
    line = json.dumps(_mutate(json.loads(json.dumps(request)), where, bad)).encode()
    old, new = _both(line, limits, **mode)
    assert new == old


_SMALL_LINES = sorted((line for _, line in CORPUS_LINES), key=len)[:20]
_BYTES = b'{}[]",:0123456789.eE+-tfnul \\/xyz\x00\x7f\xc3\xa9\xff'


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.sampled_from(_SMALL_LINES),
    edits=st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from("sdi"), st.sampled_from(list(_BYTES))),
        min_size=1,
        max_size=3,
    ),
    mode=st.sampled_from([m.values[0] for m in MODES]),
)
def test_mutated_bytes_the_fast_path_reads_are_json_orjson_reads_the_same(seed, edits, mode):
    line = bytearray(seed)
    for at, op, byte in edits:
        at %= len(line)
        if op == "s":
            line[at] = byte
        elif op == "d":
            del line[at]
        else:
            line.insert(at, byte)
    if decode_typed(bytes(line)) is None:
        return
    orjson.loads(bytes(line))  # whatever msgspec reads, orjson reads
    old, new = _both(bytes(line), SMALL, **mode)
    assert new == old
