"""Benchmark: compressed streams of nothing (issue 22, item 5).

Makes gzip and zstd files of blank lines at ratios under the 1000x cap (the issue's 260 KB
and 4 MB gzips of newlines, their zstd twins), a gzip of spaces with no newline, a gzip of
records with blank runs between them, and a plain file of blank lines; then times reading
each with ``read_traces`` in this process and with ``tooltrail eval`` (1 and 2 workers) and
``tooltrail convert`` in a child, with its first line on stderr. The goal is under 2 s for
each compressed file (they stop at ``Limits.max_blank_bytes``).

Usage: ``python benchmarks/bench_blank.py [--only NAME] [--no-cli]``.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

import zstandard

from tooltrail.convert import read_traces
from tooltrail.otlp import Diagnostic

MiB = 1 << 20
ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "examples" / "refund" / "suite.yaml"
RUNS = ROOT / "examples" / "refund" / "runs.otlp.jsonl"
TOOLTRAIL = str(Path(sys.executable).with_name("tooltrail"))


def blank_block(size: int, every: int, seed: int = 1) -> bytes:
    """``size`` bytes of newlines with a line of one space or tab about every ``every`` bytes
    (the noise sets the compression ratio: a pure run would compress past the cap)."""
    rnd = random.Random(seed)
    parts, total = [], 0
    while total < size:
        part = b"\n" * rnd.randrange(1, every) + rnd.choice((b" ", b"\t")) + b"\n"
        parts.append(part)
        total += len(part)
    return b"".join(parts)[:size]


def spaces_block(size: int, every: int, seed: int = 2) -> bytes:
    """Spaces and tabs, no newline at all."""
    rnd = random.Random(seed)
    return b"".join(b" " * rnd.randrange(1, every) + b"\t" for _ in range(size // every * 2))[:size]


def write_compressed(path: Path, codec: str, pieces: Iterator[bytes]) -> None:
    with path.open("wb") as out:
        if codec == "gzip":
            packer = zlib.compressobj(6, zlib.DEFLATED, 31)
            for piece in pieces:
                out.write(packer.compress(piece))
            out.write(packer.flush())
        else:
            with zstandard.ZstdCompressor(level=3).stream_writer(out, closefd=False) as packer:
                for piece in pieces:
                    packer.write(piece)


def repeated(block: bytes, total: int) -> Iterator[bytes]:
    for _ in range(total // len(block)):
        yield block


def between_records(block: bytes, runs: int) -> Iterator[bytes]:
    """A record of the refund example, then ``block`` of blank lines, ``runs`` times."""
    record = RUNS.read_bytes().splitlines(keepends=True)[0]
    for _ in range(runs):
        yield record
        yield block


INPUTS: dict[str, Callable[[Path], Path]] = {
    "gzip newlines 247 MiB": lambda d: _make(
        d / "a.jsonl.gz", "gzip", repeated(blank_block(16 * MiB, 64000), 247 * MiB)
    ),
    "gzip newlines 2 GiB": lambda d: _make(
        d / "b.jsonl.gz", "gzip", repeated(blank_block(16 * MiB, 8000), 2048 * MiB)
    ),
    "zstd newlines 2 GiB": lambda d: _make(
        d / "c.jsonl.zst", "zstd", repeated(blank_block(16 * MiB, 2000), 2048 * MiB)
    ),
    "gzip spaces, no newline 2 GiB": lambda d: _make(
        d / "d.jsonl.gz", "gzip", repeated(spaces_block(16 * MiB, 8000), 2048 * MiB)
    ),
    "gzip records + 40 MiB blank runs": lambda d: _make(
        d / "e.jsonl.gz", "gzip", between_records(blank_block(40 * MiB, 8000), 50)
    ),
    "plain newlines 1 GiB": lambda d: _plain(d / "f.jsonl", blank_block(16 * MiB, 8000), 1024),
}


def _make(path: Path, codec: str, pieces: Iterator[bytes]) -> Path:
    write_compressed(path, codec, pieces)
    return path


def _plain(path: Path, block: bytes, mib: int) -> Path:
    with path.open("wb") as out:
        for _ in range(mib * MiB // len(block)):
            out.write(block)
    return path


def in_process(path: Path) -> tuple[float, list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    started = time.perf_counter()
    for _trace in read_traces([str(path)], diagnostics=diagnostics):
        pass
    return time.perf_counter() - started, diagnostics


def child(args: list[str]) -> tuple[float, str]:
    """Wall time and first stderr line of one CLI run. (Its peak memory is best read with
    ``/usr/bin/time -f %M``: ``ru_maxrss`` keeps the forking parent's across ``exec``.)"""
    started = time.perf_counter()
    done = subprocess.run([TOOLTRAIL, *args], capture_output=True, text=True, check=False)
    return time.perf_counter() - started, (done.stderr.splitlines() or [""])[0]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", help="run the inputs whose name contains this")
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in INPUTS.items():
            if args.only and args.only not in name:
                continue
            path = make(Path(tmp))
            size = path.stat().st_size
            elapsed, diagnostics = in_process(path)
            print(f"{name}: {size / MiB:.2f} MiB on disk")
            print(f"  read_traces      {elapsed:6.2f} s  {len(diagnostics)} diagnostic(s)")
            for diagnostic in diagnostics[:2]:
                print(f"    {diagnostic}")
            if not args.no_cli:
                runs = {
                    "eval --workers 1": ["eval", "-q", "--workers", "1", str(SUITE), str(path)],
                    "eval --workers 2": ["eval", "-q", "--workers", "2", str(SUITE), str(path)],
                    "convert": ["convert", str(path)],
                }
                for label, argv in runs.items():
                    took, first = child(argv)
                    print(f"  {label:16s} {took:6.2f} s")
                    print(f"    {first[:160]}")
            path.unlink()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
