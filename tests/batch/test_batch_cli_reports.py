"""``tooltrail eval`` writes the same bytes and exits the same way whether its rows were kept in
memory or spilled to disk and read back, in every format and with a gate; and it reads the
spilled rows back as few times as each format allows (``WALKS``): once for the text report,
whose rows come before its roll-up (the summary is counted as the rows are written), and for
the HTML page's listed rows (found with the summary), twice for the others, which open with the
summary or its counts.

The expected reports are rendered from the rows kept in memory, by the report functions a Python
caller uses (``EvaluationReport.from_results``, then ``render_*``), not by the CLI's walk."""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from fixtures import CORPUS, REFUND_DUMP, REFUND_SUITE, refund_case, suite_yaml

import tooltrail.cli.eval as eval_cli
from tooltrail.batch import BatchResult, run_batch
from tooltrail.batch.spill import SpilledRows
from tooltrail.cli import main
from tooltrail.report import Gate, render_json, render_junit, render_markdown, render_text
from tooltrail.report.html import render_html
from tooltrail.report.trajectory import collect_trajectories
from tooltrail.results import CaseResult, EvaluationReport
from tooltrail.suite import TestSuite

CASES = [
    refund_case(
        match="all",
        evaluators=[
            {"name": "tool_call_precision", "threshold": 1.0},
            {"name": "tool_call_recall"},
            {"name": "max_tool_calls", "config": {"max": 3}, "required": False},
        ],
    ),
    {
        "id": "booking",
        "match": "all",
        "runs": 2,  # a repeated case: the reports' runs lines
        "threshold": 0.5,
        "forbidden_tools": ["issue_refund", "web_search"],
        "required_tool_arguments": {"create_booking": ["time"]},
        "max_tool_calls": 4,
    },
]
#: Floors the corpus breaks (its traces are of many agents) and one it meets.
GATE = {"min_pass_rate": 0.9, "max_failed_cases": 1000, "min_metric_pass_rate": {"recall": 0.1}}
DUMPS = sorted(str(path) for path in CORPUS.glob("*/*.otlp.*"))
RENDER = {
    "text": render_text,
    "json": render_json,
    "junit": render_junit,
    "markdown": render_markdown,
    "html": render_html,
}
#: Walks of spilled rows: the text report is written on the summary's walk, the HTML page's
#: rows are listed on it (after the two walks that pick the trajectories to embed); the other
#: formats open with the summary, made first.
WALKS = {"text": 1, "html": 3, "json": 2, "junit": 2, "markdown": 2}


@pytest.fixture(scope="module")
def suite_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("suite") / "suite.yaml"
    path.write_text(suite_yaml(*CASES, name="corpus", version="3"))
    return path


@pytest.fixture(scope="module")
def gate_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gate") / "gate.yaml"
    path.write_text(yaml.safe_dump(GATE))
    return path


@pytest.fixture(scope="module")
def kept(suite_file: Path) -> tuple[TestSuite, BatchResult]:
    suite = TestSuite.load(suite_file)
    return suite, run_batch(suite, DUMPS, workers=1, spill_rows=None)


