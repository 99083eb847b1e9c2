"""``tooltrail compare`` warns when the two reports cover different traces or suites: still
compared (a nightly run over new traces is the usual case), but not without a word."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from fixtures import CORPUS, REFUND_DUMP, REFUND_SUITE

from tooltrail.cli import main

OTHER_RUNS = CORPUS / "pydantic-ai" / "a_refund_ok.otlp.jsonl"


def json_report(tmp_path: Path, suite: Path, dump: Path, name: str) -> Path:
    out = tmp_path / name
    args = ["eval", str(suite), str(dump), "--format", "json", "--out", str(out), "-q"]
    result = CliRunner().invoke(main, [*args, "--workers", "1"])
    assert result.exit_code in (0, 1), result.output
    return out


def compare(*args: str):
    return CliRunner().invoke(main, ["compare", *args])


def test_reports_of_the_same_traces_and_suite_compare_without_a_warning(tmp_path: Path) -> None:
    base = json_report(tmp_path, REFUND_SUITE, REFUND_DUMP, "base.json")
    new = json_report(tmp_path, REFUND_SUITE, REFUND_DUMP, "new.json")
    result = compare(str(base), str(new))
    assert result.exit_code == 0 and "warning" not in result.output
    assert json.loads(compare(str(base), str(new), "--format", "json").stdout)["warnings"] == []


def test_reports_of_different_traces_are_compared_with_a_warning(tmp_path: Path) -> None:
    base = json_report(tmp_path, REFUND_SUITE, REFUND_DUMP, "base.json")
    new = json_report(tmp_path, REFUND_SUITE, OTHER_RUNS, "new.json")
    result = compare(str(base), str(new), "--format", "json")
    (warning,) = json.loads(result.stdout)["warnings"]
    assert warning.startswith("the reports cover different traces: 0 in both, 4 only in ")
    assert "1 only in " in warning and "no trace in common" in warning
    assert f"tooltrail compare: warning: {warning}" in result.stderr
    text = compare(str(base), str(new))
    assert f"\nwarning: {warning}\n" in text.stdout
    assert "tooltrail compare: warning" not in text.stderr  # said once, in the text itself


def test_reports_of_different_suites_are_compared_with_a_warning(tmp_path: Path) -> None:
    renamed = tmp_path / "renamed.yaml"
    text = REFUND_SUITE.read_text(encoding="utf-8").replace("name: refund-agent", "name: other")
    renamed.write_text(text.replace('version: "1.0"', 'version: "2"'), encoding="utf-8")
    base = json_report(tmp_path, REFUND_SUITE, REFUND_DUMP, "base.json")
    new = json_report(tmp_path, renamed, REFUND_DUMP, "new.json")
    out = tmp_path / "comment.md"
    result = compare(str(base), str(new), "--format", "markdown", "--out", str(out))
    expected = (
        f"the reports are of different suites: {base} of 'refund-agent' version '1.0', "
        f"{new} of 'other' version '2'"
    )
    assert f"tooltrail compare: warning: {expected}" in result.stderr
    assert "> **Warning:** the reports are of different suites" in out.read_text(encoding="utf-8")
