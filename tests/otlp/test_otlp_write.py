"""Writers: collector-style OTLP/JSON lines, length-prefixed protobuf, compression, rotation,
and that every framing reads back to the same spans."""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
import zstandard
from fixtures import CORPUS
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.otlp import (
    Diagnostic,
    LogRecord,
    OtlpFileWriter,
    Span,
    encode_logs_request,
    encode_request,
    frame,
    iter_records,
    json_line,
    logs_json_line,
    read_log_records,
    read_spans,
)

SCENARIO = CORPUS / "strands" / "h_nested_agent_tool"  # events, nesting, two scopes


def _facts(span):
    return (
        span.trace_id, span.span_id, span.parent_span_id, span.name, span.kind, span.start_ns,
        span.end_ns, span.status_code, span.status_message, dict(span.attributes),
        [(e.name, e.time_ns, dict(e.attributes)) for e in span.events], dict(span.resource),
        span.scope_name,
    )  # fmt: skip


def _corpus_request(scenario: Path = SCENARIO) -> ExportTraceServiceRequest:
    data = scenario.with_name(scenario.name + ".otlp.pb").read_bytes()
    return ExportTraceServiceRequest.FromString(data)


def _expected(scenario: Path = SCENARIO) -> list:
    return sorted(map(_facts, read_spans(scenario.with_name(scenario.name + ".otlp.pb"))))


def _line_requests(scenario: Path) -> list[tuple[bytes, ExportTraceServiceRequest]]:
    """Each corpus JSON line with a protobuf request holding the same spans, taken from the
    corpus ``.otlp.pb`` (so the expected JSON is the corpus text, not our own output)."""
    full = _corpus_request(scenario)
    where = {}
    for rs in full.resource_spans:
        for ss in rs.scope_spans:
            for s in ss.spans:
                where[s.span_id.hex()] = (rs, ss, s)
    out = []
    for line in scenario.with_name(scenario.name + ".otlp.jsonl").read_bytes().splitlines():
        request = ExportTraceServiceRequest()
        for rs_json in orjson.loads(line)["resourceSpans"]:
            group = request.resource_spans.add()
            for ss_json in rs_json["scopeSpans"]:
                scope = group.scope_spans.add()
                for span_json in ss_json["spans"]:
                    rs, ss, s = where[span_json["spanId"]]
                    group.resource.CopyFrom(rs.resource)
                    group.schema_url = rs.schema_url
                    scope.scope.CopyFrom(ss.scope)
                    scope.schema_url = ss.schema_url
                    scope.spans.add().CopyFrom(s)
        out.append((line + b"\n", request))
    return out


@pytest.mark.parametrize("framework", ["pydantic-ai", "strands", "vercel-ai", "google-adk"])
def test_json_line_writes_exactly_the_collector_json_of_the_corpus(framework):
    for line, request in _line_requests(CORPUS / framework / "h_nested_agent_tool"):
        assert json_line(request) == line


def test_json_line_writes_non_finite_doubles_and_int64_as_strings():
    span = Span("ab" * 16, "cd" * 8, attributes={"n": 9007199254740993, "x": float("nan")})
    doc = orjson.loads(json_line(encode_request([span])))
    values = {
        kv["key"]: kv["value"]
        for kv in doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    }
    assert values == {"n": {"intValue": "9007199254740993"}, "x": {"doubleValue": "NaN"}}


def test_encode_request_groups_spans_by_resource_and_scope():
    a, b = {"service.name": "a"}, {"service.name": "b"}
    spans = [
        Span("11" * 16, "01" * 8, resource=a, scope_name="x"),
        Span("11" * 16, "02" * 8, resource=dict(a), scope_name="y"),
        Span("11" * 16, "03" * 8, resource=b, scope_name="x"),
        Span("11" * 16, "04" * 8, resource=a, scope_name="x"),
    ]
    request = encode_request(spans)
    layout = [
        [(ss.scope.name, [s.span_id.hex() for s in ss.spans]) for ss in rs.scope_spans]
        for rs in request.resource_spans
    ]
    assert layout == [
        [("x", ["01" * 8, "04" * 8]), ("y", ["02" * 8])],
        [("x", ["03" * 8])],
    ]


def test_encoded_spans_decode_to_the_same_spans():
    spans = list(read_spans(SCENARIO.with_name(SCENARIO.name + ".otlp.jsonl")))
    request = encode_request(spans)
    again = list(read_spans_from_bytes(request.SerializeToString()))
    assert sorted(map(_facts, again)) == sorted(map(_facts, spans))


def read_spans_from_bytes(data: bytes):
    from tooltrail.otlp import decode_request

    return decode_request(data)


WRITES = [
    ("json", None),
    ("proto", None),
    ("json", "zstd"),
    ("proto", "zstd"),
    ("json", "zstd-stream"),
    ("proto", "zstd-stream"),
    ("json", "gzip"),
    ("proto", "gzip"),
]


