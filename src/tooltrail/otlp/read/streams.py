"""Opening OTLP files as byte streams: compression by magic number, bounded decompression.

Memory stays bounded by one record: compressed files are decompressed as streams, and every
decompressed byte of one input (the whole-file stream and every compressed record in it)
counts against one ``DecompressionBudget`` of ``Limits.max_decompressed_bytes``, and the
stream against ``Limits.max_compression_ratio`` too. The ratio alone cannot stop a bomb: gzip
tops out near 1030:1, so a stream just under the cut would expand to any size; the budget
bounds the time and the bytes whatever the ratio.
"""

from __future__ import annotations

import gzip
import io
import zlib
from typing import IO, Any

import zstandard

from tooltrail.otlp.decode.limits import Limits

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 16


class LimitExceeded(Exception):
    """More decompressed bytes than the limit allows."""


class BudgetExceeded(LimitExceeded):
    """The input's decompression budget is spent: the rest of the input is not read."""


class DecompressionBudget:
    """Bytes one input may still decompress, across its stream and its compressed records."""

    def __init__(self, limits: Limits) -> None:
        self.limit = limits.max_decompressed_bytes
        self.left = self.limit

    def take(self, n: int) -> None:
        """Count ``n`` more decompressed bytes; raises ``BudgetExceeded`` past the budget."""
        self.left -= n
        if self.left < 0:
            raise BudgetExceeded(
                f"decompressed size exceeds the max_decompressed_bytes budget of "
                f"{_size_text(self.limit)} for this input; likely a decompression bomb"
            )


class BlankBudget:
    """White space and empty messages one decompressed stream may still yield
    (``Limits.max_blank_bytes``): a stream of newlines is refused after it, not after the
    whole decompression budget."""

    def __init__(self, limits: Limits) -> None:
        self.limit = limits.max_blank_bytes
        self.seen = 0

    def room(self) -> int:
        """Bytes that may still be skipped as blank, plus one (reaching it raises)."""
        return max(self.limit - self.seen, 0) + 1

    def take(self, n: int) -> None:
        """Count ``n`` more blank bytes; raises ``LimitExceeded`` past the limit."""
        self.seen += n
        if self.seen > self.limit:
            raise LimitExceeded(
                f"{self.seen} bytes of blank lines or empty messages came out of this "
                f"compressed stream, over the max_blank_bytes limit of {_size_text(self.limit)}; "
                "likely a decompression bomb"
            )


def _size_text(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} bytes"


class _Counted:
    """A read-only stream that counts the bytes read through it (compressed input)."""

    def __init__(self, inner: IO[bytes]) -> None:
        self._inner = inner
        self.count = 0

    def read(self, n: int = -1) -> bytes:
        data = self._inner.read(n)
        self.count += len(data)
        return data


class _CountingRaw(io.RawIOBase):
    """Decompressed output that stops at a byte budget and at a compression ratio."""

    def __init__(
        self, inner: Any, source: _Counted, limits: Limits, budget: DecompressionBudget
    ) -> None:
        self._inner = inner
        self._source = source
        self._limits = limits
        self._budget = budget
        self._out = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        want = min(len(view), max(self._budget.left, 0) + 1)
        data = self._inner.read(want)
        n = len(data)
        self._budget.take(n)
        self._out += n
        limits = self._limits
        if self._out > limits.max_record_bytes:
            ratio = self._out / max(self._source.count, 1)
            if ratio > limits.max_compression_ratio:
                raise LimitExceeded(
                    f"compression ratio above {limits.max_compression_ratio} "
                    f"({self._out} bytes from {self._source.count}): likely a decompression bomb"
                )
        view[:n] = data
        return n


class PrefixedRaw(io.RawIOBase):
    """Bytes already read (for sniffing), then the rest of the stream.

    The prefix is handed out through a moving view: slicing the bytes instead copied what was
    left of a 64 MiB sniffing sample on every read, quadratic work that made a blank file
    take seconds per megabyte."""

    def __init__(self, prefix: bytes, inner: IO[bytes]) -> None:
        self._prefix = memoryview(prefix)
        self._inner = inner

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        if self._prefix:
            n = min(len(view), len(self._prefix))
            view[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            if not self._prefix:
                self._prefix.release()
                self._prefix = memoryview(b"")
            return n
        readinto = getattr(self._inner, "readinto", None)
        if readinto is not None:  # straight into the caller's buffer: no second copy of it
            return int(readinto(view) or 0)
        data = self._inner.read(len(view))
        view[: len(data)] = data
        return len(data)


def read_exactly(stream: IO[bytes], n: int) -> bytes:
    """Up to ``n`` bytes; fewer only at the end of the stream."""
    data = stream.read(n)
    if data is None:
        data = b""
    if len(data) == n or not data:
        return data
    parts = [data]
    got = len(data)
    while got < n:
        more = stream.read(n - got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def peek(stream: IO[bytes], n: int) -> tuple[bytes, IO[bytes]]:
    """The first ``n`` bytes and a stream that still yields them."""
    head = read_exactly(stream, n)
    return head, io.BufferedReader(PrefixedRaw(head, stream), buffer_size=_CHUNK)


def decompressed(
    stream: IO[bytes], head: bytes, limits: Limits, budget: DecompressionBudget | None = None
) -> tuple[IO[bytes], str | None]:
    """The content of ``stream`` (whose first bytes are ``head``), decompressed when it starts
    with a zstd or gzip magic number, within ``limits`` and ``budget`` (a new one by default).
    Returns the stream and the codec."""
    source: Any
    if head.startswith(ZSTD_MAGIC):
        source = _Counted(stream)
        reader: Any = zstandard.ZstdDecompressor().stream_reader(
            source, read_size=_CHUNK, read_across_frames=True
        )
    elif head.startswith(GZIP_MAGIC):
        source = _Counted(stream)
        reader = gzip.GzipFile(fileobj=source, mode="rb")
    else:
        return stream, None
    codec = "zstd" if head.startswith(ZSTD_MAGIC) else "gzip"
    counted = _CountingRaw(reader, source, limits, budget or DecompressionBudget(limits))
    return io.BufferedReader(counted, buffer_size=_CHUNK), codec


def decompress_record(data: bytes, limit: int, budget: DecompressionBudget | None = None) -> bytes:
    """One compressed record (zstd or gzip), refusing output larger than ``limit``; its
    output counts against ``budget`` (its input's) when given."""
    if data.startswith(ZSTD_MAGIC):
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        out = read_exactly(reader, limit + 1)
    else:
        inflater = zlib.decompressobj(wbits=31)
        out = inflater.decompress(data, limit + 1)
    if len(out) > limit:
        raise LimitExceeded(f"decompressed record exceeds the {limit} byte limit")
    if budget is not None:
        budget.take(len(out))
    return out


COMPRESSION_ERRORS: tuple[type[BaseException], ...] = (
    zstandard.ZstdError,
    OSError,  # gzip.BadGzipFile and truncated gzip streams (EOFError is separate)
    EOFError,
    zlib.error,
)
