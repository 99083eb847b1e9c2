"""The batch pass: plan chunks, run them anywhere, merge traces split across chunks, order rows.

``run_batch`` is the one function the CLI (and any Python caller) uses. The verdicts do not
depend on where the tasks ran, how files were cut or in which order tasks finished: each
group's rows sort by the first appearance of its traces in the input (chunk, then order within
the chunk), and a trace (or conversation) seen in several chunks is evaluated once, whole, by a
merge task that re-reads only its records.

Inputs are expanded here: a path that names nothing is an ``InputError``; a directory that
cannot be listed is a diagnostic (skipped input) and the rest is read. On Dask, paths are made
absolute before tasks leave this process (workers have their own working directory), and a
worker that cannot open a file says so with its host name.

Past ``spill_rows`` rows, each outcome's rows go to a temporary file as they arrive (see
``spill``) and ``BatchResult.results`` reads them back lazily: the driver then holds only what
planning and ordering need, whatever the size of the dump.
"""

from __future__ import annotations

import heapq
import os
import socket
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from operator import itemgetter
from typing import TYPE_CHECKING

from tooltrail.batch.chunks import Chunk, Extent, InputError, plan_chunks
from tooltrail.batch.executors import (
    DaskExecutor,
    Executor,
    InlineExecutor,
    ProcessExecutor,
    default_workers,
)
from tooltrail.batch.matching import UnmatchedTrace
from tooltrail.batch.outcomes import ChunkOutcome, GroupOutcome, Position
from tooltrail.batch.spill import Placed, RowSpill, SpilledGroups, SpilledRows
from tooltrail.batch.tasks import (
    ChunkTask,
    EvalSettings,
    Grouping,
    MergeTask,
    evaluate_chunk,
    evaluate_merge,
)
from tooltrail.gc_pause import gc_paused
from tooltrail.otlp import DEFAULT_LIMITS, Diagnostic, Limits, expand_paths
from tooltrail.results import CaseResult
from tooltrail.score import close_process_judges
from tooltrail.suite import TestSuite

if TYPE_CHECKING:
    from tooltrail.judge import JudgeSettings

#: Called after each chunk with (groups evaluated, spans read, bytes read).
ProgressCallback = Callable[[int, int, int], None]
#: Called with each task's outcome as it finishes, in the driver's process, before its rows
#: are kept: what a progress display reads beyond the counts (the judge records of scores).
OutcomeCallback = Callable[[ChunkOutcome], None]

#: Rows the driver keeps in memory before it writes them to a temporary file.
DEFAULT_SPILL_ROWS = 10_000


