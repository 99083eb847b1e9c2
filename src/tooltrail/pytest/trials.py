"""Inconclusive tests in a pytest session: the ``confidence`` option, the ``inconclusive``
status and the session's exit code 75.

A test whose repeated runs cannot tell whether the agent meets its threshold (its Wilson
interval straddles it: ``tooltrail.trials``) raises ``TrialsInconclusive``. It is a failure as
far as pytest is concerned (a red test in every report, its message under FAILURES), shown
as ``INCONCLUSIVE`` (``I``) in the progress; when every failed test of the session is such a
one, the session exits 75 instead of 1, the exit code ``tooltrail eval`` and ``tooltrail
gate`` give an inconclusive gate: CI may rerun on it. Errors, or any other failure, keep
pytest's own code.

Which confidence decides: ``run_turns(confidence=)``, else ``@pytest.mark.tooltrail(
confidence=)``, else ``--tooltrail-confidence`` / the ``tooltrail_confidence`` ini option;
without any, the threshold alone decides, as it always did.
"""

from __future__ import annotations

from typing import Any

import pytest

from tooltrail.trials import check_confidence

#: The session's exit code when its only failures are inconclusive tests (sysexits'
#: EX_TEMPFAIL; ``tooltrail.cli.gates.EXIT_INCONCLUSIVE`` is the same number).
EXIT_INCONCLUSIVE = 75
#: The attribute a test report carries when its test was inconclusive (plain data: it
#: reaches the pytest-xdist controller with the report).
MARK = "tooltrail_inconclusive"
OPTION_HELP = (
    "decide trail.run_turns by the Wilson interval of the runs' pass rate at this confidence "
    "(e.g. 0.95): a test whose interval straddles its threshold is inconclusive, and a "
    "session whose only failures are such tests exits 75"
)


def add_options(group: Any, parser: pytest.Parser) -> None:
    """``--tooltrail-confidence`` and its ini option ``tooltrail_confidence``."""
    group.addoption(
        "--tooltrail-confidence", metavar="LEVEL", default=None, type=float, help=OPTION_HELP
    )
    parser.addini("tooltrail_confidence", default="", help=OPTION_HELP)


def session_confidence(config: pytest.Config) -> float | None:
    """The session's confidence (``--tooltrail-confidence``, else the ini option), or
    ``None``; a bad value is a usage error naming the option."""
    value: Any = config.getoption("tooltrail_confidence", None)
    where = "--tooltrail-confidence"
    if value is None:
        value, where = str(config.getini("tooltrail_confidence") or "").strip(), "ini option"
        if not value:
            return None
    try:
        return check_confidence(float(value))
    except ValueError as error:
        raise pytest.UsageError(f"tooltrail_confidence ({where}): {error}") from None


class TrialVerdicts:
    """A plugin object counting the session's failed tests, inconclusive or not, for the
    ``inconclusive`` status and the exit code."""

    def __init__(self) -> None:
        self.inconclusive = 0
        self.other_failures = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.failed:
            return
        if getattr(report, MARK, False) is True:
            self.inconclusive += 1
        else:
            self.other_failures += 1

    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> tuple[str, str, str] | None:
        if report.failed and getattr(report, MARK, False) is True:
            # Counted as failed (its message in FAILURES, "1 failed"), shown as inconclusive.
            return "failed", "I", "INCONCLUSIVE"
        return None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        failed = session.exitstatus == pytest.ExitCode.TESTS_FAILED
        if failed and self.inconclusive and not self.other_failures:
            session.exitstatus = EXIT_INCONCLUSIVE

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.inconclusive:
            return
        tests = "test was" if self.inconclusive == 1 else "tests were"
        line = (
            f"tooltrail: {self.inconclusive} {tests} inconclusive: the runs' interval "
            "straddles the threshold; more runs narrow it"
        )
        if not self.other_failures:
            line += f" (exit {EXIT_INCONCLUSIVE}: rerun)"
        terminalreporter.write_line(line, yellow=True)


def mark_report(report: pytest.TestReport, raised: BaseException | None) -> None:
    """Mark ``report`` inconclusive when its test raised ``TrialsInconclusive``."""
    from tooltrail.pytest.runs import TrialsInconclusive

    if isinstance(raised, TrialsInconclusive) and report.failed:
        setattr(report, MARK, True)


__all__ = [
    "EXIT_INCONCLUSIVE",
    "MARK",
    "TrialVerdicts",
    "add_options",
    "mark_report",
    "session_confidence",
]
