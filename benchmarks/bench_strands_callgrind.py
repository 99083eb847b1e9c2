"""Benchmark: callgrind instructions per span of ``read_traces`` on Strands dumps.

The dumps repeat the OTLP/JSON lines of the two Strands fixture families
(``tests/data/corpus/strands``, ``strands-latest-semconv``: span events, not attributes)
under fresh trace ids; the figure per span is the difference between a big and a small dump
divided by the difference in spans, so that start-up and imports cancel out (as
``bench_core_callgrind.py``, whose ``instructions`` this uses).

Usage: ``python benchmarks/bench_strands_callgrind.py [--small 5] [--big 25] [--dir DIR]``
(copies of the fixtures; valgrind must be installed).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_core_callgrind import instructions  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "data" / "corpus"
FAMILIES = ("strands", "strands-latest-semconv")


def write_dump(path: Path, copies: int) -> int:
    """Write ``copies`` of the Strands fixtures' lines to ``path``; return the span count."""
    lines = [
        line
        for family in FAMILIES
        for fixture in sorted((CORPUS / family).glob("*.otlp.jsonl"))
        for line in fixture.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    spans = 0
    with path.open("w", encoding="utf-8") as out:
        for copy in range(copies):
            for line in lines:
                record = json.loads(line)
                for resource in record["resourceSpans"]:
                    for scope in resource["scopeSpans"]:
                        for span in scope["spans"]:
                            # a fresh trace per copy: the first 8 hex digits name the copy
                            span["traceId"] = f"{copy:08x}" + span["traceId"][8:]
                            spans += 1
                out.write(json.dumps(record, separators=(",", ":")) + "\n")
    return spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", type=int, default=5)
    parser.add_argument("--big", type=int, default=25)
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    options = parser.parse_args()
    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-strands-"))
    directory.mkdir(parents=True, exist_ok=True)
    dumps, spans = {}, {}
    for copies in (options.small, options.big):
        dumps[copies] = directory / f"strands-{copies}.otlp.jsonl"
        spans[copies] = write_dump(dumps[copies], copies)
    added = spans[options.big] - spans[options.small]
    print(f"{'read_traces':24s} {'path':8s} {'instructions/span':>18s}")
    for reading_path in ("python", "core"):
        counts = [
            instructions(dumps[copies], reading_path, directory / f"cg.{copies}.out")
            for copies in (options.small, options.big)
        ]
        per_span = (counts[1] - counts[0]) / added
        print(f"{'Strands JSON lines':24s} {reading_path:8s} {per_span:18,.0f}")


if __name__ == "__main__":
    main()
