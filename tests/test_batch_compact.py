"""Rows kept compactly in the driver read exactly as evaluated."""

from __future__ import annotations

import copy
from pathlib import Path

from test_batch_support import SEED_RUNS, jsonl, record, write

from tooltrail.batch import run_batch
from tooltrail.batch.compact import RowCompactor
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {
        "name": "s",
        "cases": [
            {
                "id": "refund",
                "match": "all",
                "expected_contains": ["$49.99"],
                "required_tools": ["lookup_order", "issue_refund"],
            }
        ],
    }
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