@pytest.mark.parametrize(("format", "compression"), WRITES)
def test_every_framing_and_compression_reads_back_the_same_spans(tmp_path, format, compression):
    path = tmp_path / "dump.bin"  # the name says nothing: the format is sniffed
    with OtlpFileWriter(path, format=format, compression=compression) as writer:
        for _line, request in _line_requests(SCENARIO):
            writer.write(request)
    diagnostics: list[Diagnostic] = []
    assert sorted(map(_facts, read_spans(path, diagnostics=diagnostics))) == _expected()
    assert diagnostics == []


def test_per_message_zstd_is_length_prefixed_frames_as_the_collector_writes(tmp_path):
    path = tmp_path / "traces.zst"
    requests = [r for _l, r in _line_requests(SCENARIO)]
    with OtlpFileWriter(path, format="proto", compression="zstd") as writer:
        for request in requests:
            writer.write(request)
    data = path.read_bytes()
    size = int.from_bytes(data[:4], "big")
    first = zstandard.ZstdDecompressor().decompress(data[4 : 4 + size], max_output_size=1 << 24)
    assert first == requests[0].SerializeToString()


def test_records_of_a_length_prefixed_file_carry_their_byte_offsets(tmp_path):
    path = tmp_path / "traces.pb"
    bodies = [r.SerializeToString() for _l, r in _line_requests(SCENARIO)]
    path.write_bytes(b"".join(frame(b) for b in bodies))
    offsets, at = [], 0
    for body in bodies:
        offsets.append(at)
        at += 4 + len(body)
    assert [r.offset for r in iter_records(path)] == offsets


def test_a_gzip_file_of_json_lines_is_read(tmp_path):
    path = tmp_path / "traces.jsonl.gz"
    path.write_bytes(gzip.compress(SCENARIO.with_name(SCENARIO.name + ".otlp.jsonl").read_bytes()))
    assert sorted(map(_facts, read_spans(path))) == _expected()


def test_the_writer_rotates_by_size_and_loses_nothing(tmp_path):
    path = tmp_path / "traces.jsonl"
    requests = [r for _l, r in _line_requests(SCENARIO)] * 3
    with OtlpFileWriter(path, format="json", max_bytes=2000) as writer:
        for request in requests:
            writer.write(request)
    assert len(writer.rotated) >= 2
    assert all(Path(p).name.startswith("traces-") and p.endswith(".jsonl") for p in writer.rotated)
    spans = list(read_spans(tmp_path))
    assert len(spans) == 3 * len(_expected())


def test_unknown_format_is_refused(tmp_path):
    with pytest.raises(ValueError, match="format"):
        OtlpFileWriter(tmp_path / "x", format="yaml")  # type: ignore[arg-type]


EVAL = LogRecord(
    trace_id="5a50218595e4f754599d6af1d3f8d89d",
    span_id="db1518f67e439f59",
    time_ns=1796002339386388406,
    event_name="gen_ai.evaluation.result",
    attributes={
        "gen_ai.evaluation.name": "required_tools",
        "gen_ai.evaluation.score.value": 1.0,
        "gen_ai.evaluation.score.label": "pass",
    },
)


def test_logs_json_line_is_collector_style_otlp_json():
    doc = orjson.loads(logs_json_line(encode_logs_request([EVAL], resource={"service.name": "t"})))
    record = doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    assert record["traceId"] == EVAL.trace_id and record["spanId"] == EVAL.span_id
    assert record["timeUnixNano"] == "1796002339386388406"
    assert record["eventName"] == "gen_ai.evaluation.result"
    assert {"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": 1.0}} in record[
        "attributes"
    ]


@pytest.mark.parametrize(("format", "compression"), [("json", None), ("proto", "zstd")])
def test_evaluation_events_written_to_a_logs_file_read_back(tmp_path, format, compression):
    path = tmp_path / "evals.out"
    with OtlpFileWriter(path, format=format, compression=compression) as writer:
        writer.write(encode_logs_request([EVAL], resource={"service.name": "t"}))
    diagnostics: list[Diagnostic] = []
    (record,) = read_log_records(path, diagnostics=diagnostics)
    assert diagnostics == []
    assert (record.trace_id, record.span_id, record.time_ns, record.event_name) == (
        EVAL.trace_id, EVAL.span_id, EVAL.time_ns, EVAL.event_name,
    )  # fmt: skip
    assert dict(record.attributes) == dict(EVAL.attributes)
    assert record.resource == {"service.name": "t"}


def test_reading_logs_skips_span_lines_in_a_mixed_json_dump(tmp_path):
    path = tmp_path / "mixed.jsonl"
    spans_line = SCENARIO.with_name(SCENARIO.name + ".otlp.jsonl").read_bytes()
    path.write_bytes(spans_line + logs_json_line(encode_logs_request([EVAL])))
    diagnostics: list[Diagnostic] = []
    assert [r.event_name for r in read_log_records(path, diagnostics=diagnostics)] == [
        EVAL.event_name
    ]
    assert len(list(read_spans(path, diagnostics=diagnostics))) == len(_expected())
    assert diagnostics == []