class Walks:
    """``SpilledRows.__iter__`` watched: how many walks of spilled rows were begun."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = SpilledRows.__iter__

        def counted(rows: SpilledRows) -> Iterator[CaseResult]:
            self.count += 1
            return real(rows)

        monkeypatch.setattr(SpilledRows, "__iter__", counted)


def _eval(
    monkeypatch: pytest.MonkeyPatch, spill_rows: int | None, workers: int, *args: str
) -> tuple[int, str, int]:
    """``tooltrail eval ARGS DUMPS`` with rows spilled past ``spill_rows``: exit code, report
    and the number of walks of spilled rows."""
    monkeypatch.setattr(
        eval_cli,
        "run_batch",
        functools.partial(run_batch, spill_rows=spill_rows, chunk_bytes=20_000),
    )
    walks = Walks(monkeypatch)
    result = CliRunner().invoke(
        main, ["eval", "--quiet", "--workers", str(workers), *args, *DUMPS], catch_exceptions=False
    )
    monkeypatch.undo()
    return result.exit_code, result.stdout, walks.count


def _expected(kept: tuple[TestSuite, BatchResult], fmt: str, gated: bool) -> tuple[int, str]:
    """The exit code and report made from the rows kept in memory."""
    suite, batch = kept
    report = EvaluationReport.from_results(suite, batch.results)
    verdict = Gate.from_mapping(GATE).check(report) if gated else None
    passed = verdict.passed if verdict is not None else report.passed
    assert batch.diagnostics == []
    if fmt == "html":  # with the trajectories of the failing rows and a sample
        found = collect_trajectories(DUMPS, batch.results)
        return (0 if passed else 1), render_html(report, trajectories=found, gate=verdict)
    if fmt == "json" and verdict is not None:  # the JSON report carries the gate's verdict
        return (0 if passed else 1), render_json(report, gate=verdict)
    return (0 if passed else 1), RENDER[fmt](report)


@pytest.mark.parametrize("fmt", sorted(RENDER))
@pytest.mark.parametrize("gated", [False, True], ids=["no gate", "gate"])
def test_each_format_is_the_same_spilled_as_kept_in_memory(
    monkeypatch: pytest.MonkeyPatch,
    kept: tuple[TestSuite, BatchResult],
    suite_file: Path,
    gate_file: Path,
    fmt: str,
    gated: bool,
) -> None:
    args = ["--format", fmt, *(["--gate", str(gate_file)] if gated else []), str(suite_file)]
    expected_code, expected_report = _expected(kept, fmt, gated)
    assert expected_report.count("\n") > 200  # both cases on every corpus trace
    for spill_rows, workers in [(None, 1), (1, 1), (1, 2)]:
        code, report, walks = _eval(monkeypatch, spill_rows, workers, *args)
        assert (code, report) == (expected_code, expected_report), (spill_rows, workers)
        if spill_rows is not None:
            assert walks == WALKS[fmt], fmt


def test_the_gate_verdicts_differ_so_both_exit_codes_are_covered(
    kept: tuple[TestSuite, BatchResult],
) -> None:
    assert _expected(kept, "text", gated=False)[0] == 1  # a case fails its runs threshold
    assert _expected(kept, "text", gated=True)[0] == 1
    suite, batch = kept
    report = EvaluationReport.from_results(suite, batch.results)
    lenient = Gate.from_mapping({"max_failed_cases": len(batch.results)}).check(report)
    assert lenient.passed


def test_a_passing_gate_exits_0_spilled_as_kept(
    monkeypatch: pytest.MonkeyPatch, suite_file: Path, tmp_path: Path
) -> None:
    gate = tmp_path / "gate.yaml"
    gate.write_text("max_failed_cases: 100000\n")
    args = ["--gate", str(gate), str(suite_file)]
    kept_code, kept_report, _ = _eval(monkeypatch, None, 1, *args)
    code, report, walks = _eval(monkeypatch, 1, 1, *args)
    assert (code, report, walks) == (0, kept_report, 1)
    assert kept_code == 0


def test_the_longest_label_is_known_without_a_walk(kept: tuple[TestSuite, BatchResult]) -> None:
    suite, batch = kept
    spilled = run_batch(suite, DUMPS, workers=1, spill_rows=1, chunk_bytes=20_000)
    assert isinstance(spilled.results, SpilledRows)
    longest = max(len(row.label) for row in batch.results)
    assert spilled.longest_label() == batch.longest_label() == longest > 22


@pytest.mark.parametrize("fmt", sorted(RENDER))
def test_a_report_file_is_created_private(tmp_path: Path, fmt: str) -> None:
    """Reports quote argument values: every format's ``--out`` file is created 0600, whatever
    the umask lets a plain ``open`` create."""
    out = tmp_path / f"report.{fmt}"
    umask = os.umask(0o022)
    try:
        result = CliRunner().invoke(
            main,
            ["eval", "--quiet", "--workers", "1", "--format", fmt, "--out", str(out)]
            + [str(REFUND_SUITE), str(REFUND_DUMP)],
        )
    finally:
        os.umask(umask)
    assert result.exit_code == 1, result.output  # the example has failing rows
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert out.read_text().strip()
