"""Spans no dialect reader looks at are read as bare heads, and conversion does not change.

``read_traces`` reads with ``dialects.INTEREST``: a span with a parent whose name and
attribute keys mark no tool, agent or model call comes as a ``SpanHead`` (no attributes, no
events decoded). These tests check that only such spans do, that malformed attributes are
still read (and reported) as before, and that the converted traces are the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures import DATA

from tooltrail import dialects
from tooltrail.convert import read_traces, to_eval_trace
from tooltrail.otlp import (
    Diagnostic,
    Limits,
    Span,
    SpanHead,
    encode_request,
    frame,
    json_line,
    read_spans,
)
from tooltrail.otlp.decode.span import STATUS_ERROR

TRACE = "ab" * 16


def _agent_trace_with_plain_spans() -> list[Span]:
    """An agent run whose tool calls make HTTP and database calls (plain OpenTelemetry spans)."""
    root = Span(
        TRACE,
        "01" * 8,
        name="invoke_agent support",
        start_ns=1,
        end_ns=100,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
    )
    tool = Span(
        TRACE,
        "02" * 8,
        "01" * 8,
        name="execute_tool lookup",
        start_ns=10,
        end_ns=50,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.arguments": '{"id": 7}',
        },
    )
    http = Span(
        TRACE,
        "03" * 8,
        "02" * 8,
        name="GET",
        start_ns=11,
        end_ns=40,
        attributes={"http.request.method": "GET", "url.full": "http://x/7"},
    )
    failed = Span(
        TRACE,
        "04" * 8,
        "02" * 8,
        name="SELECT orders",
        start_ns=41,
        end_ns=49,
        status_code=STATUS_ERROR,
        attributes={"db.system": "postgresql"},
    )
    legacy = Span(
        TRACE,
        "05" * 8,
        "01" * 8,
        name="execute_tool refund",
        start_ns=60,
        end_ns=70,
        attributes={
            "gcp.vertex.agent.tool_call_args": '{"amount": 5}',
            "gen_ai.tool.name": "refund",
        },
    )
    return [http, failed, tool, legacy, root]  # children first, as SDKs export  # fmt: skip


def _write(tmp_path: Path, spans: list[Span], kind: str) -> Path:
    request = encode_request(spans)
    path = tmp_path / f"t.{kind}"
    data = frame(request.SerializeToString()) if kind == "pb" else json_line(request)
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", ["pb", "jsonl"])
def test_only_spans_with_a_parent_that_no_reader_recognises_come_as_heads(tmp_path, kind):
    path = _write(tmp_path, _agent_trace_with_plain_spans(), kind)
    read = {s.name: s for s in read_spans(path, interest=dialects.INTEREST)}
    heads = sorted(name for name, span in read.items() if isinstance(span, SpanHead))
    assert heads == ["GET", "SELECT orders"]
    assert read["SELECT orders"].status_code == STATUS_ERROR
    assert read["GET"].parent_span_id == "02" * 8 and read["GET"].start_ns == 11


@pytest.mark.parametrize("kind", ["pb", "jsonl"])
def test_reading_heads_converts_to_the_same_trace_as_reading_every_span(tmp_path, kind):
    spans = _agent_trace_with_plain_spans()
    path = _write(tmp_path, spans, kind)
    (converted,) = read_traces(str(path))
    expected = to_eval_trace(read_spans(path))
    assert [(c.name, c.args, c.source) for c in converted.tool_calls] == [
        ("lookup", {"id": 7}, "genai:gen_ai.tool.call.arguments"),
        ("refund", {"amount": 5}, "adk:gcp.vertex.agent.tool_call_args"),
    ]
    assert converted.tool_calls == expected.tool_calls
    assert converted.metadata == expected.metadata
    assert converted.metadata["span_count"] == 5
    assert converted.metadata["error_span_ids"] == ["04" * 8]


def test_no_corpus_span_the_converter_reads_comes_as_a_head():
    for path in sorted(DATA.rglob("*.*")):
        if path.suffix not in (".pb", ".json", ".jsonl") or path.name.endswith("truth.json"):
            continue
        full = list(read_spans(path))
        brief = list(read_spans(path, interest=dialects.INTEREST))
        assert [s.span_id for s in full] == [s.span_id for s in brief]
        for span, read in zip(full, brief, strict=True):
            if isinstance(read, SpanHead):
                assert span.parent_span_id and dialects.classify(span)[0] == dialects.ROLE_OTHER


@pytest.mark.parametrize("kind", ["pb", "jsonl"])
def test_a_plain_span_over_the_attribute_limit_is_read_in_full_and_reported(tmp_path, kind):
    spans = _agent_trace_with_plain_spans()
    spans[0].attributes = {f"k{i}": i for i in range(5)}
    path = _write(tmp_path, spans, kind)
    limits = Limits(max_attributes=3)
    plain_diagnostics: list[Diagnostic] = []
    (trace,) = read_traces(str(path), limits=limits, diagnostics=plain_diagnostics)
    full_diagnostics: list[Diagnostic] = []
    for span in read_spans(path, limits=limits, diagnostics=full_diagnostics):
        dialects.classify(span)
    assert [str(d) for d in plain_diagnostics] == [str(d) for d in full_diagnostics]
    assert any("more than 3 attributes" in d.message for d in plain_diagnostics)


def test_a_plain_json_span_with_a_malformed_attribute_is_read_in_full_and_reported(tmp_path):
    path = _write(tmp_path, _agent_trace_with_plain_spans(), "jsonl")
    path.write_text(path.read_text().replace('{"key":"url.full"', '{"key":5'))
    diagnostics: list[Diagnostic] = []
    list(read_traces(str(path), diagnostics=diagnostics))
    (read,) = [s for s in read_spans(path, interest=dialects.INTEREST) if s.name == "GET"]
    assert isinstance(read, Span)
    assert [d.message for d in diagnostics] == [
        "resourceSpans[0].scopeSpans[0].spans[0].attributes.[1]: "
        "expected a key/value object with a string key; dropped"
    ]
