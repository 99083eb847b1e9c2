"""The rows of the whole corpus, as they travel from pool workers and are spilled to disk and
read back, are exactly the rows evaluated in memory, in every report format: the pickled form
of rows and scores (``batch.outcomes``) changes nothing a report shows."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures import CORPUS, refund_case, refund_suite

from tooltrail.batch import BatchResult, run_batch
from tooltrail.batch.spill import SpilledRows
from tooltrail.report import render_json, render_junit, render_markdown, render_text
from tooltrail.results import EvaluationReport

SUITE = refund_suite(
    refund_case(
        match="all",
        evaluators=[
            {"name": "tool_call_precision", "threshold": 1.0},
            {"name": "tool_call_recall"},
            {"name": "no_redundant_tool_calls", "threshold": 1.0},
            {"name": "max_tool_calls", "config": {"max": 3}, "required": False},
        ],
    ),
    {
        "id": "booking",
        "match": "all",
        "forbidden_tools": ["issue_refund", "web_search"],
        "required_tool_arguments": {"create_booking": ["time"]},
        "max_tool_calls": 4,
    },
)
DUMPS = sorted(str(path) for path in CORPUS.glob("*/*.otlp.*"))


def _report(result: BatchResult) -> EvaluationReport:
    return EvaluationReport.from_results(SUITE, result.results)


@pytest.fixture(scope="module")
def kept() -> BatchResult:
    return run_batch(SUITE, DUMPS, workers=1, spill_rows=None)


@pytest.mark.parametrize("workers", [1, 2])
def test_corpus_rows_spilled_and_sent_by_workers_are_the_rows_kept_in_memory(
    kept: BatchResult, workers: int
) -> None:
    spilled = run_batch(SUITE, DUMPS, workers=workers, spill_rows=1, chunk_bytes=20_000)
    assert isinstance(spilled.results, SpilledRows) and isinstance(kept.results, list)
    assert len(kept.results) == 2 * kept.group_count > 200  # both cases on every trace
    rows = [row.to_dict() for row in kept.results]
    assert any(score["span_ids"] for row in rows for score in row["scores"])
    assert [row.to_dict() for row in spilled.results] == rows
    for render in (render_text, render_json, render_junit, render_markdown):
        assert render(_report(spilled)) == render(_report(kept))


def test_the_corpus_dumps_are_there() -> None:
    assert all(Path(path).stat().st_size for path in DUMPS)
