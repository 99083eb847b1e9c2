"""Repeated trials: pass@k, pass^k, the flip rate and the Wilson interval of seeded flaky runs.

Every expected number below is worked out by hand from the formulas of docs/eval.md
("Repeated trials"), not read from the code:

- pass@k = 1 - C(n - c, k) / C(n, k), pass^k = C(c, k) / C(n, k);
- flip rate = flips / (recorded - 1);
- Wilson: (p + z²/2n ± z·sqrt(p(1 - p)/n + z²/4n²)) / (1 + z²/n), z = 1.959964 at 95%.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from tooltrail import EvalSpan, EvalTrace, EvaluationSample, TestCase, TestSuite, evaluate_suite
from tooltrail.results import CaseResult, EvaluationReport, Summarizer
from tooltrail.trials import (
    Trials,
    count_flips,
    pass_at_k,
    pass_hat_k,
    shown_ks,
    wilson_interval,
    z_score,
)

#: Seeded flaky runs: ``random.Random(1)``, a run passing when its draw is below 0.7.
SEED, RATE, RUNS = 1, 0.7, 10
#: What that seed draws (asserted below): 7 of 10 pass, the outcome changes 4 times.
OUTCOMES = "PFFPPPPFPP"


def seeded_outcomes() -> list[bool]:
    draw = random.Random(SEED)
    return [draw.random() < RATE for _ in range(RUNS)]


def trace(passed: bool, n: int) -> EvalTrace:
    tools = ["lookup_order", "verify_identity", "issue_refund"] if passed else ["lookup_order"]
    return EvalTrace(f"run-{n}", spans=[EvalSpan(tool_name=t) for t in tools])


CASE = TestCase(
    id="refund", required_tools=["lookup_order", "verify_identity"], runs=10, threshold=0.8
)


def seeded_report() -> EvaluationReport:
    samples = [
        EvaluationSample("refund", None, trace(passed, n))
        for n, passed in enumerate(seeded_outcomes(), 1)
    ]
    return evaluate_suite(TestSuite("trials", cases=[CASE]), samples)


def test_the_seed_draws_seven_passes_of_ten_with_four_flips():
    assert "".join("P" if ok else "F" for ok in seeded_outcomes()) == OUTCOMES
    assert [row.passed for row in seeded_report().cases] == [c == "P" for c in OUTCOMES]


def test_seeded_flaky_runs_give_the_documented_pass_at_k():
    (verdict,) = seeded_report().summary.runs
    trials = verdict.trials
    assert (trials.runs, trials.passed, trials.recorded, trials.flips) == (10, 7, 10, 4)
    # 1 - C(3, k) / C(10, k): C(3, k) = 3, 3, 1, then 0; C(10, k) = 10, 45, 120, ...
    expected = {1: 1 - 3 / 10, 2: 1 - 3 / 45, 3: 1 - 1 / 120, 4: 1.0, 7: 1.0, 10: 1.0}
    for k, value in expected.items():
        assert trials.pass_at(k) == pytest.approx(value, abs=1e-12), k


def test_seeded_flaky_runs_give_the_documented_pass_hat_k():
    trials = seeded_report().summary.runs[0].trials
    # C(7, k) / C(10, k): 7/10, 21/45, 35/120, 35/210, 21/252, 7/210, 1/120, then 0.
    expected = [7 / 10, 21 / 45, 35 / 120, 35 / 210, 21 / 252, 7 / 210, 1 / 120, 0, 0, 0]
    assert [trials.pass_hat(k) for k in range(1, 11)] == pytest.approx(expected, abs=1e-12)
    assert trials.pass_hat(1) == trials.pass_at(1) == 0.7  # k = 1: both are the pass rate


def test_seeded_flaky_runs_give_the_documented_flip_rate_and_interval():
    trials = seeded_report().summary.runs[0].trials
    assert trials.flip_rate == pytest.approx(4 / 9)  # P|F F|P P P P|F F|P P: 4 of 9 pairs
    # p = 0.7, n = 10, z² = 3.841459: centre 0.892073 / 1.384146 = 0.64449,
    # half 1.959964 · sqrt(0.021 + 0.009604) / 1.384146 = 0.24772: [0.3968, 0.8922].
    interval = trials.interval()
    assert (interval.low, interval.high) == (
        pytest.approx(0.3968, abs=1e-4),
        pytest.approx(0.8922, abs=1e-4),
    )
    assert interval.confidence == 0.95
    assert trials.verdict(0.8) == "inconclusive"  # 0.397 < 0.8 < 0.892
    assert trials.verdict(0.3) == "pass"  # the interval clears 0.3
    assert trials.verdict(0.95) == "fail"  # it lies wholly below 0.95


def test_the_interval_at_another_confidence():
    # 90%: z = 1.644854, z² = 2.705543; centre 0.835277 / 1.270554 = 0.65741,
    # half 1.644854 · sqrt(0.021 + 0.006764) / 1.270554 = 0.21571: [0.4417, 0.8731].
    interval = wilson_interval(7, 10, 0.9)
    assert (interval.low, interval.high) == (
        pytest.approx(0.4417, abs=1e-4),
        pytest.approx(0.8731, abs=1e-4),
    )
    assert z_score(0.95) == pytest.approx(1.959964, abs=1e-6)
    assert Trials(runs=10, passed=7, recorded=10, flips=4).verdict(0.85, 0.9) == "inconclusive"
    assert Trials(runs=10, passed=7, recorded=10, flips=4).verdict(0.9, 0.9) == "fail"


def test_the_estimators_are_exact_before_they_are_floats():
    assert pass_hat_k(7, 10, 3) == float(Fraction(35, 120))
    assert pass_at_k(7, 10, 2) == float(Fraction(42, 45))
    assert pass_at_k(0, 5, 5) == 0.0 and pass_hat_k(5, 5, 5) == 1.0
    with pytest.raises(ValueError, match="k must be between 1 and the runs"):
        pass_at_k(3, 5, 6)


def test_no_pass_and_every_pass_pin_the_interval_ends():
    # c = 0: low is 0; high = z² / (n + z²) = 3.841459 / 13.841459 = 0.277533.
    none, every = wilson_interval(0, 10), wilson_interval(10, 10)
    assert none.low == 0.0 and none.high == pytest.approx(0.27753, abs=1e-5)
    assert every.high == 1.0 and every.low == pytest.approx(1 - 0.27753, abs=1e-5)


def test_every_run_must_pass_is_never_inconclusive():
    # Without a threshold (a threshold of 1) no interval has 1 strictly inside it.
    assert Trials(runs=10, passed=10, recorded=10, flips=0).verdict(None) == "pass"
    assert Trials(runs=10, passed=9, recorded=10, flips=1).verdict(None) == "fail"
    assert Trials(runs=3, passed=0, recorded=3, flips=0).verdict(0.0) == "pass"


def test_confidence_outside_zero_and_one_is_refused():
    for bad in (0, 1, 1.5, -0.1, True):
        with pytest.raises(ValueError, match="confidence"):
            wilson_interval(1, 2, bad)


def test_the_flip_rate_needs_two_recorded_runs():
    assert count_flips([True, False, True]) == 2
    assert Trials(runs=5, passed=1, recorded=1, flips=0).flip_rate is None
    assert Trials(runs=5, passed=2, recorded=3, flips=1).flip_rate == 0.5  # missing runs


def test_reports_show_every_k_to_eight_then_powers_of_two_and_n():
    assert shown_ks(3) == [1, 2, 3]
    assert shown_ks(10) == [1, 2, 3, 4, 5, 6, 7, 8, 10]
    assert shown_ks(40) == [1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 40]


def test_flips_are_counted_per_case_in_row_order_across_blocks():
    outcomes = seeded_outcomes()
    rows = []
    for n, passed in enumerate(outcomes, 1):  # the refund runs interleaved with another case
        rows.append(CaseResult("refund", passed, [], f"r{n}"))
        rows.append(CaseResult("other", n % 2 == 0, [], f"o{n}"))
    summarizer = Summarizer({"refund": CASE})
    for row in rows:  # a block of one row at a time: the count goes on across blocks
        summarizer.add([row])
    refund, other = summarizer.summary().runs
    assert (refund.flips, refund.recorded, refund.passed_runs) == (4, 10, 7)
    assert (other.flips, other.recorded) == (9, 10)  # F P F P ...: every pair differs
    assert other.repeated is False  # not a case of the suite: no figures in the reports


def test_a_missing_run_counts_as_failed_in_the_figures():
    samples = [EvaluationSample("refund", None, trace(True, n)) for n in range(1, 9)]
    (verdict,) = evaluate_suite(TestSuite("t", cases=[CASE]), samples).summary.runs
    trials = verdict.trials
    assert (trials.runs, trials.passed, trials.recorded, trials.flips) == (10, 8, 8, 0)
    assert trials.pass_hat(2) == pytest.approx(28 / 45)  # C(8, 2) / C(10, 2)


def test_a_json_report_round_trips_the_figures():
    report = seeded_report()
    data = report.to_dict()
    trials = data["summary"]["runs"][0]["trials"]
    assert trials["pass_hat_k"]["3"] == pytest.approx(35 / 120)
    assert trials["pass_at_k"]["2"] == pytest.approx(42 / 45)
    assert (trials["flips"], trials["recorded"], trials["verdict"]) == (4, 10, "inconclusive")
    back = EvaluationReport.from_dict(data)
    assert back.summary.runs == report.summary.runs  # flips recounted from the rows


def test_a_case_that_asks_for_no_repeats_has_no_figures_in_its_json():
    once = TestCase(id="refund", required_tools=["lookup_order"])
    samples = [EvaluationSample("refund", None, trace(True, n)) for n in range(3)]
    (verdict,) = evaluate_suite(TestSuite("t", cases=[once]), samples).to_dict()["summary"]["runs"]
    assert "trials" not in verdict
