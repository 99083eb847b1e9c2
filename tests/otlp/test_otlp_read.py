"""read_spans / iter_records over the real corpus: both corpus formats, directories, globs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from fixtures import CORPUS
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from tooltrail.otlp import (
    DecodeError,
    Diagnostic,
    Limits,
    Span,
    decode_request,
    encode_request,
    iter_records,
    read_spans,
)

FRAMEWORKS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def _facts(span):  # everything a span carries except where it was read from
    return (
        span.trace_id, span.span_id, span.parent_span_id, span.name, span.kind, span.start_ns,
        span.end_ns, span.status_code, span.status_message, dict(span.attributes),
        [(e.name, e.time_ns, dict(e.attributes)) for e in span.events], dict(span.resource),
        span.scope_name,
    )  # fmt: skip


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_protobuf_and_json_lines_of_the_corpus_decode_to_the_same_spans(framework):
    for pb in sorted((CORPUS / framework).glob("*.otlp.pb")):
        jsonl = pb.with_name(pb.name.replace(".otlp.pb", ".otlp.jsonl"))
        diagnostics: list[Diagnostic] = []
        from_pb = sorted(map(_facts, read_spans(pb, diagnostics=diagnostics)))
        from_json = sorted(map(_facts, read_spans(jsonl, diagnostics=diagnostics)))
        assert diagnostics == []
        assert from_pb and from_pb == from_json, pb.name


def test_one_json_line_is_one_record_with_its_line_number():
    path = CORPUS / "pydantic-ai" / "e_booking_multiturn_ok.otlp.jsonl"
    lines = [n for n, text in enumerate(path.read_text().splitlines(), 1) if text.strip()]
    records = list(iter_records(path))
    assert [r.line for r in records] == lines
    assert all(r.spans and r.origin == f"{path}:{r.line}" for r in records)


def test_a_span_has_hex_ids_and_decoded_attributes():
    path = CORPUS / "pydantic-ai" / "a_refund_ok.otlp.jsonl"
    tools = [s for s in read_spans(path) if s.attributes.get("gen_ai.tool.name") == "issue_refund"]
    assert len(tools) == 1
    tool = tools[0]
    assert len(tool.trace_id) == 32 and len(tool.span_id) == 16 and len(tool.parent_span_id) == 16
    assert tool.name == "execute_tool issue_refund"
    assert '"amount"' in tool.attributes["gen_ai.tool.call.arguments"]
    assert tool.resource["service.name"] == "corpus-pydantic-ai"
    assert tool.start_ns < tool.end_ns


def test_the_node_sdk_json_document_reads_like_the_collector_lines():
    sdk = CORPUS / "vercel-ai" / "sdk-json" / "a_refund_ok.json"
    lines = CORPUS / "vercel-ai" / "a_refund_ok.otlp.jsonl"
    diagnostics: list[Diagnostic] = []
    assert sorted(map(_facts, read_spans(sdk, diagnostics=diagnostics))) == sorted(
        map(_facts, read_spans(lines))
    )
    assert diagnostics == []


def test_a_directory_is_read_recursively_and_skips_files_that_are_not_otlp():
    diagnostics: list[Diagnostic] = []
    spans = list(read_spans(CORPUS / "vercel-ai", diagnostics=diagnostics))
    direct = list(read_spans(sorted((CORPUS / "vercel-ai").glob("*.otlp.*"))))
    sdk = list(read_spans(CORPUS / "vercel-ai" / "sdk-json"))
    assert diagnostics == []  # truth.json files are not OTLP and are skipped silently
    assert len(spans) == len(direct) + len(sdk)


def test_a_glob_pattern_is_expanded():
    pattern = str(CORPUS / "strands" / "a_refund_ok.otlp.*")
    assert len(list(read_spans(pattern))) == 2 * len(
        list(read_spans(CORPUS / "strands" / "a_refund_ok.otlp.pb"))
    )


def test_a_missing_path_is_a_diagnostic_not_an_exception(tmp_path):
    diagnostics: list[Diagnostic] = []
    assert list(read_spans([tmp_path / "nope.jsonl"], diagnostics=diagnostics)) == []
    assert len(diagnostics) == 1 and "no such file" in diagnostics[0].message


def test_dash_reads_stdin_of_a_real_process():
    pb = CORPUS / "strands" / "a_refund_ok.otlp.pb"
    code = "from tooltrail.otlp import read_spans; print(sum(1 for _ in read_spans('-')))"
    with open(pb, "rb") as stdin:
        out = subprocess.run(
            [sys.executable, "-c", code], stdin=stdin, capture_output=True, check=True
        )
    assert int(out.stdout) == len(list(read_spans(pb)))


def test_a_pretty_printed_json_document_is_one_record(tmp_path):
    sdk = CORPUS / "vercel-ai" / "sdk-json" / "a_refund_ok.json"
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps(json.loads(sdk.read_text()), indent=2))
    records = list(iter_records(path))
    assert len(records) == 1 and records[0].line == 1
    assert sorted(map(_facts, records[0].spans)) == sorted(map(_facts, read_spans(sdk)))


def test_traces_data_reads_like_an_export_request(tmp_path):
    pb = CORPUS / "google-adk" / "g_parallel_calls.otlp.pb"
    request = ExportTraceServiceRequest.FromString(pb.read_bytes())
    data = TracesData(resource_spans=request.resource_spans).SerializeToString()
    assert sorted(map(_facts, decode_request(data))) == sorted(map(_facts, read_spans(pb)))


def test_decode_request_leaves_out_spans_with_bad_ids_and_says_why():
    request = encode_request(
        [Span("ab" * 16, "01" * 8), Span("ab" * 16, "00" * 8), Span("ab" * 16, "02" * 8)]
    )
    diagnostics: list[Diagnostic] = []
    spans = decode_request(request.SerializeToString(), origin="grpc", diagnostics=diagnostics)
    assert [s.span_id for s in spans] == ["01" * 8, "02" * 8]
    assert [(d.path, d.message) for d in diagnostics] == [
        (
            "grpc",
            "resourceSpans[0].scopeSpans[0].spans[1].spanId: span rejected: all-zero id is invalid",
        )
    ]


def test_decode_request_raises_decode_error_on_garbage():
    with pytest.raises(DecodeError):
        decode_request(b"\x0a\xff\xff\xff\x0f garbage")


def test_decode_request_refuses_bodies_over_the_record_limit():
    data = (CORPUS / "strands" / "a_refund_ok.otlp.pb").read_bytes()
    with pytest.raises(DecodeError, match="exceeds"):
        decode_request(data, limits=Limits(max_record_bytes=len(data) - 1))


def test_lazy_and_eager_attributes_agree():
    data = (CORPUS / "pydantic-ai" / "a_refund_ok.otlp.pb").read_bytes()
    lazy, eager = decode_request(data, lazy=True), decode_request(data, lazy=False)
    assert all(type(s.attributes) is dict for s in eager)
    for a, b in zip(lazy, eager, strict=True):
        assert a.attributes.get("gen_ai.operation.name") == b.attributes.get(
            "gen_ai.operation.name"
        )
        assert ("no.such.key" in a.attributes) is False
        assert a.attributes == b.attributes and list(a.attributes) == list(b.attributes)


def test_a_bad_value_is_reported_when_its_attribute_is_first_read(tmp_path):
    span = encode_request([Span("ab" * 16, "01" * 8, attributes={"ok": 1})])
    pair = b"\x0a\x03bad\x12\x04\x0a\x02\xff\xfe"  # string value that is not UTF-8
    pb_span = span.resource_spans[0].scope_spans[0].spans[0].SerializeToString()
    pb_span += b"\x4a" + bytes([len(pair)]) + pair
    scope = b"\x12" + bytes([len(pb_span)]) + pb_span
    path = tmp_path / "t.pb"
    path.write_bytes(b"\x0a" + bytes([len(scope) + 2]) + b"\x12" + bytes([len(scope)]) + scope)
    diagnostics: list[Diagnostic] = []
    (read,) = read_spans(path, diagnostics=diagnostics)
    assert read.attributes.get("ok") == 1 and diagnostics == []
    assert read.attributes.get("bad") is None
    assert [d.message.split(":")[0] for d in diagnostics] == [
        "resourceSpans[0].scopeSpans[0].spans[0].attributes.bad"
    ]


def test_blank_and_whitespace_only_lines_between_json_lines_are_skipped(tmp_path):
    lines = (CORPUS / "strands" / "e_booking_multiturn_bad.otlp.jsonl").read_bytes().splitlines()
    path = tmp_path / "spaced.jsonl"
    # every byte ``bytes.isspace`` counts, and a lone newline, between the records
    path.write_bytes(b"\n \t\r\x0b\x0c\n".join(lines) + b"\n\n{broken\n")
    diagnostics: list[Diagnostic] = []
    records = list(iter_records(path, diagnostics=diagnostics))
    assert [r.line for r in records] == [1 + 2 * i for i in range(len(lines))]
    assert sum(len(r.spans) for r in records) == sum(
        len(s["spans"]) for line in lines for r in json.loads(line)["resourceSpans"]
        for s in r["scopeSpans"]
    )  # fmt: skip
    assert [d.line for d in diagnostics] == [2 * len(lines) + 1]
