"""The batch pass reads spans as ``read_traces`` does: plain spans (an HTTP call, a query under a
tool call) come as bare ``SpanHead``s, never decoded in full, and the verdicts do not change."""

from __future__ import annotations

from typing import Any

import pytest
from fixtures import recorded_refund_case, refund_suite
from test_batch_support import SEED_RUNS, Run, jsonl, prefixed_pb, record, write

from tooltrail.batch import plan_chunks, run_batch
from tooltrail.batch.tasks import read_chunk
from tooltrail.convert import read_traces, to_eval_trace
from tooltrail.otlp import Diagnostic, Span, SpanHead, read_spans
from tooltrail.results import CaseResult
from tooltrail.score import evaluate_cases

SUITE = refund_suite(
    recorded_refund_case(
        forbidden_tools=["web_search"],
        evaluators=[
            {"name": "no_redundant_tool_calls", "threshold": 1.0},
            {"name": "tool_call_precision", "threshold": 1.0},
            {"name": "max_tool_calls", "config": {"max": 4}},
        ],
    ),
    {"id": "anything", "match": "all", "max_turns": 1},
)


def _runs_with_plain_spans() -> list[list[Any]]:
    return record([Run(r.name, r.calls, plain=3) for r in SEED_RUNS])


def _rows(results: list[CaseResult]) -> dict[tuple[str | None, str], dict[str, Any]]:
    """Rows by (trace, case), without the label (the batch pass numbers repeated labels)."""
    rows = {}
    for result in results:
        row = result.to_dict()
        del row["label"]
        rows[(result.trace_id, result.case_id)] = row
    return rows


def _expected_from_full_spans(path: str) -> dict[tuple[str | None, str], dict[str, Any]]:
    """Every span decoded in full (no interest), grouped by trace, converted, evaluated."""
    by_trace: dict[str, list[Span]] = {}
    for span in read_spans(path):
        by_trace.setdefault(span.trace_id, []).append(span)
    results: list[CaseResult] = []
    for spans in by_trace.values():
        trace = to_eval_trace(spans)
        results.extend(evaluate_cases(SUITE.cases_for(trace), trace))
    return _rows(results)


def _expected_from_read_traces(path: str) -> dict[tuple[str | None, str], dict[str, Any]]:
    results: list[CaseResult] = []
    for trace in read_traces(path):
        results.extend(evaluate_cases(SUITE.cases_for(trace), trace))
    return _rows(results)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    runs = _runs_with_plain_spans()
    directory = tmp_path_factory.mktemp("plain")
    # Two batches per run, so a small chunk size cuts some traces across chunks.
    batches = [part for run in runs for part in (run[: len(run) // 2], run[len(run) // 2 :])]
    return {
        "jsonl": write(directory / "plain.jsonl", jsonl(batches)),
        "pb": write(directory / "plain.pb", prefixed_pb(batches)),
    }


@pytest.mark.parametrize("fmt", ["jsonl", "pb"])
@pytest.mark.parametrize("chunk_bytes", [None, 3000], ids=["whole", "cut"])
def test_plain_spans_evaluate_as_when_every_span_is_decoded(
    dumps: dict[str, str], fmt: str, chunk_bytes: int | None
) -> None:
    batch = run_batch(SUITE, [dumps[fmt]], workers=1, chunk_bytes=chunk_bytes)
    assert batch.diagnostics == []
    assert _rows(batch.results) == _expected_from_full_spans(dumps[fmt])


@pytest.mark.parametrize("fmt", ["jsonl", "pb"])
def test_plain_spans_evaluate_as_read_traces_reads_them(dumps: dict[str, str], fmt: str) -> None:
    batch = run_batch(SUITE, [dumps[fmt]], workers=1, chunk_bytes=3000)
    assert batch.merged_count > 0  # the cut really split traces
    assert _rows(batch.results) == _expected_from_read_traces(dumps[fmt])


def test_plain_spans_count_as_spans_read(dumps: dict[str, str]) -> None:
    batch = run_batch(SUITE, [dumps["jsonl"]], workers=1)
    assert batch.span_count == sum(len(run) for run in _runs_with_plain_spans())


@pytest.mark.parametrize("fmt", ["jsonl", "pb"])
@pytest.mark.parametrize("chunk_bytes", [None, 3000], ids=["whole", "cut"])
def test_chunks_hand_out_plain_spans_as_heads_and_agent_spans_in_full(
    dumps: dict[str, str], fmt: str, chunk_bytes: int | None
) -> None:
    chunks = plan_chunks([dumps[fmt]], chunk_bytes=chunk_bytes)
    diagnostics: list[Diagnostic] = []
    spans = [
        span
        for chunk in chunks
        for _, spans_of_record in read_chunk(chunk, None, diagnostics)
        for span in spans_of_record
    ]
    heads = {s.name for s in spans if isinstance(s, SpanHead)}
    full = {s.name for s in spans if isinstance(s, Span)}
    assert heads == {"GET", "SELECT", "cache.get"}
    assert "invoke_agent refund-agent" in full
    assert "execute_tool issue_refund" in full
    assert diagnostics == []
