"""Every report format shows a repeated case's figures; a report without one is unchanged.

The seeded flaky runs of test_trials.py (7 of 10 passed, P F F P P P P F P P), the numbers by
hand: pass@k = 1 - C(3, k)/C(10, k) -> 0.700 0.933 0.992 then 1; pass^k = C(7, k)/C(10, k)
-> 0.700 0.467 0.292 0.167 0.083 0.033 0.008 then 0; flip rate 4/9 = 0.44; the 95% Wilson
interval [0.3968, 0.8922] straddles the threshold 0.8.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tooltrail import CaseResult, EvaluationReport, Gate, Score, TestCase, TestSuite
from tooltrail.report import render_json, render_junit, render_markdown, render_text
from tooltrail.report.html import render_html

OUTCOMES = "PFFPPPPFPP"


def report(case_id: str = "refund", outcomes: str = OUTCOMES, **case: object) -> EvaluationReport:
    fields = {"runs": 10, "threshold": 0.8, **case}
    suite = TestSuite("trials", cases=[TestCase(id=case_id, required_tools=["a"], **fields)])
    rows = [
        CaseResult(
            case_id,
            c == "P",
            [Score("a", "a", float(c == "P"), c == "P", "no a")],
            f"t{n}",
            f"{case_id} run {n}",
        )
        for n, c in enumerate(outcomes, 1)
    ]
    return EvaluationReport.from_results(suite, rows)


FIGURES = """\
refund                 7/10 runs passed (threshold 0.8): FAIL
    95% Wilson interval [39.7%, 89.2%] straddles the threshold 0.8: inconclusive
    flip rate 0.44 (4 changes in 10 runs)
    k           1      2      3      4      5      6      7      8     10
    pass@k  0.700  0.933  0.992  1.000  1.000  1.000  1.000  1.000  1.000
    pass^k  0.700  0.467  0.292  0.167  0.083  0.033  0.008  0.000  0.000

7/10 runs passed
"""


def test_the_text_report_shows_the_figures_under_the_runs_line():
    assert render_text(report()).endswith("a                        7/10 passed\n\n" + FIGURES)


def test_the_text_report_reads_the_interval_at_the_threshold():
    below = render_text(report(outcomes="PFFFFFFFFP"))  # 2/10: [5.7%, 51.0%]
    assert "    95% Wilson interval [5.7%, 51.0%] is below the threshold 0.8\n" in below
    clears = render_text(report(outcomes="P" * 10, threshold=0.7))  # [72.2%, 100.0%]
    assert "    95% Wilson interval [72.2%, 100.0%] clears the threshold 0.7\n" in clears
    every = render_text(report(outcomes="PPF", runs=3, threshold=None))  # no threshold
    assert "    95% Wilson interval [20.8%, 93.9%]\n    flip rate 0.50 (1 change in 3 runs)\n" in (
        every
    )


def test_missing_runs_are_said_to_be_missing():
    text = render_text(report(outcomes="PPPPPPPP"))  # 8 of the 10 asked for
    assert "    flip rate 0.00 (0 changes in 8 recorded runs)\n" in text
    assert "    pass^k  0.800  0.622" in text  # C(8, 2)/C(10, 2) = 28/45


def test_markdown_adds_a_table_of_the_figures():
    lines = render_markdown(report()).splitlines()
    at = lines.index("| Case | Interval | At the threshold | Flip rate | pass@k | pass^k |")
    assert lines[at + 2] == (
        "| refund | 95% Wilson interval \\[39.7%, 89.2%\\] | straddles the threshold 0.8: "
        "inconclusive | 0.44 (4 changes in 10 runs) | k=1 0.700, k=2 0.933, k=3 0.992, "
        "k=4 1.000, k=5 1.000, k=6 1.000, k=7 1.000, k=8 1.000, k=10 1.000 | k=1 0.700, "
        "k=2 0.467, k=3 0.292, k=4 0.167, k=5 0.083, k=6 0.033, k=7 0.008, k=8 0.000, "
        "k=10 0.000 |"
    )


def test_junit_carries_the_figures_as_properties():
    root = ET.fromstring(render_junit(report()))
    found = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert float(found["trials.refund.pass_hat_3"]) == pytest.approx(35 / 120)
    assert float(found["trials.refund.pass_at_2"]) == pytest.approx(42 / 45)
    assert float(found["trials.refund.flip_rate"]) == pytest.approx(4 / 9)
    assert float(found["trials.refund.interval_low"]) == pytest.approx(0.3968, abs=1e-4)
    assert float(found["trials.refund.interval_high"]) == pytest.approx(0.8922, abs=1e-4)
    assert (found["trials.refund.verdict"], found["trials.refund.confidence"]) == (
        "inconclusive",
        "0.95",
    )
    assert "trials.refund.pass_at_9" not in found  # 1 to 8, then n


def test_json_lists_every_k():
    (verdict,) = json.loads(render_json(report()))["summary"]["runs"]
    assert list(verdict["trials"]["pass_hat_k"]) == [str(k) for k in range(1, 11)]
    assert verdict["trials"]["pass_hat_k"]["9"] == 0.0


def test_html_adds_a_table_and_escapes_the_case_id():
    page = render_html(report(case_id="<b>refund</b>"))
    assert "<h2>Repeated trials</h2>" in page
    assert "<td>&lt;b&gt;refund&lt;/b&gt;</td>" in page and "<b>refund</b>" not in page
    assert "<td>straddles the threshold 0.8: inconclusive</td>" in page
    assert "<td>k=1 0.700, k=2 0.467, k=3 0.292" in page


def test_an_inconclusive_gate_is_shown_as_such():
    gate = Gate(confidence=0.95).check(report())
    page = render_html(report(), gate=gate)
    assert 'Gate: <b class="muted">INCONCLUSIVE</b>' in page
    assert "straddles the threshold 80.00%: inconclusive" in page
    data = json.loads(render_json(report(), gate=gate))
    assert data["gate"]["inconclusive"] is True and data["gate"]["passed"] is False


def test_a_report_without_repeated_cases_has_no_figures():
    once = report(runs=1, threshold=None)  # ten rows of a case that asked for one run
    for text in (render_text(once), render_markdown(once), render_junit(once)):
        assert "Wilson" not in text and "trials." not in text and "pass^k" not in text
    assert "Repeated trials" not in render_html(once)
    assert "trials" not in json.loads(render_json(once))["summary"]["runs"][0]
