"""Every command's output on every fixture, written to a folder, to compare two checkouts.

    python benchmarks/snapshot_outputs.py OUT [--only SUBSTRING]

Reads each fixture file of ``tests/data``, ``examples/``, ``../shared/corpus`` and the
external corpus (when present) with ``tooltrail convert`` (plain, ``--content``, ``--group
conversation``) and ``tooltrail eval`` of a suite that selects every trace (``match: all``:
required tools, order, arguments, precision, redundancy, ``contains``) in the five report
formats, in one process (click's runner), and writes each output to ``OUT/<fixture>/<cmd>``.
``diff -r`` of two such folders, made before and after a change, says what changed.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from click.testing import CliRunner

from tooltrail.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SUITE = """\
name: snapshot
cases:
  - id: every-trace
    match: all
    expected_contains: ["$49.99"]
    required_tools: [lookup_order, verify_identity, issue_refund]
    required_tool_order: [lookup_order, verify_identity, issue_refund]
    expected_tool_arguments:
      issue_refund: {order_id: ORD-7731, amount: 49.99}
    evaluators:
      - {name: tool_call_precision, threshold: 1.0}
      - {name: no_redundant_tool_calls, threshold: 1.0}
"""
FORMATS = ("text", "json", "junit", "markdown", "html")
#: Parts of an output that differ from run to run: times, temporary paths.
_VOLATILE = re.compile(
    rb"(\d+\.\d+ ?(s|ms)\b|/tmp/[^\s\"'<]+|\"(generated_at|elapsed_s|duration_s)\": *[^,}\n]+)"
)


def fixtures() -> list[Path]:
    roots = [ROOT / "tests" / "data", ROOT / "examples", SHARED / "corpus", SHARED / "external"]
    found: list[Path] = []
    for root in roots:
        if root.is_dir():
            found += sorted(
                p
                for p in root.rglob("*")
                if p.is_file()
                and (
                    p.name.endswith((".jsonl", ".pb"))
                    or (p.suffix == ".json" and not p.name.endswith(".truth.json"))
                )
            )
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    suite = args.out / "suite.yaml"
    args.out.mkdir(parents=True, exist_ok=True)
    suite.write_text(SUITE)
    runner = CliRunner()
    commands = {
        "convert": ["convert"],
        "convert-content": ["convert", "--content"],
        "convert-conversation": ["convert", "--group", "conversation"],
        **{f"eval-{f}": ["eval", str(suite), "--format", f, "--allow-empty"] for f in FORMATS},
    }
    count = 0
    for path in fixtures():
        if args.only not in str(path):
            continue
        name = str(path.relative_to(path.anchor)).replace("/", "__")
        folder = args.out / name
        folder.mkdir(parents=True, exist_ok=True)
        for label, command in commands.items():
            result = runner.invoke(cli, [*command, str(path)])
            output = _VOLATILE.sub(b"<v>", result.stdout_bytes)
            (folder / label).write_bytes(output + f"\n[exit {result.exit_code}]\n".encode())
        count += 1
    print(f"{count} fixtures, {len(commands)} outputs each, in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
