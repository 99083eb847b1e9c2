"""The README's main command: ``tooltrail eval`` on the bundled refund example shows the seed's
verdicts, from the bundled dump and from a dump the live path writes now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fixtures import ROOT
from seed_report import SEED_REPORT

TOOLTRAIL = [sys.executable, "-c", "from tooltrail.cli import main; main()"]


def eval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TOOLTRAIL, "eval", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_readme_command_prints_the_seed_report_from_the_bundled_dump() -> None:
    result = eval_cli("examples/refund/suite.yaml", "examples/refund/")
    assert result.stdout == SEED_REPORT
    assert result.returncode == 1  # three of the four runs fail
    assert "4 traces read" in result.stderr


def test_a_dump_written_by_the_live_path_now_gets_the_same_report(tmp_path: Path) -> None:
    dump = tmp_path / "refund.otlp.jsonl"
    subprocess.run(
        [sys.executable, "examples/instrumented_agent.py", "--out", str(dump)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    result = eval_cli("examples/refund/suite.yaml", str(dump), "--workers", "1")
    assert result.stdout == SEED_REPORT
