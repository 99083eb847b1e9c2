"""Rows kept compactly in the driver read exactly as evaluated."""

from __future__ import annotations

import copy
from pathlib import Path

from fixtures import recorded_refund_case, refund_suite
from test_batch_support import SEED_RUNS, jsonl, record, write

from tooltrail.batch import run_batch
from tooltrail.batch.compact import RowCompactor

SUITE = refund_suite(
    recorded_refund_case(
        "expected_contains", match="all", required_tools=["lookup_order", "issue_refund"]
    ),
    name="s",
)


def test_compacted_rows_serialize_exactly_as_before(tmp_path: Path) -> None:
    dump = write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS * 3)))
    rows = run_batch(SUITE, [dump], workers=1).results
    before = [r.to_dict() for r in copy.deepcopy(rows)]
    RowCompactor().rows(rows)
    assert [r.to_dict() for r in rows] == before


def test_equal_whole_trace_scores_become_one_shared_object(tmp_path: Path) -> None:
    dump = write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS[:1] * 2)))
    rows = run_batch(SUITE, [dump], workers=1).results
    first, second = copy.deepcopy(rows[0]), copy.deepcopy(rows[1])  # nothing shared
    assert first.scores[0] is not second.scores[0]
    RowCompactor().rows([first, second])
    assert first.scores[0] is second.scores[0]  # contains:$49.99, about the whole trace
    assert first.scores[1] is not second.scores[1]  # required_tool: points at each trace's span
    assert first.scores[1].explanation is second.scores[1].explanation


def test_rows_from_pool_workers_still_share_their_equal_scores(tmp_path: Path) -> None:
    """Each task compacts its rows; pickling them back to the driver keeps what they share."""
    dump = write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS[:1] * 8)))
    result = run_batch(SUITE, [dump], workers=2, chunk_bytes=6000)
    rows = result.results
    assert len(rows) == 8 and 1 < result.chunk_count < 8
    contains = {id(row.scores[0]) for row in rows}  # contains:$49.99, about the whole trace
    assert len(contains) <= result.chunk_count
