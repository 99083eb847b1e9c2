"""read_spans / iter_records over the real corpus: both corpus formats, directories, globs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooltrail.otlp import Diagnostic, iter_records, read_spans

CORPUS = Path(__file__).parent / "data" / "corpus"
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
