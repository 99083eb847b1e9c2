"""The trajectories a JSON or HTML report embeds are picked from rows read back from disk in
one walk, not one walk per row picked: indexing ``SpilledRows`` walks from the first row, and a
report embeds up to ``MAX_FAILING_TRAJECTORIES`` failing rows and a sample of passing ones."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fixtures import CORPUS, refund_case, refund_suite

from tooltrail.batch import run_batch
from tooltrail.batch.spill import SpilledRows
from tooltrail.report.trajectory import collect_trajectories, embedded_rows, picked_rows
from tooltrail.results import CaseResult

SUITE = refund_suite(refund_case(match="all"))
DUMPS = sorted(str(path) for path in CORPUS.glob("*/*.otlp.*"))


def test_trajectories_of_spilled_rows_are_picked_in_one_walk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = run_batch(SUITE, DUMPS, workers=1, spill_rows=None)
    spilled = run_batch(SUITE, DUMPS, workers=1, spill_rows=1, chunk_bytes=20_000)
    assert isinstance(spilled.results, SpilledRows)
    expected = collect_trajectories(DUMPS, kept.results)
    picked = embedded_rows(kept.results)
    passing = [i for i in picked if kept.results[i].passed]
    assert len(picked) > len(passing) > 2  # failing rows and a sample of passing ones
    walks = 0
    real = SpilledRows.__iter__

    def counted(rows: SpilledRows) -> Iterator[CaseResult]:
        nonlocal walks
        walks += 1
        return real(rows)

    monkeypatch.setattr(SpilledRows, "__iter__", counted)
    found = collect_trajectories(DUMPS, spilled.results)
    assert walks == 2  # which rows to embed, then those rows
    assert list(found) == list(expected) and len(found) == len(picked)
    assert [t.to_dict() for t in found.values()] == [t.to_dict() for t in expected.values()]


def test_rows_are_picked_in_the_order_asked_and_out_of_range_is_an_error() -> None:
    rows = [CaseResult(f"c{n}", True, []) for n in range(5)]
    assert [row.case_id for row in picked_rows(rows, [3, -1, 0]).values()] == ["c3", "c4", "c0"]
    assert list(picked_rows(rows, [3, -1, 0])) == [3, 4, 0]
    assert picked_rows(rows, []) == {}
    with pytest.raises(IndexError):
        picked_rows(rows, [5])
    with pytest.raises(IndexError):
        picked_rows(rows, [-6])
