"""Writing a report as it is rendered, so a 200,000-row report never exists as one string.

Renderers produce their document as an iterator of pieces (a row, or a line); ``write_pieces``
sends them on to a file in chunks of about 64 KB, which keeps the number of ``write`` calls low
and the memory bounded by one chunk plus one row.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

#: Characters gathered before one ``write`` call.
CHUNK_CHARS = 1 << 16
#: Distinct texts a writer remembers escaped for one document (``functools.lru_cache``): a
#: run's rows repeat their scores' names and explanations.
REMEMBERED_TEXTS = 1 << 16


class TextSink(Protocol):
    """Anything with a ``write(str)`` method: a text file, ``sys.stdout``, ``io.StringIO``."""

    def write(self, text: str, /) -> object: ...


def write_pieces(pieces: Iterable[str], out: TextSink, chunk_chars: int = CHUNK_CHARS) -> None:
    """Write ``pieces`` to ``out`` in order, joined into chunks of about ``chunk_chars``."""
    buffered: list[str] = []
    size = 0
    for piece in pieces:
        buffered.append(piece)
        size += len(piece)
        if size >= chunk_chars:
            out.write("".join(buffered))
            buffered.clear()
            size = 0
    if buffered:
        out.write("".join(buffered))
