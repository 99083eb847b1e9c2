"""Protobuf attributes read through the C-parsed map (``otlp.mapped``) behave like the wire.

Lookups go through a hash table the protobuf runtime builds; iteration must still follow
wire order, a repeated key must still read as its last value, and the attribute limit must
still keep the first attributes on the wire. Spans are built with the OTLP classes and the
bytes read back from real files.
"""

from __future__ import annotations

from pathlib import Path

from fixtures import CORPUS
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.otlp import Diagnostic, Limits, frame, read_spans
from tooltrail.otlp.decode.mapped import MappedAttributes


def _request(pairs: list[tuple[str, str]]) -> bytes:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\xab" * 16, b"\x01" * 8, "s"
    for key, value in pairs:
        pair = span.attributes.add()
        pair.key = key
        pair.value.string_value = value
    return request.SerializeToString()


def _read(tmp_path: Path, data: bytes, **kwargs):
    path = tmp_path / "t.pb"
    path.write_bytes(frame(data))
    diagnostics: list[Diagnostic] = []
    spans = list(read_spans(path, diagnostics=diagnostics, **kwargs))
    return spans, diagnostics


def test_corpus_protobuf_spans_iterate_attributes_in_the_order_of_their_json_twin():
    pb = CORPUS / "pydantic-ai" / "a_refund_ok.otlp.pb"
    jsonl = pb.with_name("a_refund_ok.otlp.jsonl")
    from_json = {s.span_id: list(s.attributes) for s in read_spans(jsonl)}
    spans = list(read_spans(pb))
    assert any(isinstance(s.attributes, MappedAttributes) for s in spans)
    for span in spans:
        assert list(span.attributes) == from_json[span.span_id]


def test_a_repeated_key_reads_as_its_last_value_by_lookup_and_by_iteration(tmp_path):
    (span,), _ = _read(tmp_path, _request([("k", "first"), ("other", "o"), ("k", "last")]))
    assert span.attributes.get("k") == "last"
    assert list(span.attributes.items()) == [("k", "last"), ("other", "o")]
    assert len(span.attributes) == 2


def test_lookups_of_absent_keys_answer_without_decoding_the_others(tmp_path):
    (span,), diagnostics = _read(tmp_path, _request([("a", "x" * 300), ("b", "y")]))
    attributes = span.attributes
    assert "missing" not in attributes and attributes.get("missing", 7) == 7
    assert attributes["b"] == "y" and "a" in attributes
    assert attributes._ordered is None  # nothing needed the wire order yet
    assert diagnostics == []


def test_more_attributes_than_the_limit_keep_the_first_on_the_wire(tmp_path):
    pairs = [(f"k{i:02d}", str(i)) for i in range(12)]
    (span,), diagnostics = _read(tmp_path, _request(pairs), limits=Limits(max_attributes=10))
    assert span.attributes.get("k09") == "9"
    assert span.attributes.get("k10") is None and "k11" not in span.attributes
    assert list(span.attributes) == [key for key, _ in pairs[:10]]
    assert [d.message for d in diagnostics] == [
        "resourceSpans[0].scopeSpans[0].spans[0].attributes: more than 10 attributes; rest dropped"
    ]


def test_a_cut_value_is_reported_once_whether_looked_up_or_iterated(tmp_path):
    limits = Limits(max_attribute_value_bytes=200)
    data = _request([("big", "x" * 500), ("b", "y")])
    (span,), diagnostics = _read(tmp_path, data, limits=limits)
    looked_up = span.attributes["big"]
    assert looked_up.startswith("x" * 200) and len(looked_up) > 200
    assert dict(span.attributes.items())["big"] == looked_up
    assert len(diagnostics) == 1
    assert "attributes.big: value of 500 bytes truncated to 200" in diagnostics[0].message


def test_a_string_shorter_than_128_bytes_is_never_cut_as_before(tmp_path):
    limits = Limits(max_attribute_value_bytes=16)
    (span,), diagnostics = _read(tmp_path, _request([("short", "z" * 100)]), limits=limits)
    assert span.attributes["short"] == "z" * 100 and diagnostics == []


def _field(tag: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([tag, len(payload)]) + payload


def test_a_request_with_a_key_that_is_not_utf8_is_read_attribute_by_attribute(tmp_path):
    request = ExportTraceServiceRequest.FromString(_request([("a", "1")]))
    span = request.resource_spans[0].scope_spans[0].spans[0].SerializeToString()
    bad_pair = _field(0x0A, b"\xff\xfe") + _field(0x12, _field(0x0A, b"v"))  # key not UTF-8
    span += _field(0x4A, bad_pair)  # one more attribute (field 9)
    data = _field(0x0A, _field(0x12, _field(0x12, span)))  # resource spans > scope spans > span
    (span_read,), diagnostics = _read(tmp_path, data)
    assert not isinstance(span_read.attributes, MappedAttributes)
    assert span_read.attributes.get("a") == "1"
    assert len(diagnostics) == 1 and "undecodable attribute dropped" in diagnostics[0].message
