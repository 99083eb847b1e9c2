"""Decoding then encoding spans keeps every field of the OTLP data model.

What ``serve --dump/--forward``, ``eval --annotate-traces`` and ``OtlpFileWriter.write_spans``
write must be what they read: a forwarder that drops links or flags breaks the user's
backend. Each test decodes a ``TracesData`` (generated, or a corpus file), encodes the spans
again and compares the result with the original message field for field, after normalising
only what OTLP treats as the same data:

- spans of equal resource and equal scope may be grouped together (the encoder groups them,
  in order of first appearance); a group without spans carries nothing;
- an empty resource, scope, status or attribute value message is the same as none;
- NaN is NaN, whatever its bits.

Attribute order, duplicate-free keys, every id, count, flag and string are compared as they are.
The reference for JSON input is ``google.protobuf.json_format`` over the same line with its
hex ids turned into the base64 that parser expects: independent of tooltrail's reader.
"""

from __future__ import annotations

import base64
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from fixtures import CORPUS, SHARED_CORPUS
from google.protobuf import json_format, text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, TracesData

from tooltrail.otlp import (
    Diagnostic,
    OtlpFileWriter,
    decode_json_request,
    decode_request,
    encode_request,
    json_line,
    read_spans,
)

# --- normalising what OTLP says is equivalent -----------------------------------------------


def _canonical_value(value: AnyValue) -> None:
    kind = value.WhichOneof("value")
    if kind == "double_value" and math.isnan(value.double_value):
        value.double_value = math.nan
    elif kind == "array_value":
        for item in value.array_value.values:
            _canonical_value(item)
    elif kind == "kvlist_value":
        _canonical_attributes(value.kvlist_value.values)


def _canonical_attributes(pairs: Any) -> None:
    for pair in pairs:
        _canonical_value(pair.value)
        if pair.value.ByteSize() == 0:  # an empty value, present or not
            pair.ClearField("value")


def canonical(message: Any) -> str:
    """``message`` (``TracesData`` or ``ExportTraceServiceRequest``) as text, normalised as
    the module docstring says."""
    out = TracesData()
    resources: dict[bytes, ResourceSpans] = {}
    scopes: dict[tuple[bytes, bytes], ScopeSpans] = {}
    for rs in message.resource_spans:
        shell = ResourceSpans()
        shell.CopyFrom(rs)
        shell.ClearField("scope_spans")
        _canonical_attributes(shell.resource.attributes)
        if shell.resource.ByteSize() == 0:
            shell.ClearField("resource")
        rkey = shell.SerializeToString(deterministic=True)
        for ss in rs.scope_spans:
            if not ss.spans:
                continue
            if rkey not in resources:
                resources[rkey] = out.resource_spans.add()
                resources[rkey].CopyFrom(shell)
            scope = ScopeSpans()
            scope.CopyFrom(ss)
            scope.ClearField("spans")
            _canonical_attributes(scope.scope.attributes)
            if scope.scope.ByteSize() == 0:
                scope.ClearField("scope")
            skey = (rkey, scope.SerializeToString(deterministic=True))
            if skey not in scopes:
                scopes[skey] = resources[rkey].scope_spans.add()
                scopes[skey].CopyFrom(scope)
            for span in ss.spans:
                copy = scopes[skey].spans.add()
                copy.CopyFrom(span)
                if copy.status.ByteSize() == 0:
                    copy.ClearField("status")
                _canonical_attributes(copy.attributes)
                for event in copy.events:
                    _canonical_attributes(event.attributes)
                for link in copy.links:
                    _canonical_attributes(link.attributes)
    return text_format.MessageToString(out, as_utf8=True)


def assert_same(reencoded: Any, original: Any) -> None:
    assert canonical(reencoded) == canonical(original)


# --- an independent reading of OTLP/JSON ----------------------------------------------------

_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def _ids_to_base64(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: base64.b64encode(bytes.fromhex(v)).decode()
            if k in _ID_KEYS and isinstance(v, str)
            else _ids_to_base64(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_ids_to_base64(v) for v in value]
    return value


def reference_json(line: bytes) -> TracesData:
    """An OTLP/JSON request as ``TracesData``, read by protobuf's own JSON parser."""
    return json_format.ParseDict(_ids_to_base64(orjson.loads(line)), TracesData())


# --- generated TracesData ---------------------------------------------------------------------

_text = st.text(max_size=12)
_uint32 = st.integers(0, (1 << 32) - 1)
_uint64 = st.integers(0, (1 << 64) - 1)


def _nonzero(raw: bytes) -> bytes:
    return raw if any(raw) else raw[:-1] + b"\x01"  # an all-zero id is invalid


def _id(size: int) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=size, max_size=size).map(_nonzero)


