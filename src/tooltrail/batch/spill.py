"""Report rows kept on disk past a threshold, so the driver's memory stops growing with the dump.

A nightly dump has hundreds of thousands of rows (about 1.8 KB each in memory), and the driver
can only order them once every chunk is in. Past ``spill_rows`` rows, each arriving chunk
outcome's rows go to a private temporary file instead (``tempfile.mkdtemp``: mode 0700),
written in blocks of consecutive groups as ``ChunkOutcome`` pickles (compact: each distinct
score once per block). In memory stay only what planning and ordering need: the groups (key,
trace ids, position, extent, unmatched), where each group's rows lie, and the label counts.

``SpilledRows`` reads them back lazily, in report order and relabelled, as often as asked: the
report writers, the summary and ``--annotate`` each walk it. The file is pickle of our own
objects, written and read only by this process, and removed by ``close()``, when the rows are
no longer referenced, or when the interpreter exits, whichever comes first.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import overload

from tooltrail.batch.gc_pause import gc_paused
from tooltrail.batch.outcomes import ChunkOutcome, GroupOutcome
from tooltrail.evaluate import CaseResult

#: Rows written (and read back) as one block: ~1 MB in memory while read.
BLOCK_ROWS = 512
#: Blocks an iteration keeps loaded: the current one, and those of merged groups placed among
#: its groups (a trace split across chunks is evaluated apart and sorted in between).
CACHED_BLOCKS = 4

#: A spilled group's rows: (block number, index in the block, row count).
Where = tuple[int, int, int]

#: What a spilled group holds in place of its rows (shared; never appended to).
_NO_ROWS: list[CaseResult] = []


class RowSpill:
    """A private temporary file of report rows, written block by block as outcomes arrive."""

    def __init__(self, block_rows: int = BLOCK_ROWS) -> None:
        self.block_rows = block_rows
        self.directory = tempfile.mkdtemp(prefix="tooltrail-rows-")
        try:
            self._fd = os.open(
                os.path.join(self.directory, "rows.pickle"),
                os.O_RDWR | os.O_CREAT | os.O_EXCL,
                0o600,
            )
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise
        self._size = 0
        self._offsets = array("q")
        self._lengths = array("q")
        #: Rows written per label, for ``label run N``.
        self.label_counts: dict[str, int] = {}
        #: Spilled groups by ``id``: they stay referenced by their outcomes for the whole run.
        self._where: dict[int, Where] = {}
        self._remove = weakref.finalize(self, _remove, self._fd, self.directory, os.getpid())

    @property
    def closed(self) -> bool:
        return not self._remove.alive

    def add(self, groups: Iterable[GroupOutcome]) -> int:
        """Write the groups' rows and leave each group without them; return the rows written."""
        written = 0
        counts = self.label_counts
        block: list[GroupOutcome] = []
        size = 0
        for group in sorted(groups, key=_position):  # read back in this order: see SpilledRows
            rows = group.results
            if not rows:
                continue
            for row in rows:
                counts[row.label] = counts.get(row.label, 0) + 1
            self._where[id(group)] = (len(self._offsets), len(block), len(rows))
            block.append(GroupOutcome("", (), (0, 0), None, rows))
            group.results = _NO_ROWS
            size += len(rows)
            if size >= self.block_rows:
                self._write(block)
                written += size
                block, size = [], 0
        if block:
            self._write(block)
            written += size
        return written

    def where(self, group: GroupOutcome) -> Where | None:
        """Where ``group``'s rows were written (``None``: it had none, or was not spilled)."""
        return self._where.get(id(group))

    def read_block(self, number: int) -> list[list[CaseResult]]:
        """The rows of each group of block ``number``, as written (labels unnumbered)."""
        if self.closed:
            raise ValueError("the spilled rows were closed")
        data = os.pread(self._fd, self._lengths[number], self._offsets[number])
        with gc_paused():  # thousands of objects, none in a cycle: see ``gc_pause``
            outcome = pickle.loads(data)  # our own file, written by ``_write`` in this process
        return [group.results for group in outcome.groups]

    def rows(
        self, ordered: Sequence[GroupOutcome], discarded: Iterable[GroupOutcome]
    ) -> SpilledRows:
        """The rows of ``ordered`` groups, in that order; ``discarded`` groups (parts of traces
        evaluated again, merged) had rows written that are left out, and out of the counts."""
        counts = dict(self.label_counts)
        for group in discarded:
            at = self.where(group)
            if at is not None:
                for row in self.read_block(at[0])[at[1]]:
                    counts[row.label] -= 1
        blocks, slots = array("q"), array("q")
        total = 0
        for group in ordered:
            at = self.where(group)
            if at is not None:
                blocks.append(at[0])
                slots.append(at[1])
                total += at[2]
        return SpilledRows(self, blocks, slots, total, counts)

    def close(self) -> None:
        """Remove the file and its directory (again: nothing happens)."""
        self._remove()

    def _write(self, block: list[GroupOutcome]) -> None:
        data = pickle.dumps(ChunkOutcome(0, block, [], 0, 0), protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(data)
        while view:
            n = os.pwrite(self._fd, view, self._size)
            self._size += n
            view = view[n:]
        self._offsets.append(self._size - len(data))
        self._lengths.append(len(data))


class SpilledRows(Sequence[CaseResult]):
    """Report rows read back from a ``RowSpill`` in report order, with repeated labels numbered
    (``label run N``) as ``number_repeated_labels`` numbers them in memory.

    Each walk reads the file again and makes new row objects: iterate as often as needed, but
    changes to a row do not stick. ``len`` is immediate; indexing walks from the start.
    """

    def __init__(
        self,
        spill: RowSpill,
        blocks: array[int],
        slots: array[int],
        total: int,
        label_counts: dict[str, int],
    ) -> None:
        self._spill = spill
        self._blocks = blocks
        self._slots = slots
        self._total = total
        self._repeated = {label for label, n in label_counts.items() if n > 1}

    def __len__(self) -> int:
        return self._total

    def __iter__(self) -> Iterator[CaseResult]:
        spill = self._spill
        repeated = self._repeated
        seen: dict[str, int] = {}
        loaded: OrderedDict[int, list[list[CaseResult]]] = OrderedDict()
        for number, slot in zip(self._blocks, self._slots, strict=True):
            block = loaded.get(number)
            if block is None:
                block = loaded[number] = spill.read_block(number)
                if len(loaded) > CACHED_BLOCKS:
                    loaded.popitem(last=False)
            else:
                loaded.move_to_end(number)
            for row in block[slot]:
                if row.label in repeated:
                    n = seen[row.label] = seen.get(row.label, 0) + 1
                    row.label = f"{row.label} run {n}"
                yield row

    @overload
    def __getitem__(self, index: int) -> CaseResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[CaseResult]: ...

    def __getitem__(self, index: int | slice) -> CaseResult | list[CaseResult]:
        if isinstance(index, slice):
            return list(self)[index] if index.step and index.step < 0 else _sliced(self, index)
        if index < 0:
            index += self._total
        if not 0 <= index < self._total:
            raise IndexError("row index out of range")
        return next(islice(self, index, None))

    def close(self) -> None:
        """Remove the spilled file now (also done when these rows are no longer referenced)."""
        self._spill.close()


def _sliced(rows: SpilledRows, index: slice) -> list[CaseResult]:
    start, stop, step = index.indices(len(rows))
    return list(islice(rows, start, stop, step))


def _position(group: GroupOutcome) -> tuple[int, int]:
    return group.position


def _remove(fd: int, directory: str, owner: int) -> None:
    """Close and delete the spill; a forked child holding a copy of it leaves it alone."""
    if os.getpid() != owner:
        return
    try:
        os.close(fd)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
