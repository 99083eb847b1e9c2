"""Report rows kept on disk past a threshold, so the driver's memory stops growing with the dump.

A nightly dump has hundreds of thousands of rows (about 1.8 KB each in memory), and the driver
can only order them once every chunk is in. Past ``spill_rows`` rows, each arriving chunk
outcome's rows go to a private temporary file instead (``tempfile.mkdtemp``: mode 0700),
written in blocks of consecutive groups, each block one pickle of its groups' rows (compact:
each distinct score once per block; rows and scores pickle as their field values, see
``outcomes``). In memory stay only what planning and ordering need, packed per outcome
(``SpilledGroups``: keys, and an array of positions, extents and where each group's rows
lie), and the label counts: about 0.25 KB a trace, against ~0.75 KB as ``GroupOutcome``
objects and ~1.8 KB for its row.

``SpilledRows`` reads them back lazily, in report order and relabelled, as often as asked: the
summary (with the text report or the HTML page's rows, in one walk), the other report writers
and ``--annotate`` each walk it; the label counts give the longest label without a walk. The
file is pickle of our own objects, written and read only by this process, and removed by
``close()``, when the rows are no longer referenced, or when the interpreter exits, whichever
comes first.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import weakref
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import overload

from tooltrail.batch.chunks import Extent
from tooltrail.batch.matching import UnmatchedTrace
from tooltrail.batch.outcomes import GroupOutcome, Position
from tooltrail.gc_pause import gc_paused
from tooltrail.results import CaseResult

#: Rows written (and read back) as one block: ~1 MB in memory while read.
BLOCK_ROWS = 512
#: Blocks an iteration keeps loaded: the current one, and those of merged groups placed among
#: its groups (a trace split across chunks is evaluated apart and sorted in between).
CACHED_BLOCKS = 4

#: A spilled group as ordering needs it: position, its rows' block, index in the block and
#: count (0: none), and what it is when no case selected it.
Placed = tuple[Position, int, int, int, "UnmatchedTrace | None"]


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
        self._remove = weakref.finalize(self, _remove, self._fd, self.directory, os.getpid())

    @property
    def closed(self) -> bool:
        return not self._remove.alive

    def add(self, groups: Iterable[GroupOutcome]) -> SpilledGroups:
        """Write the groups' rows; return the groups as planning needs them, without rows."""
        counts = self.label_counts
        spilled = SpilledGroups()
        block: list[list[CaseResult]] = []
        size = 0
        for group in sorted(groups, key=_position):  # read back in this order: see SpilledRows
            rows = group.results
            if not rows:
                spilled.append(group, -1, 0, 0)
                continue
            for row in rows:
                counts[row.label] = counts.get(row.label, 0) + 1
            spilled.append(group, len(self._offsets), len(block), len(rows))
            block.append(rows)
            size += len(rows)
            if size >= self.block_rows:
                self._write(block)
                block, size = [], 0
        if block:
            self._write(block)
        return spilled

    def read_block(self, number: int) -> list[list[CaseResult]]:
        """The rows of each group of block ``number``, as written (labels unnumbered)."""
        if self.closed:
            raise ValueError("the spilled rows were closed")
        data = os.pread(self._fd, self._lengths[number], self._offsets[number])
        with gc_paused():  # thousands of objects, none in a cycle: see ``gc_pause``
            rows: list[list[CaseResult]] = pickle.loads(data)  # our own file, see ``_write``
        return rows

    def rows(self, ordered: Iterable[Placed], discarded: Iterable[Placed]) -> SpilledRows:
        """The rows of the ``ordered`` groups (``SpilledGroups.placed``), in that order; the
        ``discarded`` groups (parts of traces evaluated again, merged) had rows written that
        are left out, and out of the label counts. Called once, when the run is over."""
        counts = self.label_counts
        for _, block, slot, n, _ in discarded:
            if n:
                for row in self.read_block(block)[slot]:
                    counts[row.label] -= 1
        blocks, slots = array("q"), array("q")
        total = 0
        for _, block, slot, n, _ in ordered:
            if n:
                blocks.append(block)
                slots.append(slot)
                total += n
        return SpilledRows(self, blocks, slots, total, counts)

    def close(self) -> None:
        """Remove the file and its directory (again: nothing happens)."""
        self._remove()

    def _write(self, block: list[list[CaseResult]]) -> None:
        data = pickle.dumps(block, protocol=pickle.HIGHEST_PROTOCOL)
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
        #: The length of the longest label as read back (``label run N`` for the last of N).
        self.longest_label = max(
            (
                len(label if n == 1 else f"{label} run {n}")
                for label, n in label_counts.items()
                if n > 0
            ),
            default=0,
        )

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


