"""Report rows held compactly: a nightly run keeps hundreds of thousands of them in memory.

Most scores of a healthy run are the same from trace to trace (``Required tool 'lookup_order'
was called.``, value 1.0, about the whole trace or a span id). ``RowCompactor`` makes equal
scores about the whole trace one shared object, and equal strings one string, which cuts the
memory for rows several-fold. Each task compacts its own rows; what it shares stays shared in
the driver, since pickle writes a shared object once (which also makes the rows a worker sends
back smaller), so the driver does not compact again: across chunks little is left to share
(5,000 rows from 8 chunks: 24,028 distinct objects, 23,400 after a driver-side pass, which cost
more CPU than that saves memory). Rows are read-only once evaluated; nothing here changes a
value.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from tooltrail.checks import Score
from tooltrail.results import CaseResult

#: Distinct strings and scores remembered; past this, rows are kept as they are.
MAX_SHARED = 200_000

#: What makes two scores about the whole trace interchangeable: every field but ``span_ids``.
_whole_trace_key = attrgetter(
    "name", "metric", "value", "passed", "explanation", "required", "skipped", "error", "turn"
)


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
        row.case_id = case_id = self._string(row.case_id)
        if row.label == case_id:
            row.label = case_id
        scores = row.scores
        shared_scores = self._scores
        strings = self._strings
        for i, score in enumerate(scores):
            if score.span_ids:
                # The strings a check spells once (its name, its usual texts) are known: found
                # here at once, without a call per field (``_share_fields`` for the others).
                name, metric, explanation = score.name, score.metric, score.explanation
                if (
                    strings.get(name) is name
                    and strings.get(metric) is metric
                    and strings.get(explanation) is explanation
                ):
                    self._share_value(score)
                else:
                    self._share_fields(score)
                continue
            key = _whole_trace_key(score)
            shared = shared_scores.get(key)
            if shared is not None:
                scores[i] = shared
            else:
                self._share_fields(score)
                if len(shared_scores) < self.max_shared:
                    shared_scores[key] = score

    def _share_fields(self, score: Score) -> None:
        score.name = self._string(score.name)
        score.metric = self._string(score.metric)
        score.explanation = self._string(score.explanation)
        self._share_value(score)

    def _share_value(self, score: Score) -> None:
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
