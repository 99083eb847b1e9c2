"""What a task returns (per-group verdicts), and how it travels back to the driver.

A process pool or a Dask cluster pickles each ``ChunkOutcome``. Pickled as they are, the
slotted dataclasses of a row (``CaseResult``, ``Score``) each go through a state dict: about
20-25 µs per trace to write in the worker and 9-14 µs to read in the driver (the seed's
checks, one policy). ``ChunkOutcome`` pickles instead as plain tuples, each distinct score
once (the ones a task's ``RowCompactor`` shares stay shared) and referred to by index: a third
smaller, 6-10 µs per trace to pack and write, 6-9 µs to read and rebuild. A task run in the
driver's process is never pickled.
Rows of a kind this module does not know (a ``Score`` subclass from a custom scorer, fields
added to ``CaseResult`` or ``Score`` later) travel as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from tooltrail.batch.chunks import Extent
from tooltrail.batch.matching import UnmatchedTrace
from tooltrail.checks import Score
from tooltrail.evaluate import CaseResult
from tooltrail.otlp import Diagnostic

#: Sort key of a group's rows: (chunk index, order of first appearance in that chunk).
Position = tuple[int, int]


@dataclass(slots=True)
class GroupOutcome:
    """The verdicts on one trace (or conversation) read by one task."""

    key: str
    trace_ids: tuple[str, ...]
    position: Position
    #: Where the group's records lie in its chunk (chunk pass only).
    extent: Extent | None = None
    results: list[CaseResult] = field(default_factory=list)
    unmatched: UnmatchedTrace | None = None


@dataclass(slots=True)
class ChunkOutcome:
    #: The chunk read (for a merge: the first chunk involved).
    chunk_index: int
    groups: list[GroupOutcome]
    diagnostics: list[Diagnostic]
    span_count: int
    byte_count: int
    merged: bool = False
    #: How the task's process read its records (``otlp.read.core.reading_path()``): a
    #: worker's own environment decides, so the driver can tell which path each worker used.
    reading_path: str = ""

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _unpack, (
            self.chunk_index,
            _pack_groups(self.groups),
            self.diagnostics,
            self.span_count,
            self.byte_count,
            self.merged,
            self.reading_path,
        )


_ROW_FIELDS = ("case_id", "passed", "scores", "trace_id", "label")
_SCORE_FIELDS = tuple(f.name for f in fields(Score))
#: Whether rows can travel as tuples: every field of theirs is one this module rebuilds.
_PACKABLE = tuple(f.name for f in fields(CaseResult)) == _ROW_FIELDS and all(
    f.init for f in fields(Score)
)
_score_values = attrgetter(*_SCORE_FIELDS)

#: A group as it travels: key, trace ids, position, extent as (start, end, line), rows, unmatched.
_PackedGroup = tuple[str, tuple[str, ...], Position, Any, list[Any], UnmatchedTrace | None]


def _pack_groups(groups: list[GroupOutcome]) -> tuple[list[Any], list[_PackedGroup]]:
    """(distinct scores, groups): a score is its field values (a tuple), or the object itself
    when it is not exactly a ``Score``; a row is (case id, passed, score indices, trace id,
    label), or the ``CaseResult`` itself when rows cannot be packed."""
    index: dict[int, int] = {}
    scores: list[Any] = []
    packed: list[_PackedGroup] = []
    for group in groups:
        rows: list[Any] = []
        for row in group.results:
            if not _PACKABLE or row.__class__ is not CaseResult:
                rows.append(row)
                continue
            refs = []
            for score in row.scores:
                n = index.get(id(score))
                if n is None:
                    n = index[id(score)] = len(scores)
                    scores.append(_score_values(score) if score.__class__ is Score else score)
                refs.append(n)
            rows.append((row.case_id, row.passed, refs, row.trace_id, row.label))
        extent = group.extent
        packed.append(
            (
                group.key,
                group.trace_ids,
                group.position,
                None if extent is None else (extent.start, extent.end, extent.line),
                rows,
                group.unmatched,
            )
        )
    return scores, packed


def _unpack(
    chunk_index: int,
    packed: tuple[list[Any], list[_PackedGroup]],
    diagnostics: list[Diagnostic],
    span_count: int,
    byte_count: int,
    merged: bool,
    reading_path: str = "",
) -> ChunkOutcome:
    values, packed_groups = packed
    scores = [Score(*v) if v.__class__ is tuple else v for v in values]
    groups = []
    for key, trace_ids, position, extent, rows, unmatched in packed_groups:
        results = [
            CaseResult(row[0], row[1], [scores[n] for n in row[2]], row[3], row[4])
            if row.__class__ is tuple
            else row
            for row in rows
        ]  # positional: ``_PACKABLE`` checked that these are its fields, in this order
        groups.append(
            GroupOutcome(
                key,
                trace_ids,
                position,
                None if extent is None else Extent(*extent),
                results,
                unmatched,
            )
        )
    return ChunkOutcome(
        chunk_index, groups, diagnostics, span_count, byte_count, merged, reading_path
    )