class SpilledGroups(Sequence[GroupOutcome]):
    """The groups of one outcome, packed: their keys, and one array for the numbers. Planning
    and ordering read ``keys``, ``trace_ids()`` and ``placed()``; indexing makes a
    ``GroupOutcome`` (without rows) anew, for the few groups that are merged."""

    def __init__(self) -> None:
        self._keys: list[str] = []
        #: Trace ids of groups whose ids are not just their key (conversations), by index.
        self._trace_ids: dict[int, tuple[str, ...]] = {}
        # position (2), extent start/end/line (-1: none; -2: no extent), block, slot, row count
        self._numbers = array("q")
        self._unmatched: dict[int, UnmatchedTrace] = {}

    def append(self, group: GroupOutcome, block: int, slot: int, row_count: int) -> None:
        n = len(self._keys)
        self._keys.append(group.key)
        if group.trace_ids != (group.key,):
            self._trace_ids[n] = group.trace_ids
        extent = group.extent
        if extent is None:
            start, end, line = 0, 0, -2
        else:
            start, end = extent.start, extent.end
            line = -1 if extent.line is None else extent.line
        self._numbers.extend((*group.position, start, end, line, block, slot, row_count))
        if group.unmatched is not None:
            self._unmatched[n] = group.unmatched

    def __len__(self) -> int:
        return len(self._keys)

    @overload
    def __getitem__(self, index: int) -> GroupOutcome: ...

    @overload
    def __getitem__(self, index: slice) -> list[GroupOutcome]: ...

    def __getitem__(self, index: int | slice) -> GroupOutcome | list[GroupOutcome]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        key = self._keys[index]  # raises IndexError past the end
        index %= len(self._keys)
        chunk, order, start, end, line = self._numbers[index * _NUMBERS : index * _NUMBERS + 5]
        return GroupOutcome(
            key,
            self._trace_ids.get(index, (key,)),
            (chunk, order),
            None if line == -2 else Extent(start, end, None if line == -1 else line),
            [],
            self._unmatched.get(index),
        )

    def __iter__(self) -> Iterator[GroupOutcome]:
        for index in range(len(self._keys)):
            yield self[index]

    @property
    def keys(self) -> Sequence[str]:
        """Each group's key, in order (no group is unpacked)."""
        return self._keys

    def trace_ids(self) -> Iterator[tuple[str, tuple[str, ...]]]:
        """(key, trace ids) of each group, in order."""
        more = self._trace_ids
        for index, key in enumerate(self._keys):
            yield key, more.get(index, (key,))

    def placed(self, wanted: Callable[[str], bool]) -> Iterator[Placed]:
        """The groups whose key is ``wanted``, as ordering needs them, in position order."""
        numbers = self._numbers
        unmatched = self._unmatched
        for index, key in enumerate(self._keys):
            if wanted(key):
                at = index * _NUMBERS
                yield (
                    (numbers[at], numbers[at + 1]),
                    numbers[at + 5],
                    numbers[at + 6],
                    numbers[at + 7],
                    unmatched.get(index),
                )


#: Numbers kept per group by ``SpilledGroups``.
_NUMBERS = 8


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
