"""HTTP request bodies: content types and content encodings, read under size limits.

A receiver must never hold more than it agreed to: the on-wire body is read in chunks and cut
off at the limit, and decompression stops at the same limit, so a gzip bomb costs at most
``limit`` bytes of memory. Everything here is transport; OTLP itself is decoded in ``otlp/``.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import AsyncIterable

import zstandard

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: Media types ``POST /v1/traces`` accepts, mapped to the OTLP encoding they carry.
MEDIA_TYPES = {PROTOBUF: "protobuf", "application/protobuf": "protobuf", JSON: "json"}
#: Content codings the receiver can undo (``identity`` and none mean the body is as is).
ENCODINGS = ("gzip", "x-gzip", "deflate", "zstd", "identity", "")


class BodyTooLarge(Exception):
    """The body, on the wire or once decompressed, is over the request size limit."""


class BadBody(Exception):
    """The body could not be decompressed."""


def encoding_of(media_type: str) -> str | None:
    """``"protobuf"`` or ``"json"`` for a request's media type (parameters already stripped)."""
    return MEDIA_TYPES.get(media_type.strip().lower())


def codings_of(content_encoding: str) -> list[str] | None:
    """The content codings applied to a body, in the order they were applied.

    ``None`` when one of them is not supported, so the caller answers 415.
    """
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    if any(c not in ENCODINGS for c in codings):
        return None
    return [c for c in codings if c not in ("identity", "")]


async def read_limited(chunks: AsyncIterable[bytes], limit: int) -> bytes:
    """Concatenate a streamed body, raising ``BodyTooLarge`` once it passes ``limit`` bytes."""
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(f"request body is over the {limit}-byte limit")
        parts.append(chunk)
    return b"".join(parts)


def decompress(data: bytes, codings: list[str], limit: int) -> bytes:
    """Undo ``codings`` (last applied first), never producing more than ``limit`` bytes."""
    for coding in reversed(codings):
        if coding in ("gzip", "x-gzip"):
            data = _inflate(data, zlib.MAX_WBITS | 16, limit, "gzip")
        elif coding == "deflate":
            data = _inflate(data, zlib.MAX_WBITS, limit, "deflate")
        elif coding == "zstd":
            data = _unzstd(data, limit)
    return data


def _inflate(data: bytes, wbits: int, limit: int, name: str) -> bytes:
    out: list[bytes] = []
    size = 0
    pending = data
    try:
        while pending:
            member = zlib.decompressobj(wbits)
            chunk = member.decompress(pending, limit + 1 - size)
            while True:
                size += len(chunk)
                if size > limit:
                    raise BodyTooLarge(f"{name} body decompresses to over the {limit}-byte limit")
                out.append(chunk)
                if not member.unconsumed_tail:
                    break
                chunk = member.decompress(member.unconsumed_tail, limit + 1 - size)
            if not member.eof:
                raise BadBody(f"{name} body is truncated")
            # gzip allows several members back to back; anything else after the end is junk.
            pending = member.unused_data if wbits & 16 else b""
    except zlib.error as exc:
        raise BadBody(f"{name} body is not valid {name} data: {exc}") from None
    return b"".join(out)


def _unzstd(data: bytes, limit: int) -> bytes:
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(
            io.BytesIO(data), read_across_frames=True
        )
        out = reader.read(limit + 1)
    except zstandard.ZstdError as exc:
        raise BadBody(f"zstd body is not valid zstd data: {exc}") from None
    if len(out) > limit:
        raise BodyTooLarge(f"zstd body decompresses to over the {limit}-byte limit")
    return out
