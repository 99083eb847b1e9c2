"""Report rows held compactly: a nightly run keeps hundreds of thousands of them in memory.

Most scores of a healthy run are the same from trace to trace (``Required tool 'lookup_order'
was called.``, value 1.0, about the whole trace or a span id). ``RowCompactor`` makes equal
scores about the whole trace one shared object, and equal strings one string, which cuts the
driver's memory for rows several-fold and makes the rows a worker sends back smaller (pickle
writes a shared object once). Rows are read-only once evaluated; nothing here changes a value.
"""

from __future__ import annotations

from typing import Any

from tooltrail.checks import Score
from tooltrail.evaluate import CaseResult

#: Distinct strings and scores remembered; past this, rows are kept as they are.
MAX_SHARED = 200_000


class RowCompactor:
    """Shares equal strings and equal whole-trace scores among the rows it is given."""

    def __init__(self, max_shared: int = MAX_SHARED) -> None:
        self.max_shared = max_shared
        self._strings: dict[str, str] = {}
        self._scores: dict[tuple[Any, ...], Score] = {}
        self._floats: dict[float, float] = {}

    def rows(self, rows: list[CaseResult]) -> None:
        for row in rows:
            self.row(row)

    def row(self, row: CaseResult) -> None:
        row.case_id = self._string(row.case_id)
        if row.label == row.case_id:
            row.label = row.case_id
        scores = row.scores
        for i, score in enumerate(scores):
            if score.span_ids:
                self._share_fields(score)
                continue
            key = (
                score.name,
                score.metric,
                score.value,
                score.passed,
                score.explanation,
                score.required,
                score.skipped,
                score.error,
                score.turn,
            )
            shared = self._scores.get(key)
            if shared is not None:
                scores[i] = shared
            else:
                self._share_fields(score)
                if len(self._scores) < self.max_shared:
                    self._scores[key] = score

    def _share_fields(self, score: Score) -> None:
        score.name = self._string(score.name)
        score.metric = self._string(score.metric)
        score.explanation = self._string(score.explanation)
        value = self._floats.get(score.value)
        if value is not None:
            score.value = value
        elif len(self._floats) < 1024:
            self._floats[score.value] = score.value

    def _string(self, text: str) -> str:
        shared = self._strings.get(text)
        if shared is not None:
            return shared
        if len(self._strings) < self.max_shared:
            self._strings[text] = text
        return text
