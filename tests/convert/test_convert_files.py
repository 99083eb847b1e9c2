"""``read_traces`` over real files: every collector framing and compression, traces spread over
many records and files, limits and bad records."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from itertools import zip_longest
from pathlib import Path
from typing import Any

import pytest
from fixtures import CORPUS

from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace
from tooltrail.otlp import Diagnostic, Limits, read_spans
from tooltrail.otlp.decode.span import Span
from tooltrail.otlp.write.encode import encode_request, json_line
from tooltrail.otlp.write.writer import OtlpFileWriter

FRAMEWORKS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
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


def _view(trace: EvalTrace) -> tuple[Any, ...]:
    return (tuple(trace.metadata["trace_ids"]), trace.tool_calls, trace.output, trace.metadata)


def _by_key(traces: Iterator[EvalTrace]) -> dict[tuple[str, ...], tuple[Any, ...]]:
    return {tuple(t.metadata["trace_ids"]): _view(t) for t in traces}


@cache
def _batches(framework: str, size: int = 2) -> list[list[Span]]:
    """Each scenario's spans in batches of ``size`` (file order: children first), the batches
    of all scenarios interleaved: traces spread over many records, as a collector writes."""
    per_scenario = []
    for pb in sorted((CORPUS / framework).glob("*.otlp.pb")):
        spans = list(read_spans(str(pb)))
        per_scenario.append([spans[i : i + size] for i in range(0, len(spans), size)])
    return [b for row in zip_longest(*per_scenario) for b in row if b]


@cache
def _expected(framework: str, group: str) -> dict[tuple[str, ...], tuple[Any, ...]]:
    expected: dict[tuple[str, ...], tuple[Any, ...]] = {}
    for pb in sorted((CORPUS / framework).glob("*.otlp.pb")):
        expected.update(_by_key(read_traces(str(pb), group=group)))  # type: ignore[arg-type]
    return expected


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(("fmt", "compression"), WRITES)
def test_every_framing_and_compression_converts_identically(
    tmp_path: Path, framework: str, fmt: str, compression: str | None
) -> None:
    path = tmp_path / "dump"
    with OtlpFileWriter(path, format=fmt, compression=compression) as writer:  # type: ignore[arg-type]
        for batch in _batches(framework):
            writer.write(encode_request(batch))
    diagnostics: list[Diagnostic] = []
    got = _by_key(read_traces(str(path), diagnostics=diagnostics))
    assert diagnostics == []
    assert got == _expected(framework, "trace")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_conversations_are_grouped_across_interleaved_records(
    tmp_path: Path, framework: str
) -> None:
    path = tmp_path / "dump.jsonl"
    path.write_bytes(b"".join(json_line(encode_request(b)) for b in _batches(framework, size=1)))
    got = _by_key(read_traces(str(path), group="conversation"))
    assert got == _expected(framework, "conversation")


def test_trace_split_over_two_files_of_a_directory_is_one_trace(tmp_path: Path) -> None:
    spans = list(read_spans(str(CORPUS / "pydantic-ai" / "a_refund_ok.otlp.pb")))
    children = [s for s in spans if s.parent_span_id]
    roots = [s for s in spans if not s.parent_span_id]
    (tmp_path / "a.jsonl").write_bytes(json_line(encode_request(children)))
    (tmp_path / "b.jsonl").write_bytes(json_line(encode_request(roots)))
    traces = list(read_traces(str(tmp_path)))
    assert len(traces) == 1
    assert [c.name for c in traces[0].tool_calls] == [
        "lookup_order",
        "verify_identity",
        "issue_refund",
    ]
    assert traces[0].metadata["root_span_name"] == "invoke_agent refund_agent"


def test_trace_over_the_span_limit_is_partial_with_a_diagnostic(tmp_path: Path) -> None:
    source = CORPUS / "pydantic-ai" / "a_refund_ok.otlp.jsonl"
    diagnostics: list[Diagnostic] = []
    (trace,) = read_traces(
        str(source), limits=Limits(max_spans_per_trace=3), diagnostics=diagnostics
    )
    assert trace.partial
    assert trace.metadata["span_count"] == 3
    (diagnostic,) = diagnostics
    assert diagnostic.path == str(source)
    assert diagnostic.line == 1
    assert "max_spans_per_trace" in diagnostic.message


def test_a_corrupt_line_is_reported_and_the_rest_converted(tmp_path: Path) -> None:
    lines = (CORPUS / "vercel-ai" / "e_booking_multiturn_ok.otlp.jsonl").read_bytes().splitlines()
    path = tmp_path / "dump.jsonl"
    path.write_bytes(b"\n".join([lines[0], b'{"resourceSpans": [', lines[1]]) + b"\n")
    diagnostics: list[Diagnostic] = []
    traces = list(read_traces(str(path), diagnostics=diagnostics))
    assert [d.line for d in diagnostics] == [2]
    assert [[c.name for c in t.tool_calls] for t in traces] == [
        ["create_booking"],
        ["update_booking"],
    ]


def test_unknown_group_is_a_usage_error() -> None:
    with pytest.raises(ValueError, match="group must be one of trace, conversation"):
        next(read_traces(str(CORPUS / "strands" / "a_refund_ok.otlp.pb"), group="turn"))  # type: ignore[arg-type]


def test_traces_come_out_in_the_order_their_last_span_arrives(tmp_path: Path) -> None:
    lines = (CORPUS / "strands" / "e_booking_multiturn_bad.otlp.jsonl").read_bytes().splitlines()
    path = tmp_path / "reversed.jsonl"
    path.write_bytes(b"\n".join(reversed(lines)) + b"\n")
    truth = json.loads((CORPUS / "strands" / "e_booking_multiturn_bad.truth.json").read_text())
    assert [t.trace_id for t in read_traces(str(path))] == truth["trace_ids"][::-1]


@pytest.mark.parametrize("framework", ["google-adk", "traceloop", "vercel-ai"])
def test_two_passes_give_what_one_pass_gives(tmp_path: Path, framework: str) -> None:
    path = tmp_path / "dump.pb"
    with OtlpFileWriter(path, format="proto") as writer:
        for batch in _batches(framework):
            writer.write(encode_request(batch))
    one = [_view(t) for t in read_traces(str(path), two_pass=False)]
    two = [_view(t) for t in read_traces(str(path), two_pass=True)]
    assert two == one


def test_two_passes_emit_a_trace_before_the_input_is_exhausted(tmp_path: Path) -> None:
    lines = (CORPUS / "pydantic-ai" / "e_booking_multiturn_ok.otlp.jsonl").read_bytes().splitlines()
    path = tmp_path / "dump.jsonl"
    path.write_bytes(b"\n".join([*lines, b"{broken"]) + b"\n")
    early: list[Diagnostic] = []
    first = next(read_traces(str(path), diagnostics=early, two_pass=True))
    assert early == []  # the bad last line was not read yet when the first trace came out
    late: list[Diagnostic] = []
    next(read_traces(str(path), diagnostics=late, two_pass=False))
    assert [d.line for d in late] == [3]
    assert (
        first.trace_id
        == json.loads(lines[0])["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    )