def _scalar() -> st.SearchStrategy[AnyValue]:
    return st.one_of(
        _text.map(lambda v: AnyValue(string_value=v)),
        st.booleans().map(lambda v: AnyValue(bool_value=v)),
        st.integers(-(1 << 63), (1 << 63) - 1).map(lambda v: AnyValue(int_value=v)),
        st.floats().map(lambda v: AnyValue(double_value=v)),
        st.binary(max_size=12).map(lambda v: AnyValue(bytes_value=v)),
        st.just(AnyValue()),
    )


def _array(items: list[AnyValue]) -> AnyValue:
    value = AnyValue()
    value.array_value.SetInParent()
    value.array_value.values.extend(items)
    return value


def _kvlist(pairs: list[KeyValue]) -> AnyValue:
    value = AnyValue()
    value.kvlist_value.SetInParent()
    value.kvlist_value.values.extend(pairs)
    return value


def _pairs(values: st.SearchStrategy[AnyValue], max_size: int) -> st.SearchStrategy[list]:
    return st.lists(
        st.builds(KeyValue, key=_text, value=values),
        max_size=max_size,
        unique_by=lambda kv: kv.key,  # OTLP: keys MUST be unique
    )


_any_value = st.recursive(
    _scalar(),
    lambda inner: st.one_of(st.lists(inner, max_size=3).map(_array), _pairs(inner, 3).map(_kvlist)),
    max_leaves=8,
)
_attributes = _pairs(_any_value, 4)


@st.composite
def traces_data(draw: st.DrawFn) -> TracesData:
    data = TracesData()
    for _ in range(draw(st.integers(1, 2))):
        rs = data.resource_spans.add(schema_url=draw(_text))
        if draw(st.booleans()):
            rs.resource.attributes.extend(draw(_attributes))
            rs.resource.dropped_attributes_count = draw(_uint32)
            for _ in range(draw(st.integers(0, 2))):
                rs.resource.entity_refs.add(
                    schema_url=draw(_text),
                    type=draw(_text),
                    id_keys=draw(st.lists(_text, max_size=2)),
                    description_keys=draw(st.lists(_text, max_size=2)),
                )
        for _ in range(draw(st.integers(1, 2))):
            ss = rs.scope_spans.add(schema_url=draw(_text))
            if draw(st.booleans()):
                ss.scope.name = draw(_text)
                ss.scope.version = draw(_text)
                ss.scope.attributes.extend(draw(_attributes))
                ss.scope.dropped_attributes_count = draw(_uint32)
            for _ in range(draw(st.integers(1, 3))):
                _span(draw, ss.spans.add())
    return data


def _span(draw: st.DrawFn, span: Any) -> None:
    span.trace_id = draw(_id(16))
    span.span_id = draw(_id(8))
    span.trace_state = draw(_text)
    if draw(st.booleans()):
        span.parent_span_id = draw(_id(8))
    span.flags = draw(_uint32)
    span.name = draw(_text)
    span.kind = draw(st.integers(0, 5))
    span.start_time_unix_nano = draw(_uint64)
    span.end_time_unix_nano = draw(_uint64)
    span.attributes.extend(draw(_attributes))
    span.dropped_attributes_count = draw(_uint32)
    for _ in range(draw(st.integers(0, 2))):
        span.events.add(
            time_unix_nano=draw(_uint64),
            name=draw(_text),
            attributes=draw(_attributes),
            dropped_attributes_count=draw(_uint32),
        )
    span.dropped_events_count = draw(_uint32)
    for _ in range(draw(st.integers(0, 2))):
        span.links.add(
            trace_id=draw(_id(16)),
            span_id=draw(_id(8)),
            trace_state=draw(_text),
            attributes=draw(_attributes),
            dropped_attributes_count=draw(_uint32),
            flags=draw(_uint32),
        )
    span.dropped_links_count = draw(_uint32)
    if draw(st.booleans()):
        span.status.code = draw(st.integers(0, 2))
        span.status.message = draw(_text)


def _decoded(data: TracesData, how: str) -> list[Any]:
    diagnostics: list[Diagnostic] = []
    if how == "protobuf lazy":
        spans = decode_request(data.SerializeToString(), lazy=True, diagnostics=diagnostics)
    elif how == "protobuf eager":
        spans = decode_request(data.SerializeToString(), lazy=False, diagnostics=diagnostics)
    elif how == "json typed":  # the canonical shape: read by the msgspec path
        spans = decode_json_request(json_line(data), lazy=True, diagnostics=diagnostics)
    elif how == "json plain":  # a parsed document: read by the orjson path
        spans = decode_json_request(orjson.loads(json_line(data)), diagnostics=diagnostics)
    else:
        raise AssertionError(how)
    list(spans)  # (lazily decoded values report late)
    for span in spans:
        dict(span.attributes.items())
        list(span.events)
    assert diagnostics == []
    return spans