@dataclass(slots=True)
class BatchResult:
    """Everything a batch pass found, in report order. ``close()`` (or ``with``) removes the
    temporary file of spilled rows at once; otherwise that happens when ``results`` is freed."""

    #: A list, or rows read back lazily from disk (``SpilledRows``) past ``spill_rows``.
    results: Sequence[CaseResult] = field(default_factory=list)
    unmatched: list[UnmatchedTrace] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: Traces (or conversations) read, matched or not.
    group_count: int = 0
    span_count: int = 0
    chunk_count: int = 0
    #: Groups read in several chunks (or files) and evaluated once, merged.
    merged_count: int = 0
    #: How the records were read (``convert.engine.reading_path()`` in each task's process),
    #: sorted: one path, unless workers' environments differ (``docs/core-path.md``).
    reading_paths: tuple[str, ...] = ()

    def longest_label(self) -> int:
        """The length of the longest row label, without reading spilled rows back (their
        label counts say it): the text report's label column, before its one walk."""
        if isinstance(self.results, SpilledRows):
            return self.results.longest_label
        return max([len(row.label) for row in self.results], default=0)

    def close(self) -> None:
        """Remove the spilled rows' file, if any; ``results`` cannot be read after that."""
        close = getattr(self.results, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> BatchResult:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_batch(
    suite: TestSuite,
    paths: Sequence[str],
    *,
    group: Grouping = "trace",
    workers: int | None = None,
    dask_address: str | None = None,
    limits: Limits | None = None,
    chunk_bytes: int | None = None,
    on_progress: ProgressCallback | None = None,
    spill_rows: int | None = DEFAULT_SPILL_ROWS,
    judge: JudgeSettings | None = None,
    on_outcome: OutcomeCallback | None = None,
) -> BatchResult:
    """Evaluate every trace in ``paths`` (files, directories, globs) against ``suite``.

    ``workers``: local processes (default: all cores; 1 runs in this process).
    ``dask_address``: run the same tasks on that Dask distributed scheduler instead.
    ``chunk_bytes``: size of the pieces large files are cut into (default: about four per
    worker, at most ``DEFAULT_CHUNK_BYTES``). Raises ``InputError`` when a path names nothing;
    a directory that cannot be listed is a diagnostic and its files are skipped.
    ``spill_rows``: rows kept in memory; past that, all rows go to a private temporary file and
    ``results`` reads them back in order, lazily (``None``: never).
    ``judge``: the settings of the run's judge (``score.run_judge_settings``); each worker
    process builds its own runner from them, and tasks run in this process close theirs here.
    ``on_outcome``: each chunk's outcome as it finishes (the CLI's progress bar).
    """
    try:
        with gc_paused():  # the rows pile up here, the facts of a chunk in a task: see ``gc_pause``
            return _plan_and_run(
                EvalSettings(suite=suite, group=group, limits=limits, judge=judge),
                paths,
                workers,
                dask_address,
                chunk_bytes,
                on_progress,
                spill_rows,
                on_outcome,
            )
    finally:
        if judge is not None:
            close_process_judges()


def _plan_and_run(
    settings: EvalSettings,
    paths: Sequence[str],
    workers: int | None,
    dask_address: str | None,
    chunk_bytes: int | None,
    on_progress: ProgressCallback | None,
    spill_rows: int | None,
    on_outcome: OutcomeCallback | None = None,
) -> BatchResult:
    limits = settings.limits
    plan_limits = limits or DEFAULT_LIMITS
    executor: Executor
    run_chunk: Callable[[ChunkTask], ChunkOutcome] = evaluate_chunk
    if dask_address is not None:
        files, skipped = _input_files(paths, absolute=True)
        executor = DaskExecutor(dask_address)
        run_chunk = evaluate_chunk_on_worker
        try:
            chunks = _plan_files(files, chunk_bytes, executor.parallelism(), plan_limits)
        except BaseException:
            executor.close()
            raise
    else:
        files, skipped = _input_files(paths, absolute=False)
        n = workers if workers is not None else default_workers()
        chunks = _plan_files(files, chunk_bytes, n, plan_limits)
        n = min(n, len(chunks))
        # One worker or one chunk: a pool would only add its startup time.
        executor = ProcessExecutor(n) if n > 1 else InlineExecutor()
    rows = _Rows(spill_rows)
    try:
        result = _run(executor, run_chunk, settings, chunks, on_progress, rows, on_outcome)
        result.diagnostics[:0] = skipped
        return result
    except BaseException:
        rows.close()  # an error, Ctrl-C: the spilled rows are nobody's now
        raise
    finally:
        executor.close()


def _input_files(
    paths: Sequence[str], *, absolute: bool
) -> tuple[list[tuple[str, bool]], list[Diagnostic]]:
    """The files of ``paths`` as ``(path, named)``, and the directories that could not be
    listed. Raises ``InputError`` when a path names nothing. ``absolute``: for workers that do
    not share this process's working directory."""
    if absolute:
        paths = [p if p == "-" else os.path.abspath(p) for p in paths]
    missing: list[Diagnostic] = []
    unreadable: list[Diagnostic] = []
    files = list(expand_paths(paths, missing, unreadable=unreadable))
    if missing:
        raise InputError("; ".join(str(p) for p in missing))
    return files, unreadable


def _plan_files(
    files: list[tuple[str, bool]], chunk_bytes: int | None, parallelism: int, limits: Limits
) -> list[Chunk]:
    """``plan_chunks`` over files already found; those found only by walking a directory keep
    ``named=False`` (one that is not OTLP is skipped quietly)."""
    chunks = plan_chunks(
        [path for path, _ in files],
        chunk_bytes=chunk_bytes,
        parallelism=parallelism,
        limits=limits,
    )
    walked = {path for path, named in files if not named}
    walked.difference_update(path for path, named in files if named)
    if not walked:
        return chunks
    return [replace(c, named=False) if c.path in walked else c for c in chunks]


def evaluate_chunk_on_worker(task: ChunkTask) -> ChunkOutcome:
    """``evaluate_chunk`` on a machine of its own: a file it cannot open is reported with the
    host name, since the driver could open it (its planning read it)."""
    path = task.chunk.path
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        reason = f"cannot open on host {socket.gethostname()}: {exc.strerror or exc}"
        problem = Diagnostic(path, None, None, reason)
        return ChunkOutcome(task.chunk.index, [], [problem], 0, task.chunk.size)
    return evaluate_chunk(task)


def _run(
    executor: Executor,
    run_chunk: Callable[[ChunkTask], ChunkOutcome],
    settings: EvalSettings,
    chunks: list[Chunk],
    on_progress: ProgressCallback | None,
    rows: _Rows,
    on_outcome: OutcomeCallback | None = None,
) -> BatchResult:
    outcomes: list[ChunkOutcome] = []
    for outcome in executor.run(run_chunk, [ChunkTask(settings, c) for c in chunks]):
        groups = len(outcome.groups)
        if on_outcome is not None:
            on_outcome(outcome)  # before its rows are kept: spilled, they leave the outcome
        rows.keep(outcome)
        outcomes.append(outcome)
        if on_progress is not None:
            on_progress(groups, outcome.span_count, outcome.byte_count)
    outcomes.sort(key=lambda o: o.chunk_index)

    component, spread, merges = _plan(outcomes, chunks, settings, rows.groups)
    merge_outcomes: list[ChunkOutcome] = []
    for outcome in executor.run(evaluate_merge, merges):
        rows.keep(outcome)
        merge_outcomes.append(outcome)

    result = BatchResult(
        chunk_count=len(chunks),
        merged_count=sum(len(rows.groups(o)) for o in merge_outcomes),
        reading_paths=tuple(
            sorted({o.reading_path for o in outcomes + merge_outcomes if o.reading_path})
        ),
    )
    for outcome in sorted(outcomes + merge_outcomes, key=lambda o: (o.chunk_index, o.merged)):
        result.diagnostics.extend(outcome.diagnostics)
        if not outcome.merged:
            result.span_count += outcome.span_count

    def final(key: str) -> bool:
        return component(key) not in spread

    if rows.spill is None:
        kept = [g for o in outcomes for g in o.groups if final(g.key)]
        merged = [g for o in merge_outcomes for g in o.groups]
        results: list[CaseResult] = []
        for g in sorted(kept + merged, key=_position):
            result.group_count += 1
            if g.unmatched is not None:
                result.unmatched.append(g.unmatched)
            results.extend(g.results)
        number_repeated_labels(results)
        result.results = results
    else:
        # No list of every group: each outcome's spilled groups are in position order already.
        ordered = heapq.merge(
            *[rows.packed(o).placed(final) for o in outcomes],
            *[rows.packed(o).placed(_always) for o in merge_outcomes],
            key=itemgetter(0),
        )
        discarded = (p for o in outcomes for p in rows.packed(o).placed(_never(final)))
        result.results = rows.spill.rows(_counted(result, ordered), discarded)
    return result


def _counted(result: BatchResult, ordered: Iterable[Placed]) -> Iterator[Placed]:
    """``ordered`` as it is walked, each group counted in ``result`` (and listed if unmatched)."""
    for placed in ordered:
        result.group_count += 1
        if placed[4] is not None:
            result.unmatched.append(placed[4])
        yield placed


def _always(key: str) -> bool:
    return True


def _never(wanted: Callable[[str], bool]) -> Callable[[str], bool]:
    return lambda key: not wanted(key)


def _position(group: GroupOutcome) -> Position:
    return group.position


class _Rows:
    """The rows of the outcomes as they arrive: in memory up to ``spill_rows``, then all of
    them (those held so far, and every later outcome's) written to a ``RowSpill``, and the
    outcome's groups packed (``SpilledGroups``)."""

    def __init__(self, spill_rows: int | None) -> None:
        self.spill_rows = spill_rows
        self.spill: RowSpill | None = None
        self._held: list[ChunkOutcome] = []
        self._count = 0
        self._spilled: dict[int, SpilledGroups] = {}  # by id of the outcome, kept all run

    def keep(self, outcome: ChunkOutcome) -> None:
        """Take ``outcome``'s rows in; ``groups(outcome)`` gives its groups from then on."""
        if self.spill is not None:
            self._write(self.spill, outcome)
            return
        self._held.append(outcome)
        self._count += sum(len(g.results) for g in outcome.groups)
        if self.spill_rows is not None and self._count > self.spill_rows:
            self.spill = RowSpill()
            for held in self._held:
                self._write(self.spill, held)
            self._held.clear()

    def groups(self, outcome: ChunkOutcome) -> Sequence[GroupOutcome]:
        """The groups of a kept outcome: as they came, or packed without their rows."""
        return self._spilled.get(id(outcome), outcome.groups)

    def packed(self, outcome: ChunkOutcome) -> SpilledGroups:
        """The packed groups of an outcome kept once spilling began (all of them, then)."""
        return self._spilled[id(outcome)]

    def close(self) -> None:
        if self.spill is not None:
            self.spill.close()

    def _write(self, spill: RowSpill, outcome: ChunkOutcome) -> None:
        self._spilled[id(outcome)] = spill.add(outcome.groups)
        outcome.groups = []


#: The groups of an outcome, as the driver holds them.
GroupsOf = Callable[[ChunkOutcome], Sequence[GroupOutcome]]


def _plan(
    outcomes: list[ChunkOutcome], chunks: list[Chunk], settings: EvalSettings, groups_of: GroupsOf
) -> tuple[Callable[[str], Hashable], dict[Hashable, list[GroupOutcome]], list[MergeTask]]:
    """Planning the merges: what identifies the whole of a group (by its key), the parts of the
    wholes seen in several chunks (by whole), and the merge tasks that evaluate those again.
    Packed groups are read by key, and unpacked only when they are such parts."""
    component = _components(outcomes, settings.group, groups_of)
    chunk_of: dict[Hashable, int] = {}  # component -> its chunk, or -1 when in several
    for outcome in outcomes:
        for key in _keys(groups_of(outcome)):
            c = component(key)
            known = chunk_of.get(c)
            if known is None:
                chunk_of[c] = outcome.chunk_index
            elif known != outcome.chunk_index:
                chunk_of[c] = -1

    spread: dict[Hashable, list[GroupOutcome]] = {}
    for outcome in outcomes:
        groups = groups_of(outcome)
        for index, key in enumerate(_keys(groups)):
            c = component(key)
            if chunk_of[c] == -1:
                spread.setdefault(c, []).append(groups[index])
    del chunk_of
    by_chunks: dict[tuple[int, ...], list[GroupOutcome]] = {}
    for parts in spread.values():
        involved = tuple(sorted({g.position[0] for g in parts}))
        by_chunks.setdefault(involved, []).extend(parts)

    by_index = {c.index: c for c in chunks}
    merges: list[MergeTask] = []
    for involved, parts in by_chunks.items():
        extents: dict[int, Extent] = {}
        positions: dict[str, Position] = {}
        for g in parts:
            index = g.position[0]
            if g.extent is not None:
                before = extents.get(index)
                extents[index] = g.extent if before is None else before.union(g.extent)
            for trace_id in g.trace_ids:
                positions[trace_id] = min(positions.get(trace_id, g.position), g.position)
        narrowed = tuple(
            by_index[i].narrowed(extents[i]) if i in extents else by_index[i] for i in involved
        )
        merges.append(MergeTask(settings, narrowed, positions))
    merges.sort(key=lambda m: min(m.positions.values()))
    return component, spread, merges


def number_repeated_labels(results: list[CaseResult]) -> None:
    """Rows sharing a label (runs of one case) become ``label run 1``, ``label run 2``...
    (``SpilledRows`` numbers rows read back from disk the same way.)"""
    counts: dict[str, int] = {}
    for row in results:
        counts[row.label] = counts.get(row.label, 0) + 1
    seen: dict[str, int] = {}
    for row in results:
        if counts[row.label] > 1:
            n = seen[row.label] = seen.get(row.label, 0) + 1
            row.label = f"{row.label} run {n}"


def _components(
    outcomes: list[ChunkOutcome], group: Grouping, groups_of: GroupsOf
) -> Callable[[str], Hashable]:
    """What identifies the whole a group (by its key) is part of. By trace: its trace id. By
    conversation: every group linked to it by a shared trace id or conversation id."""
    if group == "trace":
        return _same
    links = _Links()
    for outcome in outcomes:
        groups = groups_of(outcome)
        pairs = (
            groups.trace_ids()
            if isinstance(groups, SpilledGroups)
            else ((g.key, g.trace_ids) for g in groups)
        )
        for key, trace_ids in pairs:
            for trace_id in trace_ids:
                links.union(("k", key), ("t", trace_id))
    return lambda key: links.find(("k", key))


def _same(key: str) -> str:
    return key


def _keys(groups: Sequence[GroupOutcome]) -> Sequence[str]:
    return groups.keys if isinstance(groups, SpilledGroups) else [g.key for g in groups]


class _Links:
    """Union-find over trace ids and group keys."""

    def __init__(self) -> None:
        self.parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(self, node: tuple[str, str]) -> tuple[str, str]:
        parent = self.parent
        root = node
        while parent.setdefault(root, root) != root:
            root = parent[root]
        while parent[node] != root:
            parent[node], node = root, parent[node]
        return root

    def union(self, a: tuple[str, str], b: tuple[str, str]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)
