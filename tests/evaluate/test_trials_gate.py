"""The gate's third verdict: with ``confidence``, a repeated case whose Wilson interval
straddles its threshold makes the gate inconclusive; one wholly below it fails the gate.

Intervals worked out by hand (95%, z² = 3.841459): 7/10 -> [0.3968, 0.8922] (see
test_trials.py), 2/10 -> [0.0567, 0.5098], 10/10 -> [0.7225, 1].
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tooltrail import CaseResult, EvaluationReport, Gate, Score, SuiteError, TestCase, TestSuite
from tooltrail.report.json import render_json
from tooltrail.report.saved import saved_report_of

FLAKY = TestCase(id="refund", required_tools=["a"], runs=10, threshold=0.8)
ONCE = TestCase(id="once", required_tools=["a"])
SUITE = TestSuite("trials", cases=[FLAKY, ONCE])


def report(outcomes: str, *, once: bool = True) -> EvaluationReport:
    """The refund case's runs (``P`` passed, ``F`` failed), then one run of ``once``."""
    rows = [
        CaseResult("refund", c == "P", [Score("a", "a", float(c == "P"), c == "P", "")])
        for c in outcomes
    ]
    rows.append(CaseResult("once", once, [Score("a", "a", float(once), once, "")]))
    return EvaluationReport.from_results(SUITE, rows)


SEVEN = report("PFFPPPPFPP")  # the seeded flaky runs: 7 of 10


def test_an_interval_straddling_the_threshold_is_inconclusive():
    result = Gate(confidence=0.95).check(SEVEN)
    assert (result.passed, result.inconclusive, result.verdict) == (False, True, "INCONCLUSIVE")
    assert result.reasons == [
        "case 'refund': 7/10 runs passed, 95% interval [39.68%, 89.22%] straddles the "
        "threshold 80.00%: inconclusive (more runs narrow the interval)"
    ]
    assert not result  # not a pass


def test_an_interval_wholly_below_the_threshold_fails_the_gate():
    result = Gate(confidence=0.95).check(report("PFFFFFFFFP"))
    assert (result.passed, result.inconclusive, result.verdict) == (False, False, "FAIL")
    assert result.reasons == [
        "case 'refund': 2/10 runs passed, 95% interval [5.67%, 50.98%] is below the "
        "threshold 80.00%"
    ]


def test_an_interval_clearing_the_threshold_passes():
    lenient = TestSuite(
        "t", cases=[TestCase(id="refund", required_tools=["a"], runs=10, threshold=0.7)]
    )
    rows = [CaseResult("refund", True, []) for _ in range(10)]  # [0.7225, 1] clears 0.7
    result = Gate(confidence=0.95).check(EvaluationReport.from_results(lenient, rows))
    assert (result.passed, result.reasons, result.verdict) == (True, [], "PASS")


def test_the_confidence_sets_the_interval():
    # 90% (z² = 2.705543): 7/10 -> [0.4417, 0.8731], still around 0.8; at 0.9 it is below.
    assert Gate(confidence=0.9).check(SEVEN).inconclusive
    strict = TestSuite(
        "t", cases=[TestCase(id="refund", required_tools=["a"], runs=10, threshold=0.9)]
    )
    rows = [CaseResult("refund", c == "P", []) for c in "PFFPPPPFPP"]
    result = Gate(confidence=0.9).check(EvaluationReport.from_results(strict, rows))
    assert result.verdict == "FAIL" and "is below the threshold 90.00%" in result.reasons[0]


def test_a_broken_floor_wins_over_an_inconclusive_case():
    result = Gate(confidence=0.95, min_pass_rate=0.9).check(SEVEN)
    assert (result.passed, result.inconclusive) == (False, False)
    assert result.reasons[0].startswith("pass rate 8/11 (72.73%) is below the minimum 90.00%")
    assert "inconclusive" in result.reasons[1]  # still said


def test_without_confidence_the_gate_ignores_the_runs_as_it_did():
    assert Gate(min_pass_rate=0.5).check(SEVEN).passed
    assert not Gate(min_pass_rate=0.5).check(SEVEN).inconclusive


def test_cases_that_ask_for_no_repeats_are_not_the_confidences_business():
    only_once = EvaluationReport.from_results(SUITE, [CaseResult("once", False, [])])
    assert Gate(confidence=0.95).check(only_once).passed  # the floors decide such rows
    # Ten passes of ten: [0.7225, 1] still has 0.8 inside; the failing `once` is not counted.
    result = Gate(confidence=0.95).check(report("PPPPPPPPPP", once=False))
    assert result.inconclusive and len(result.reasons) == 1


def test_every_run_must_pass_is_decided_without_an_interval():
    strict = TestSuite("t", cases=[TestCase(id="refund", required_tools=["a"], runs=3)])
    rows = [CaseResult("refund", c == "P", []) for c in "PPF"]
    result = Gate(confidence=0.95).check(EvaluationReport.from_results(strict, rows))
    assert result.verdict == "FAIL"
    assert result.reasons == [
        "case 'refund': 2/3 runs passed, 95% interval [20.77%, 93.85%] is below the "
        "threshold 100.00% (every run must pass)"
    ]


def test_a_gate_file_reads_confidence_strictly(tmp_path: Path):
    good = tmp_path / "gate.yaml"
    good.write_text("min_pass_rate: 0.5\nconfidence: 0.9\n")
    assert Gate.load(good) == Gate(min_pass_rate=0.5, confidence=0.9)
    assert Gate.load(good).to_dict() == {"min_pass_rate": 0.5, "confidence": 0.9}
    bad = tmp_path / "bad.yaml"
    bad.write_text("min_pass_rate: 0.5\nconfidence: 95\n")
    with pytest.raises(SuiteError, match=r"bad.yaml:2: confidence: a confidence is a number "):
        Gate.load(bad)
    alone = tmp_path / "alone.yaml"
    alone.write_text("confidence: 0.95\n")
    assert Gate.load(alone).confidence == 0.95  # a gate of that one key


def test_an_inconclusive_verdict_survives_the_json_report():
    gate = Gate(confidence=0.95).check(SEVEN)
    saved = saved_report_of(render_json(SEVEN, gate=gate), "report.json")
    assert saved.gate == gate
    passed = Gate().check(SEVEN)
    assert '"inconclusive": true' not in render_json(SEVEN, gate=passed)  # as before