_DECODERS = ["protobuf lazy", "protobuf eager", "json typed", "json plain"]
_SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("how", _DECODERS)
@_SETTINGS
@given(data=traces_data())
def test_decoded_then_encoded_traces_equal_the_original(how: str, data: TracesData) -> None:
    assert_same(encode_request(_decoded(data, how)), data)


def _written(spans: list[Any], format: str) -> list[TracesData]:
    """``spans`` through ``OtlpFileWriter.write_spans``, the file read back independently."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "out")
        with OtlpFileWriter(path, format=format) as writer:  # type: ignore[arg-type]
            writer.write_spans(spans)
        raw = Path(path).read_bytes()
    if format == "json":
        return [reference_json(line) for line in raw.splitlines()]
    messages = []
    while raw:
        size = int.from_bytes(raw[:4], "big")
        messages.append(TracesData.FromString(raw[4 : 4 + size]))
        raw = raw[4 + size :]
    return messages


def _input_file(data: TracesData, framing: str, tmp: str) -> str:
    path = os.path.join(tmp, f"in.{framing}")
    body = data.SerializeToString()
    if framing == "framed":
        Path(path).write_bytes(len(body).to_bytes(4, "big") + body)
    elif framing == "single":
        Path(path).write_bytes(body)
    else:
        Path(path).write_bytes(json_line(data))
    return path


@pytest.mark.parametrize("framing", ["framed", "single", "jsonl"])
@pytest.mark.parametrize("format", ["proto", "json"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=traces_data())
def test_files_read_then_written_hold_the_original(
    framing: str, format: str, data: TracesData
) -> None:
    diagnostics: list[Diagnostic] = []
    with tempfile.TemporaryDirectory() as tmp:
        spans = list(read_spans([_input_file(data, framing, tmp)], diagnostics=diagnostics))
        (written,) = _written(spans, format)
    assert diagnostics == []
    assert_same(written, data)


def test_a_protobuf_message_starting_like_json_is_read_as_protobuf(tmp_path: Path) -> None:
    data = TracesData()
    rs = data.resource_spans.add()
    rs.scope_spans.add().spans.add(trace_id=b"\1" * 16, span_id=b"\2" * 8, name="x" * 89)
    body = data.SerializeToString()
    assert body[:2] == b"\n{"
    path = tmp_path / "one.pb"
    path.write_bytes(body)
    diagnostics: list[Diagnostic] = []
    assert len(list(read_spans([str(path)], diagnostics=diagnostics))) == 1
    assert diagnostics == []


# --- the cases, spelled out ---------------------------------------------------------


def _one_span_with_a_link() -> TracesData:
    data = TracesData()
    rs = data.resource_spans.add(schema_url="https://opentelemetry.io/schemas/1.26.0")
    rs.resource.attributes.add(key="service.name").value.string_value = "agent"
    ss = rs.scope_spans.add(schema_url="https://opentelemetry.io/schemas/1.30.0")
    ss.scope.name = "agent.tracer"
    ss.scope.version = "1.2.3"
    ss.scope.attributes.add(key="scope.kind").value.string_value = "tools"
    span = ss.spans.add(
        trace_id=bytes(range(1, 17)),
        span_id=bytes(range(1, 9)),
        name="execute_tool lookup",
        flags=257,
        trace_state="vendor=abc",
    )
    link = span.links.add(trace_id=bytes(range(2, 18)), span_id=bytes(range(2, 10)), flags=1)
    link.attributes.add(key="link.reason").value.string_value = "retry of"
    return data


@pytest.mark.parametrize("how", _DECODERS)
def test_flags_and_a_link_survive_re_encoding(how: str) -> None:
    data = _one_span_with_a_link()
    (span,) = encode_request(_decoded(data, how)).resource_spans[0].scope_spans[0].spans
    assert span.flags == 257
    assert span.trace_state == "vendor=abc"
    assert [(link.trace_id, link.flags) for link in span.links] == [(bytes(range(2, 18)), 1)]
    assert span.links[0].attributes[0].value.string_value == "retry of"
    scope_spans = encode_request(_decoded(data, how)).resource_spans[0].scope_spans[0]
    assert (scope_spans.scope.version, scope_spans.schema_url) == (
        "1.2.3",
        "https://opentelemetry.io/schemas/1.30.0",
    )


def test_redacted_attributes_are_written_with_the_rest_kept() -> None:
    """A caller that replaces a span's attributes (redaction) gets its attributes written and
    the span's links and flags as read."""
    import dataclasses

    (span,) = _decoded(_one_span_with_a_link(), "protobuf lazy")
    redacted = dataclasses.replace(span, attributes={"tool_args": "[redacted]"})
    (out,) = encode_request([redacted]).resource_spans[0].scope_spans[0].spans
    assert [(kv.key, kv.value.string_value) for kv in out.attributes] == [
        ("tool_args", "[redacted]")
    ]
    assert out.flags == 257 and len(out.links) == 1


