"""Bad input: every problem is a Diagnostic naming file, line or byte offset and field; the
rest of the input is still read; nothing raises, nothing hangs, memory stays bounded."""

from __future__ import annotations

import gzip
import os
import resource

import orjson
import zstandard
from fixtures import CORPUS
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.otlp import (
    TRUNCATED_MARKER,
    Diagnostic,
    Limits,
    Span,
    encode_request,
    frame,
    iter_records,
    json_line,
    read_spans,
)

JSONL = CORPUS / "pydantic-ai" / "e_booking_multiturn_ok.otlp.jsonl"  # two lines, two traces
PB = CORPUS / "pydantic-ai" / "a_refund_ok.otlp.pb"


def _read(path, **kwargs) -> tuple[list[Span], list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    spans = list(read_spans(path, diagnostics=diagnostics, **kwargs))
    for span in spans:  # decoding is lazy: look at everything so late problems surface too
        dict(span.attributes)
        [dict(e.attributes) for e in span.events]
    return spans, diagnostics


def _lines() -> list[bytes]:
    return [line + b"\n" for line in JSONL.read_bytes().splitlines() if line.strip()]


def _count(line: bytes) -> int:
    return sum(
        len(ss["spans"]) for rs in orjson.loads(line)["resourceSpans"] for ss in rs["scopeSpans"]
    )


def test_a_corrupt_json_line_is_reported_and_the_other_lines_are_read(tmp_path):
    first, second = _lines()
    path = tmp_path / "t.jsonl"
    path.write_bytes(first + second[: len(second) // 2] + b"\n" + first)
    spans, diagnostics = _read(path)
    assert len(spans) == 2 * _count(first)
    assert [(d.path, d.line) for d in diagnostics] == [(str(path), 2)]
    assert "JSON" in diagnostics[0].message


def test_a_line_longer_than_the_record_limit_is_skipped_and_the_next_read(tmp_path):
    first, second = _lines()
    path = tmp_path / "t.jsonl"
    path.write_bytes(second + first)
    spans, diagnostics = _read(path, limits=Limits(max_record_bytes=len(first) + 10))
    assert len(spans) == _count(first) and len(second) > len(first) + 10
    assert [d.line for d in diagnostics] == [1] and "longer than" in diagnostics[0].message


def test_a_wrong_type_in_a_span_field_rejects_only_that_span(tmp_path):
    doc = orjson.loads(_lines()[0])
    spans_json = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans_json[1]["startTimeUnixNano"] = "soon"
    path = tmp_path / "t.jsonl"
    path.write_bytes(orjson.dumps(doc) + b"\n")
    spans, diagnostics = _read(path)
    assert len(spans) == len(spans_json) - 1
    (diagnostic,) = diagnostics
    assert diagnostic.line == 1
    assert diagnostic.message.startswith(
        "resourceSpans[0].scopeSpans[0].spans[1].startTimeUnixNano: span rejected"
    )


def test_an_invalid_trace_id_rejects_the_span_naming_file_line_and_field(tmp_path):
    doc = orjson.loads(_lines()[1])
    doc["resourceSpans"][0]["scopeSpans"][0]["spans"][3]["traceId"] = "not-a-trace-id"
    path = tmp_path / "t.jsonl"
    path.write_bytes(_lines()[0] + orjson.dumps(doc) + b"\n")
    spans, diagnostics = _read(path)
    assert len(spans) == _count(_lines()[0]) + _count(_lines()[1]) - 1
    (diagnostic,) = diagnostics
    assert str(diagnostic).startswith(
        f"{path}:2: resourceSpans[0].scopeSpans[0].spans[3].traceId: span rejected"
    )


def test_all_zero_or_short_ids_in_protobuf_are_rejected_with_the_byte_offset(tmp_path):
    good = Span("ab" * 16, "01" * 8, name="good")
    request = encode_request([good, Span("00" * 16, "02" * 8), Span("ab" * 16, "0000")])
    path = tmp_path / "t.pb"
    path.write_bytes(
        frame(encode_request([good]).SerializeToString()) + frame(request.SerializeToString())
    )
    spans, diagnostics = _read(path)
    assert [s.name for s in spans] == ["good", "good"]
    offset = 4 + len(encode_request([good]).SerializeToString())
    assert [(d.offset, d.message.split(":")[0]) for d in diagnostics] == [
        (offset, "resourceSpans[0].scopeSpans[0].spans[1].traceId"),
        (offset, "resourceSpans[0].scopeSpans[0].spans[2].spanId"),
    ]


def test_a_truncated_length_prefixed_file_keeps_its_complete_records(tmp_path):
    body = PB.read_bytes()
    path = tmp_path / "t.pb"
    path.write_bytes(frame(body) + frame(body)[: len(body) // 2])
    spans, diagnostics = _read(path)
    assert len(spans) == len(list(read_spans(PB)))
    (diagnostic,) = diagnostics
    assert diagnostic.offset == 4 + len(body) and "truncated" in diagnostic.message


def test_a_truncated_single_message_file_is_a_diagnostic(tmp_path):
    path = tmp_path / "t.pb"
    path.write_bytes(PB.read_bytes()[:-7])
    spans, diagnostics = _read(path)
    assert spans == []
    assert [(d.offset, "single OTLP message" in d.message) for d in diagnostics] == [(0, True)]


def test_random_bytes_are_a_diagnostic_not_an_exception(tmp_path):
    path = tmp_path / "noise"
    path.write_bytes(bytes(range(7, 256)) * 40)
    spans, diagnostics = _read(path)
    assert spans == [] and len(diagnostics) == 1


def test_an_empty_file_has_no_spans_and_no_diagnostics(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    assert _read(path) == ([], [])


def test_a_length_prefix_over_the_record_limit_is_skipped(tmp_path):
    body = PB.read_bytes()
    path = tmp_path / "t.pb"
    path.write_bytes(frame(body) + frame(body + body) + frame(body))
    spans, diagnostics = _read(path, limits=Limits(max_record_bytes=len(body) + 100))
    assert len(spans) == 2 * len(list(read_spans(PB)))
    assert [d.offset for d in diagnostics] == [4 + len(body)]
    assert "exceeds" in diagnostics[0].message


def test_a_bad_attribute_value_reads_as_none_and_is_reported(tmp_path):
    doc = orjson.loads(_lines()[0])
    attributes = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attributes.append({"key": "broken", "value": {"intValue": "forty-two"}})
    path = tmp_path / "t.jsonl"
    path.write_bytes(orjson.dumps(doc) + b"\n")
    spans, diagnostics = _read(path)
    assert spans[0].attributes["broken"] is None
    assert len(spans[0].attributes) == len(attributes)
    (diagnostic,) = diagnostics
    assert diagnostic.line == 1
    assert diagnostic.message.startswith(
        "resourceSpans[0].scopeSpans[0].spans[0].attributes.broken.intValue: expected an integer"
    )


def _tool_span(arguments: str) -> Span:
    return Span(
        "ab" * 16,
        "01" * 8,
        name="execute_tool upload",
        attributes={"gen_ai.tool.name": "upload", "gen_ai.tool.call.arguments": arguments},
    )


def test_a_50_mb_attribute_is_truncated_with_a_marker_and_a_diagnostic(tmp_path):
    big = '{"blob": "' + "x" * (50 << 20) + '"}'
    request = encode_request([_tool_span(big)])
    limit = Limits().max_attribute_value_bytes
    for name, data in (
        ("t.pb", frame(request.SerializeToString())),
        ("t.jsonl", json_line(request)),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        del data
        (span,), diagnostics = _read(path)
        value = span.attributes["gen_ai.tool.call.arguments"]
        assert value.endswith(TRUNCATED_MARKER) and len(value) == limit + len(TRUNCATED_MARKER)
        assert span.attributes["gen_ai.tool.name"] == "upload"
        (diagnostic,) = diagnostics
        assert "attributes.gen_ai.tool.call.arguments" in diagnostic.message
        assert "truncated" in diagnostic.message and "xxxx" not in diagnostic.message


def _nested_any_value_pb(depth: int) -> bytes:
    """A protobuf AnyValue: an array holding an array ... ``depth`` levels deep."""
    value = b""
    for _ in range(depth):
        array = b"\x0a" + _varint(len(value)) + value  # ArrayValue.values[0]
        value = b"\x2a" + _varint(len(array)) + array  # AnyValue.array_value
    return value


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_protobuf_arguments_nested_10000_deep_read_as_none_and_the_rest_is_kept(tmp_path):
    request = encode_request([_tool_span("{}")])
    deep = request.resource_spans[0].scope_spans[0].spans[0].SerializeToString()
    key = b"deep"
    pair = b"\x0a" + _varint(len(key)) + key
    value = _nested_any_value_pb(10_000)
    pair += b"\x12" + _varint(len(value)) + value
    span_bytes = deep + b"\x4a" + _varint(len(pair)) + pair  # one more attribute (field 9)
    scope = b"\x12" + _varint(len(span_bytes)) + span_bytes
    resource_spans = b"\x12" + _varint(len(scope)) + scope
    path = tmp_path / "t.pb"
    path.write_bytes(b"\x0a" + _varint(len(resource_spans)) + resource_spans)
    (span,), diagnostics = _read(path)
    assert span.attributes["deep"] is None
    assert span.attributes["gen_ai.tool.name"] == "upload"
    assert [d.message.split(":")[0] for d in diagnostics] == [
        "resourceSpans[0].scopeSpans[0].spans[0].attributes.deep"
    ]


def test_json_nested_10000_deep_is_a_bad_line_and_the_next_line_is_read(tmp_path):
    deep = '{"arrayValue":{"values":[' * 10_000 + "{}" + "]}}" * 10_000
    span = f'{{"traceId":"{"ab" * 16}","spanId":"{"01" * 8}","attributes":[{{"key":"deep","value":'
    line = ('{"resourceSpans":[{"scopeSpans":[{"spans":[' + span + deep + "}]}]}]}]}\n").encode()
    path = tmp_path / "t.jsonl"
    path.write_bytes(line + _lines()[0])
    spans, diagnostics = _read(path)
    assert len(spans) == _count(_lines()[0])
    assert [d.line for d in diagnostics] == [1]


def test_a_json_string_argument_nested_10000_deep_is_just_a_string(tmp_path):
    arguments = "[" * 10_000 + "]" * 10_000
    path = tmp_path / "t.jsonl"
    path.write_bytes(json_line(encode_request([_tool_span(arguments)])))
    (span,), diagnostics = _read(path)
    assert span.attributes["gen_ai.tool.call.arguments"] == arguments and diagnostics == []


def test_values_nested_deeper_than_the_depth_limit_become_none(tmp_path):
    value: object = "bottom"
    for _ in range(40):
        value = {"k": value}
    path = tmp_path / "t.jsonl"
    path.write_bytes(
        json_line(encode_request([Span("ab" * 16, "01" * 8, attributes={"v": value})]))
    )
    (span,), diagnostics = _read(path, limits=Limits(max_depth=10))
    level = span.attributes["v"]
    for _ in range(10):
        level = level["k"]
    assert level is None
    assert len(diagnostics) == 1 and "deeper than 10" in diagnostics[0].message


def _zeros_compressed(size: int) -> bytes:
    compressor = zstandard.ZstdCompressor().compressobj()
    chunk = bytes(1 << 20)
    return b"".join(compressor.compress(chunk) for _ in range(size >> 20)) + compressor.flush()


def test_a_zstd_bomb_record_is_skipped_and_the_next_record_is_read(tmp_path):
    bomb = _zeros_compressed(256 << 20)  # 256 MB of zeros in a few kB
    path = tmp_path / "t.zst"
    path.write_bytes(frame(bomb) + frame(zstandard.ZstdCompressor().compress(PB.read_bytes())))
    spans, diagnostics = _read(path, limits=Limits(max_record_bytes=1 << 20))
    assert len(spans) == len(list(read_spans(PB)))
    assert [(d.offset, "exceeds" in d.message) for d in diagnostics] == [(0, True)]


def test_a_whole_file_zstd_bomb_stops_at_the_compression_ratio(tmp_path):
    path = tmp_path / "t.zst"
    path.write_bytes(_zeros_compressed(256 << 20))
    spans, diagnostics = _read(path, limits=Limits(max_record_bytes=1 << 20))
    assert spans == []
    assert len(diagnostics) == 1 and "bomb" in diagnostics[0].message


def test_a_gzip_bomb_of_json_stops_at_the_decompressed_size_limit(tmp_path):
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(_lines()[0] + b"{" * (20 << 20), compresslevel=1))
    limits = Limits(max_record_bytes=1 << 20, max_decompressed_bytes=8 << 20)
    spans, diagnostics = _read(path, limits=limits)
    assert len(spans) == _count(_lines()[0])
    assert len(diagnostics) == 1 and "decompressed size" in diagnostics[0].message


#: 10**6 spans take several seconds to decode; the default run uses 10**5 spans through the
#: same code. Set TOOLTRAIL_BIG_TESTS=1 for the full million.
MANY_SPANS = 1_000_000 if os.environ.get("TOOLTRAIL_BIG_TESTS") else 100_000


def test_a_trace_of_a_million_spans_streams_through_in_bounded_memory(tmp_path):
    chunk = encode_request(
        Span("ab" * 16, (i + 1).to_bytes(8, "big").hex(), name="s") for i in range(10_000)
    ).SerializeToString()
    path = tmp_path / "t.pb"
    with open(path, "wb") as out:
        for _ in range(MANY_SPANS // 10_000):
            out.write(frame(chunk))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    count = sum(len(record.spans) for record in iter_records(path))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert count == MANY_SPANS
    assert grown_mb < 100  # one record at a time: all spans at once would take far more


def test_a_corrupt_record_in_a_protobuf_file_does_not_stop_the_next(tmp_path):
    body = PB.read_bytes()
    broken = bytearray(body)
    broken[len(broken) // 3 : len(broken) // 3 + 16] = b"\xff" * 16
    path = tmp_path / "t.pb"
    path.write_bytes(frame(body) + frame(bytes(broken)) + frame(body))
    spans, diagnostics = _read(path)
    assert len(spans) >= 2 * len(list(read_spans(PB)))
    assert diagnostics and all(d.offset is not None for d in diagnostics)
    assert ExportTraceServiceRequest  # the protobuf package is what wrote the corpus
