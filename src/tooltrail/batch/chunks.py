"""Chunks: the batch pass's units of work, each a file or a byte range of it.

Large uncompressed dumps (JSON lines, length-prefixed protobuf with or without per-message
compression) are cut into chunks of about ``chunk_bytes`` so several workers share one file
and each holds only its own chunk's traces. Where a file may be cut is the reader's to say
(``tooltrail.otlp.read.cuts``), and the reader reads a chunk back
(``tooltrail.otlp.read.ranges``): this module knows no framing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tooltrail.convert.transcripts import is_transcript_file
from tooltrail.otlp import DEFAULT_LIMITS, Diagnostic, Limits, expand_paths
from tooltrail.otlp.read.cuts import cut_file
from tooltrail.otlp.read.ranges import Extent, Framing

__all__ = [
    "DEFAULT_CHUNK_BYTES",
    "MIN_CHUNK_BYTES",
    "Chunk",
    "Extent",
    "InputError",
    "auto_chunk_bytes",
    "plan_chunks",
]

#: Default chunk size: big enough that per-task overhead vanishes, small enough that a worker's
#: memory stays a few hundred megabytes at most.
DEFAULT_CHUNK_BYTES = 32 << 20
#: Never cut finer than this, whatever the worker count.
MIN_CHUNK_BYTES = 4 << 20


class InputError(ValueError):
    """An input path that names nothing: a usage error, not a skipped record."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A unit of work. ``start``/``end`` are byte offsets for ``lines`` and ``prefixed``, and
    record indices for ``whole`` (``end=None``: to the end of the file)."""

    index: int
    path: str
    framing: Framing = "whole"
    start: int = 0
    end: int | None = None
    #: 1-based line number of the first record (JSON lines), for diagnostics.
    first_line: int = 1
    #: Bytes of input the chunk covers, for progress.
    size: int = 0
    #: False for a file found by walking a directory: one that is not OTLP is skipped quietly.
    named: bool = True
    #: A transcript file (``convert.transcripts``): runs of chat messages, not OTLP; ``start``
    #: and ``end`` count runs.
    transcript: bool = False

    def narrowed(self, extent: Extent) -> Chunk:
        """The same chunk limited to ``extent`` (records of a few traces, for a merge)."""
        return replace(self, start=extent.start, end=extent.end, first_line=extent.line or 1)


def plan_chunks(
    paths: Sequence[str],
    *,
    chunk_bytes: int | None = None,
    parallelism: int = 1,
    limits: Limits = DEFAULT_LIMITS,
) -> list[Chunk]:
    """The chunks of ``paths`` (files, directories, globs) in file order.

    ``chunk_bytes`` defaults to ``auto_chunk_bytes`` of the total input size and
    ``parallelism``. Raises ``InputError`` when a path names nothing. The report does not
    depend on the plan: rows are ordered by first appearance in the input, and traces cut
    across chunks are merged.
    """
    problems: list[Diagnostic] = []
    files = list(expand_paths(list(paths), problems))
    if problems:
        raise InputError("; ".join(str(p) for p in problems))
    sizes = [_size(path) for path, _named in files]
    if chunk_bytes is None:
        chunk_bytes = auto_chunk_bytes(sum(sizes), parallelism)
    chunks: list[Chunk] = []
    for (path, named), size in zip(files, sizes, strict=True):
        if is_transcript_file(path, limits):  # one chunk: its runs are read as spans
            chunks.append(Chunk(len(chunks), path, size=size, named=named, transcript=True))
            continue
        for framing, start, end, line in cut_file(path, size, chunk_bytes, limits):
            chunk_size = (end if end is not None else size) - start
            chunks.append(Chunk(len(chunks), path, framing, start, end, line, chunk_size, named))
    return chunks


def auto_chunk_bytes(total_bytes: int, parallelism: int) -> int:
    """About four chunks per worker, so workers finish together, within
    [``MIN_CHUNK_BYTES``, ``DEFAULT_CHUNK_BYTES``] so memory per worker stays bounded."""
    if parallelism <= 1:
        return DEFAULT_CHUNK_BYTES
    return max(MIN_CHUNK_BYTES, min(DEFAULT_CHUNK_BYTES, total_bytes // (4 * parallelism)))


def _size(path: str) -> int:
    try:
        return os.path.getsize(path) if path != "-" else 0
    except OSError:
        return 0
