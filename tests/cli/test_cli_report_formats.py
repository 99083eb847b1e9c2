"""Report formats are registered like checks (``report.formats``): an installed package's entry
point in ``tooltrail.report_formats`` is a format ``tooltrail report`` and ``tooltrail eval``
write, in the same table as the built-in ones. The package here is real to
``importlib.metadata``: a module and its ``.dist-info`` in a directory put on ``sys.path``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import REFUND_DUMP, REFUND_SUITE
from installed_plugins import install_distribution

from tooltrail.cli import main
from tooltrail.report.formats import REPORT_FORMATS
from tooltrail.results import CaseResult, EvaluationReport, Score

PLUGIN = '''
def write_rows(report, sink, *, trajectories=None, gate=None, agreement=None):
    """One line per row: its label and PASS or FAIL."""
    for row in report.cases:
        sink.write(f"{row.label},{'PASS' if row.passed else 'FAIL'}\\n")
'''


def _install(root: Path, entry_points: str, module: str = PLUGIN) -> Path:
    """A distribution ``rowformats`` with ``entry_points`` installed in ``root``."""
    return install_distribution(root, "rowformats", entry_points, {"rowformats": module})


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _install(tmp_path / "site", "[tooltrail.report_formats]\nrows = rowformats:write_rows\n")
    monkeypatch.syspath_prepend(str(root))


def _report_file(tmp_path: Path) -> Path:
    rows = [
        CaseResult("refund", True, [Score.passing("required_tool:a", "required_tool", "ok")]),
        CaseResult("late", False, [Score.failing("required_tool:b", "required_tool", "no")]),
    ]
    path = tmp_path / "report.json"
    path.write_text(json.dumps(EvaluationReport.from_results(None, rows).to_dict()))
    return path


def test_an_installed_format_is_written_by_tooltrail_report(
    installed: None, tmp_path: Path
) -> None:
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(
        main, ["report", str(_report_file(tmp_path)), "--format", "rows", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert out.read_text() == "refund,PASS\nlate,FAIL\n"


def test_an_installed_format_is_written_by_tooltrail_eval(installed: None, tmp_path: Path) -> None:
    out = tmp_path / "rows.csv"
    result = CliRunner().invoke(
        main,
        ["eval", "--workers", "1", "--format", "rows", "--out", str(out)]
        + [str(REFUND_SUITE), str(REFUND_DUMP)],
    )
    assert result.exit_code == 1, result.output  # the example has failing rows
    lines = out.read_text().splitlines()
    assert lines and all(line.endswith((",PASS", ",FAIL")) for line in lines)
    assert any(line.endswith(",FAIL") for line in lines)


def test_the_table_lists_the_built_in_formats_and_the_installed_one(installed: None) -> None:
    assert REPORT_FORMATS.names() == ["html", "json", "junit", "markdown", "rows", "text"]


def test_without_the_package_the_format_is_unknown(tmp_path: Path) -> None:
    assert REPORT_FORMATS.names() == ["html", "json", "junit", "markdown", "text"]
    result = CliRunner().invoke(main, ["report", str(_report_file(tmp_path)), "--format", "rows"])
    assert result.exit_code == 2
    assert "'rows' is not one of 'html', 'json', 'junit', 'markdown', 'text'" in result.output


def test_a_plug_in_under_a_built_in_name_is_an_error_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _install(tmp_path / "site", "[tooltrail.report_formats]\njson = rowformats:write_rows\n")
    monkeypatch.syspath_prepend(str(root))
    result = CliRunner().invoke(main, ["report", str(_report_file(tmp_path)), "--format", "rows"])
    assert result.exit_code == 2
    assert "report format plug-in 'json' (entry point 'rowformats:write_rows' of rowformats" in (
        result.output
    )
    assert "already taken by tooltrail.report.json.write_json" in result.output
