"""``--tooltrail-report PATH``: the session's trail verdicts as one tooltrail report for CI.

Rows travel on the test reports as plain data (``report.tooltrail``), so they reach the
controller under pytest-xdist too. The file is JSON (``.json``) or JUnit XML (``.xml``),
rendered by the same renderers as ``tooltrail eval``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tooltrail.report import render_json, render_junit
from tooltrail.results import CaseResult, EvaluationReport, RunVerdict
from tooltrail.trials import meets

FORMATS = {".json": render_json, ".xml": render_junit}
SUITE_NAME = "pytest"


class SessionReport:
    """A pytest plugin object collecting trail rows and writing the report at session end."""

    def __init__(self, path: Path) -> None:
        if path.suffix.lower() not in FORMATS:
            raise pytest.UsageError(
                f"--tooltrail-report {path}: the file name must end in .json (JSON report) "
                "or .xml (JUnit XML)"
            )
        self.path = path
        self.rows: list[CaseResult] = []
        self.runs: dict[str, dict[str, Any]] = {}
        self.error: str | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "tooltrail", None)
        if not isinstance(data, dict):
            return
        self.rows.extend(CaseResult.from_dict(row) for row in data.get("rows", []))
        for verdict in data.get("runs", []):
            self.runs[verdict["case_id"]] = verdict

    def build(self) -> EvaluationReport:
        report = EvaluationReport.from_results(None, self.rows)
        report.suite_name = SUITE_NAME
        verdicts = []
        for verdict in report.summary.runs:
            wanted = self.runs.get(verdict.case_id)
            if wanted is None:
                verdicts.append(verdict)
                continue
            runs = max(int(wanted["runs"]), verdict.runs)
            threshold = wanted["threshold"]
            passed = meets(verdict.passed_runs, runs, 1.0 if threshold is None else threshold)
            verdicts.append(
                RunVerdict(
                    case_id=verdict.case_id,
                    passed_runs=verdict.passed_runs,
                    runs=runs,
                    threshold=threshold,
                    passed=passed,
                    repeated=True,
                    recorded=verdict.recorded,
                    flips=verdict.flips,
                )
            )
        report.summary.runs = verdicts
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        render = FORMATS[self.path.suffix.lower()]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(render(self.build()), encoding="utf-8")
        except OSError as error:
            self.error = f"cannot write {self.path}: {error.strerror or error}"

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.error is not None:
            terminalreporter.write_line(f"tooltrail report: {self.error}", red=True)
        else:
            terminalreporter.write_line(
                f"tooltrail report: {len(self.rows)} rows written to {self.path}"
            )