def test_a_bad_link_in_json_is_left_out_with_a_diagnostic() -> None:
    line = json_line(_one_span_with_a_link()).replace(
        b'"traceId":"02030405', b'"traceId":"zz030405'
    )
    diagnostics: list[Diagnostic] = []
    spans = decode_json_request(line, lazy=True, diagnostics=diagnostics)
    (out,) = encode_request(spans).resource_spans[0].scope_spans[0].spans
    assert len(out.links) == 0 and out.flags == 257
    assert len(diagnostics) == 1
    assert "links[0].traceId" in diagnostics[0].message
    assert "left out on re-encoding" in diagnostics[0].message


# --- every corpus file ------------------------------------------------------------------------


CORPUS_ROOTS = [CORPUS, SHARED_CORPUS]


def _corpus(pattern: str) -> list[Path]:
    return sorted(p for root in CORPUS_ROOTS if root.is_dir() for p in root.rglob(pattern))


def _ids(paths: list[Path]) -> list[str]:
    return [f"{p.parent.parent.name}/{p.parent.name}/{p.name}" for p in paths]


_PB = _corpus("*.otlp.pb")
_JSONL = _corpus("*.otlp.jsonl")
_JSON = [p for p in _corpus("*.json") if not p.name.endswith(".truth.json")]


def test_the_corpus_is_there() -> None:
    assert len(_PB) >= 90 and len(_JSONL) >= 90 and len(_JSON) >= 10


@pytest.mark.parametrize("path", _PB, ids=_ids(_PB))
def test_every_corpus_protobuf_file_is_re_encoded_field_for_field(path: Path) -> None:
    data = path.read_bytes()
    original = ExportTraceServiceRequest.FromString(data)
    for lazy in (True, False):
        diagnostics: list[Diagnostic] = []
        spans = decode_request(data, lazy=lazy, diagnostics=diagnostics)
        assert_same(encode_request(spans), original)
        assert diagnostics == []
    (written,) = _written(list(read_spans([str(path)])), "json")
    assert_same(written, original)


@pytest.mark.parametrize("path", _JSONL + _JSON, ids=_ids(_JSONL + _JSON))
def test_every_corpus_json_record_is_re_encoded_field_for_field(path: Path) -> None:
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    if path.suffix == ".json":
        lines = [orjson.dumps(orjson.loads(path.read_bytes()))]
    for line in lines:
        original = reference_json(line)
        for request in (line, orjson.loads(line)):  # the msgspec path, the orjson path
            diagnostics: list[Diagnostic] = []
            spans = decode_json_request(request, lazy=True, diagnostics=diagnostics)
            assert_same(encode_request(spans), original)
            assert diagnostics == []
        (written,) = _written(decode_json_request(line), "proto")
        assert_same(written, original)


@pytest.mark.parametrize("framing", ["framed", "batch"])
def test_a_framed_protobuf_message_starting_like_json_is_read_as_protobuf(
    tmp_path: Path, framing: str
) -> None:
    """The same message, length-prefixed: every record of a framed file is sniffed alike, in
    the file reader and in the batch pass's chunk reader."""
    from tooltrail.batch.chunks import Chunk
    from tooltrail.batch.tasks import read_chunk

    data = TracesData()
    rs = data.resource_spans.add()
    rs.scope_spans.add().spans.add(trace_id=b"\1" * 16, span_id=b"\2" * 8, name="x" * 89)
    body = data.SerializeToString()
    assert body[:2] == b"\n{"
    record = len(body).to_bytes(4, "big") + body
    path = tmp_path / "two.pb"
    path.write_bytes(record * 2)
    diagnostics: list[Diagnostic] = []
    if framing == "framed":
        spans = list(read_spans([str(path)], diagnostics=diagnostics))
    else:
        chunk = Chunk(index=0, path=str(path), framing="prefixed", end=len(record) * 2)
        spans = [s for _, found in read_chunk(chunk, None, diagnostics) for s in found]
    assert len(spans) == 2
    assert diagnostics == []
