"""Benchmark: planning batch chunks of 20 MB files of adversarial content (issue 15, item 6).

Times ``plan_chunks`` with two workers (4 MB chunks) on files of zero bytes (empty messages),
of the smallest non-empty length-prefixed records (5 bytes each), of random bytes and of
blank lines; the goal is under 2 s for each.

Usage: ``python benchmarks/bench_plan.py [--mb 20] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from tooltrail.batch.chunks import plan_chunks

CONTENTS = {
    "zero bytes": lambda n: bytes(n),
    "5-byte records": lambda n: b"\0\0\0\x01\x0a" * (n // 5),
    "empty and 5-byte records": lambda n: (b"\0" * 8 + b"\0\0\0\x01\x0a") * (n // 13),
    "random bytes": lambda n: os.urandom(n),
    "blank lines": lambda n: b'{"resourceSpans": []}\n' + b"\n" * n,
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in CONTENTS.items():
            path = Path(tmp) / "input"
            path.write_bytes(make(args.mb << 20))
            best = float("inf")
            for _ in range(args.repeat):
                started = time.perf_counter()
                chunks = plan_chunks([str(path)], parallelism=2)
                best = min(best, time.perf_counter() - started)
            framing = chunks[0].framing
            print(f"{name:28s} {best:7.3f} s  {len(chunks):3d} chunks ({framing})")


if __name__ == "__main__":
    main()
