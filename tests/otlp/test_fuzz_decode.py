"""Fuzzing the decoders with mutated real corpus files (hypothesis).

Whatever the bytes, reading must end, raise nothing but report through diagnostics, and
request decoders must raise nothing but ``DecodeError``.
"""

from __future__ import annotations

import gzip
import signal
import tempfile
from contextlib import contextmanager
from pathlib import Path

import pytest
import zstandard
from fixtures import CORPUS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooltrail.otlp import (
    DecodeError,
    Diagnostic,
    Limits,
    decode_json_request,
    decode_request,
    frame,
    read_log_records,
    read_spans,
)

_PB = (CORPUS / "strands" / "g_parallel_calls.otlp.pb").read_bytes()
_JSONL = (CORPUS / "strands" / "e_booking_multiturn_bad.otlp.jsonl").read_bytes()
_SDK = (CORPUS / "vercel-ai" / "sdk-json" / "g_parallel_calls.json").read_bytes()
SEEDS = {
    "single protobuf": _PB,
    "json lines": _JSONL,
    "sdk json": _SDK,
    "length-prefixed": frame(_PB) + frame(_PB),
    "per-message zstd": frame(zstandard.ZstdCompressor().compress(_PB)) + frame(_PB),
    "gzip json": gzip.compress(_JSONL),
    "zstd stream": zstandard.ZstdCompressor().compress(_JSONL),
}
#: Small limits so that mutated length prefixes and sizes hit them quickly.
LIMITS = Limits(max_record_bytes=1 << 20, max_decompressed_bytes=8 << 20, max_compression_ratio=50)
SECONDS = 20  # far above any honest run on these inputs: more means a hang


@contextmanager
def _deadline(seconds: int):
    def hang(signum, frame):  # pragma: no cover - only on failure
        raise TimeoutError(f"decoding did not finish within {seconds}s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@st.composite
def mutated(draw, seed: str) -> bytes:
    data = bytearray(SEEDS[seed])
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "splice", "delete", "insert", "repeat"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "truncate":
            del data[at:]
        elif kind == "flip":
            for i in draw(st.lists(st.integers(0, max(len(data) - 1, 0)), max_size=8)):
                if data:
                    data[i] ^= draw(st.integers(1, 255))
        elif kind == "splice":
            other = SEEDS[draw(st.sampled_from(sorted(SEEDS)))]
            start = draw(st.integers(0, len(other) - 1))
            data[at:at] = other[start : start + draw(st.integers(1, 4096))]
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 512))]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=64))
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 256))] * draw(st.integers(2, 8))
    return bytes(data)


_DIR = tempfile.TemporaryDirectory(prefix="tooltrail-fuzz-")


def _consume(path: Path) -> list[Diagnostic]:
    diagnostics: list[Diagnostic] = []
    for span in read_spans(path, limits=LIMITS, diagnostics=diagnostics):
        assert len(span.trace_id) == 32 and len(span.span_id) == 16
        dict(span.attributes)  # lazy parts too: late problems must be diagnostics as well
        for event in span.events:
            dict(event.attributes)
    return diagnostics


FUZZ = settings(
    max_examples=100,
    deadline=None,  # the alarm above bounds each example instead
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.mark.parametrize("seed", sorted(SEEDS))
@FUZZ
@given(draw=st.data())
def test_reading_mutated_files_ends_without_raising(seed, draw):
    data = draw.draw(mutated(seed))
    path = Path(_DIR.name) / "mutated"
    path.write_bytes(data)
    with _deadline(SECONDS):
        diagnostics = _consume(path)
        list(read_log_records(path, limits=LIMITS, diagnostics=diagnostics))
    assert all(isinstance(d, Diagnostic) and d.path == str(path) for d in diagnostics)


@pytest.mark.parametrize("seed", ["single protobuf", "json lines", "sdk json"])
@FUZZ
@given(draw=st.data())
def test_request_decoders_raise_only_decode_error(seed, draw):
    data = draw.draw(mutated(seed))
    with _deadline(SECONDS):
        for decode in (decode_request, decode_json_request):
            try:
                spans = decode(data, limits=LIMITS, diagnostics=[])
            except DecodeError:
                continue
            for span in spans:
                dict(span.attributes)
                list(span.events)


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_every_unmutated_seed_reads_cleanly(name):
    path = Path(_DIR.name) / f"seed-{name}"
    path.write_bytes(SEEDS[name])
    assert _consume(path) == []
