"""What a task returns (per-group verdicts), and how it travels back to the driver.

A process pool or a Dask cluster pickles each ``ChunkOutcome``. Pickled as they are, the
slotted dataclasses of a group and its row (``GroupOutcome``, ``CaseResult``, ``Score``) each
go through a state dict: about 20-25 us per trace to write in the worker and 9-14 us to read
in the driver (the seed's checks, one policy). Each of them pickles instead as its field
values, rebuilt by one positional call (their ``__reduce_ex__``); a score the task's
``RowCompactor`` shares among rows is written once, as pickle writes any shared object once.
The spilled rows (``spill``) are pickled the same way. A task run in the driver's process is
never pickled. A row or score of a kind this module does not know (a ``Score`` subclass from
a custom scorer) pickles as it always did.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, SupportsIndex

from tooltrail.batch.chunks import Extent
from tooltrail.batch.matching import UnmatchedTrace
from tooltrail.otlp import Diagnostic
from tooltrail.results import CaseResult

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

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """Pickled as its field values (see the module's docstring), the extent as a tuple."""
        extent = self.extent
        return _group, (
            self.key,
            self.trace_ids,
            self.position,
            None if extent is None else (extent.start, extent.end, extent.line),
            self.results,
            self.unmatched,
        )


@dataclass(slots=True)
class ChunkOutcome:
    #: The chunk read (for a merge: the first chunk involved).
    chunk_index: int
    groups: list[GroupOutcome]
    diagnostics: list[Diagnostic]
    span_count: int
    byte_count: int
    merged: bool = False
    #: How the task's process read its records (``convert.engine.reading_path()``): a
    #: worker's own environment decides, so the driver can tell which path each worker used.
    reading_path: str = ""


def _group(
    key: str,
    trace_ids: tuple[str, ...],
    position: Position,
    extent: tuple[int, int, int | None] | None,
    results: list[CaseResult],
    unmatched: UnmatchedTrace | None,
) -> GroupOutcome:
    """A ``GroupOutcome`` from its pickled values (``GroupOutcome.__reduce_ex__``)."""
    return GroupOutcome(
        key, trace_ids, position, None if extent is None else Extent(*extent), results, unmatched
    )
