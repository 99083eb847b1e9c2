"""The HTML report reads as a person expects: its title names the suite's version as such, a
tool span's status is ``ok`` or ``error`` (never OpenTelemetry's ``unset``), and the timeline's
axis and durations are round figures in the unit that suits them (``20 µs``, not
``0.0367 ms``)."""

from __future__ import annotations

import html
import re
from pathlib import Path

from click.testing import CliRunner
from fixtures import REFUND_DUMP, REFUND_SUITE

from tooltrail.cli import main
from tooltrail.report.html import _ms, _ticks

DURATION = re.compile(r"^(0|\d{1,3}(\.\d+)? (µs|ms|s))$")


def refund_page(tmp_path: Path) -> str:
    out = tmp_path / "report.html"
    args = ["eval", str(REFUND_SUITE), str(REFUND_DUMP), "--format", "html", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--workers", "1", "-q"])
    assert result.exit_code == 1, result.output
    return out.read_text(encoding="utf-8")


def test_the_title_names_the_suite_and_its_version_in_words(tmp_path: Path) -> None:
    page = refund_page(tmp_path)
    assert "<title>refund-agent (version 1.0): tooltrail report</title>" in page
    assert "<h1>refund-agent (version 1.0)</h1>" in page


def test_tool_spans_say_ok_or_error_not_unset(tmp_path: Path) -> None:
    page = refund_page(tmp_path)
    statuses = re.findall(r"· status (\w+) · ", page)
    assert statuses and set(statuses) == {"ok"}
    assert "status unset" not in page


def test_the_timeline_reads_in_round_figures(tmp_path: Path) -> None:
    page = html.unescape(refund_page(tmp_path))
    axes = re.findall(r'<div class="axis">(.*?)</div>', page)
    assert axes
    for axis in axes:
        ticks = re.findall(r">([^<]*)</span>", axis)
        assert ticks[0] == "0" and 2 <= len(ticks) <= 4
        assert all(DURATION.match(t) for t in ticks), ticks
        steps = {float(t.split()[0]) for t in ticks[1:]}
        assert all(re.fullmatch(r"\d+(\.5)?", f"{s:g}") for s in steps), ticks  # round steps
    durations = re.findall(r'<div class="dur">([^<]*)</div>', page)
    assert durations and all(DURATION.match(d) for d in durations), durations
    assert not re.search(r">0\.0\d+ ms<", page)


def test_durations_keep_three_figures_in_the_unit_that_suits_them() -> None:
    assert [_ms(v) for v in (0.0367, 0.285, 4.2, 37.5, 1520.0, 0.0)] == [
        "36.7 µs", "285 µs", "4.2 ms", "37.5 ms", "1.52 s", "0",
    ]  # fmt: skip
    assert _ticks(0.0489) == [0.0, 0.02, 0.04]
    assert _ticks(7.3) == [0.0, 2.0, 4.0, 6.0]
