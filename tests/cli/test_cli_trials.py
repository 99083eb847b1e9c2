"""``tooltrail eval``, ``gate`` and ``report`` on a dump of seeded flaky runs of one case: the
figures in the report, and the inconclusive gate's exit code 75 (docs/eval.md, Exit codes).

The dump holds ten runs tagged ``tooltrail.case_id: refund``, recorded with the SDK; a run
passes when ``random.Random(1)`` draws below 0.7: P F F P P P P F P P, 7 of 10. At 95% the
Wilson interval of 7/10 is [0.3968, 0.8922] (by hand in tests/evaluate/test_trials.py), which
straddles the case's threshold 0.8.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fixtures import LOOKUP, REFUND, VERIFY
from test_batch_support import Run, jsonl, record, write

from tooltrail.cli import main

OUTCOMES = "PFFPPPPFPP"
SUITE = """\
name: trials
cases:
  - id: refund
    required_tools: [lookup_order, verify_identity, issue_refund]
    runs: 10
    threshold: 0.8
"""
GATE = "confidence: 0.95\n"
TOOLTRAIL = Path(sys.executable).parent / "tooltrail"


def seeded_runs() -> list[Run]:
    draw = random.Random(1)
    runs = []
    for _ in range(10):
        calls = [LOOKUP, VERIFY, REFUND] if draw.random() < 0.7 else [LOOKUP, REFUND]
        runs.append(Run("refund", calls))
    return runs


@pytest.fixture()
def flaky(tmp_path: Path) -> tuple[str, str, str]:
    """The suite, the dump of the ten runs and the gate file."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    gate = tmp_path / "gate.yaml"
    gate.write_text(GATE)
    return str(suite), write(tmp_path / "runs.jsonl", jsonl(record(seeded_runs()))), str(gate)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_the_dump_holds_the_seeded_outcomes(flaky: tuple[str, str, str]) -> None:
    suite, dump, _ = flaky
    result = run("eval", "--workers", "1", "--quiet", suite, dump)
    lines = result.stdout.splitlines()
    rows = [line.split()[-1] for line in lines if line.startswith("refund run ")]
    assert "".join("P" if word == "PASS" else "F" for word in rows) == OUTCOMES


def test_eval_with_a_confidence_gate_exits_75_when_inconclusive(
    flaky: tuple[str, str, str],
) -> None:
    suite, dump, gate = flaky
    result = run("eval", "--workers", "1", "--quiet", suite, dump, "--gate", gate)
    assert result.exit_code == 75, result.output
    assert result.stderr.splitlines()[:2] == [
        "gate: INCONCLUSIVE",
        "    case 'refund': 7/10 runs passed, 95% interval [39.68%, 89.22%] straddles the "
        "threshold 80.00%: inconclusive (more runs narrow the interval)",
    ]
    assert "    95% Wilson interval [39.7%, 89.2%] straddles the threshold 0.8: inconclusive\n" in (
        result.stdout
    )
    assert "    flip rate 0.44 (4 changes in 10 runs)\n" in result.stdout


def test_without_a_confidence_the_threshold_alone_decides(flaky: tuple[str, str, str]) -> None:
    suite, dump, _ = flaky
    result = run("eval", "--workers", "1", "--quiet", suite, dump)
    assert result.exit_code == 1  # 7/10 < 0.8
    assert "refund                 7/10 runs passed (threshold 0.8): FAIL\n" in result.stdout


def test_the_suites_gate_may_carry_the_confidence(
    flaky: tuple[str, str, str], tmp_path: Path
) -> None:
    _, dump, _ = flaky
    suite = tmp_path / "gated.yaml"
    suite.write_text(SUITE + "gate:\n  confidence: 0.95\n")
    assert run("eval", "--workers", "1", "--quiet", str(suite), dump).exit_code == 75


def test_a_failing_floor_beats_inconclusive(flaky: tuple[str, str, str], tmp_path: Path) -> None:
    suite, dump, _ = flaky
    gate = tmp_path / "strict.yaml"
    gate.write_text("confidence: 0.95\nmin_pass_rate: 0.9\n")
    result = run("eval", "--workers", "1", "--quiet", suite, dump, "--gate", str(gate))
    assert result.exit_code == 1
    assert result.stderr.startswith("gate: FAIL\n    pass rate 7/10 (70.00%) is below")


def test_gate_and_report_read_the_verdict_back(flaky: tuple[str, str, str], tmp_path: Path) -> None:
    suite, dump, gate = flaky
    out = tmp_path / "report.json"
    made = run("eval", "--workers", "1", "-q", suite, dump, "--format", "json", "--out", str(out))
    assert made.exit_code == 1  # no gate: the threshold alone
    trials = json.loads(out.read_text())["summary"]["runs"][0]["trials"]
    assert (trials["flips"], trials["verdict"]) == (4, "inconclusive")

    checked = run("gate", str(out), "--gate", gate)
    assert checked.exit_code == 75
    assert checked.stdout.splitlines()[0] == "gate: INCONCLUSIVE"

    page = tmp_path / "report.html"
    shown = run("report", str(out), "--gate", gate, "--out", str(page))
    assert shown.exit_code == 0  # `report` renders; its exit code says it wrote the page
    assert 'Gate: <b class="muted">INCONCLUSIVE</b>' in page.read_text()
    assert "<h2>Repeated trials</h2>" in page.read_text()


def test_the_installed_command_exits_75(flaky: tuple[str, str, str]) -> None:
    suite, dump, gate = flaky
    done = subprocess.run(
        [str(TOOLTRAIL), "eval", "--workers", "1", "-q", suite, dump, "--gate", gate],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 75, done.stderr
    assert done.stderr.startswith("gate: INCONCLUSIVE\n")
