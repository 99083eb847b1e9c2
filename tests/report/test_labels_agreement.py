"""The agreement of scores with human labels (``tooltrail.agreement``): the matrix, accuracy,
Cohen's kappa and the rates on hand-made rows, which label a score takes, what has no verdict,
the labels that match nothing, a sampled judge's self-agreement, and the JSON round trip.
Also: tests/data/labels holds what its generator writes from the corpus' truth files."""

from __future__ import annotations

import json
from fractions import Fraction

from labelled_runs import LABELS_CSV, LABELS_JSON, make_labels

from tooltrail.agreement import Agreement, CheckAgreement, measure
from tooltrail.checks.score import Score
from tooltrail.labels import Label, LabelSet, labels_from_csv_text, read_labels
from tooltrail.redact import Redaction
from tooltrail.results import CaseResult


def row(trace_id: str, *scores: Score, case_id: str = "refund") -> CaseResult:
    return CaseResult(case_id, all(s.passed for s in scores), list(scores), trace_id, trace_id)


def score(passed: bool, name: str = "policy", **fields: object) -> Score:
    made = Score(name=name, metric=name, value=float(passed), passed=passed, explanation="why")
    for key, value in fields.items():
        setattr(made, key, value)
    return made


def labels(*given: tuple[str, bool], check: str = "policy") -> LabelSet:
    return LabelSet(
        "labels.csv",
        tuple(
            Label(check=check, passed=passed, trace_id=trace, line=n + 2)
            for n, (trace, passed) in enumerate(given)
        ),
    )


def test_the_matrix_and_every_figure_of_a_hand_counted_set() -> None:
    # labels: 6 pass, 4 fail; the check: passes 5 of the 6, and 2 of the 4
    human = [True] * 6 + [False] * 4
    check = [True] * 5 + [False] + [True] * 2 + [False] * 2
    rows = [row(f"t{n}", score(c)) for n, c in enumerate(check)]
    found = measure(rows, labels(*((f"t{n}", h) for n, h in enumerate(human))))
    (policy,) = found.checks
    assert (policy.true_positive, policy.false_negative) == (5, 1)
    assert (policy.false_positive, policy.true_negative) == (2, 2)
    assert policy.accuracy_fraction() == Fraction(7, 10)
    # chance: (6 * 7 + 4 * 3) / 100 = 54/100; kappa = (70 - 54) / (100 - 54) = 16/46
    assert policy.kappa_fraction() == Fraction(8, 23)
    assert policy.true_positive_rate == 5 / 6 and policy.true_negative_rate == 0.5
    assert [(d.trace_id, d.human_passed, d.check_passed) for d in policy.disagreements] == [
        ("t5", True, False),
        ("t6", False, True),
        ("t7", False, True),
    ]
    assert policy.judge is False and found.matched == 10 and found.unmatched == []


def test_kappa_cannot_be_computed_when_everything_is_one_class_and_is_zero_for_chance() -> None:
    same = measure(
        [row(f"t{n}", score(True)) for n in range(3)], labels(*((f"t{n}", True) for n in range(3)))
    )
    assert same.checks[0].kappa is None and same.checks[0].accuracy == 1.0
    assert same.checks[0].true_negative_rate is None
    # every label pass, the check passes half: agreement is what chance gives
    half = measure(
        [row("a", score(True)), row("b", score(False))], labels(("a", True), ("b", True))
    )
    assert half.checks[0].kappa == 0.0
    assert CheckAgreement(check="x").kappa is None  # nothing compared


def test_a_score_without_a_verdict_is_counted_apart_not_as_a_fail() -> None:
    rows = [
        row("a", score(False, error="JudgeUnavailable", judge={"model": "m"})),
        row("b", score(False, skipped=True)),
        row("c", score(True)),
    ]
    found = measure(rows, labels(("a", True), ("b", True), ("c", True)))
    (policy,) = found.checks
    assert policy.no_verdict == 2 and policy.compared == 1 and policy.judge is True
    assert found.matched == 3


def test_the_most_specific_label_wins_trace_and_case_then_trace_then_case() -> None:
    given = LabelSet(
        "l.csv",
        (
            Label(check="policy", passed=False, trace_id="t1", case_id="a", line=2),
            Label(check="policy", passed=True, trace_id="t1", line=3),
            Label(check="policy", passed=False, case_id="b", line=4),
        ),
    )
    rows = [
        row("t1", score(False), case_id="a"),  # trace and case: fail, agrees
        row("t1", score(False), case_id="c"),  # the trace alone: pass, disagrees
        row("t2", score(False), case_id="b"),  # the case alone: fail, agrees
        row("t3", score(False), case_id="b"),  # the case again
    ]
    (policy,) = measure(rows, given).checks
    assert (policy.true_negative, policy.false_negative, policy.compared) == (3, 1, 4)
    assert policy.disagreements[0].case_id == "c"


def test_labels_that_match_no_score_are_grouped_by_check_with_a_hint() -> None:
    given = LabelSet(
        "l.csv",
        (
            Label(check="polcy", passed=True, trace_id="t1", line=2),
            Label(check="polcy", passed=True, trace_id="t2", line=3),
            Label(check="policy", passed=True, trace_id="elsewhere", line=4),
        ),
    )
    found = measure([row("t1", score(True)), row("t2", score(True))], given)
    assert found.checks == [] and found.unmatched_count == 3
    assert [u.describe() for u in found.unmatched] == [
        "polcy: 2 labels (lines 2, 3): no score of the run has this name (did you mean 'policy'?)",
        "policy: 1 label (line 4): the run has this check, but not on the runs these labels name",
    ]


def test_a_sampled_judges_self_agreement_is_the_mean_of_its_judgements_agreement() -> None:
    record = {"model": "m", "samples": 3}
    rows = [
        row("a", score(True, judge={**record, "agreement": 1.0})),
        row("b", score(True, judge={**record, "agreement": 2 / 3})),
        row("c", score(False, judge={**record, "samples": 1, "agreement": 1.0})),
    ]
    (policy,) = measure(rows, labels(("a", True), ("b", True), ("c", False))).checks
    assert policy.self_agreement is not None
    assert policy.self_agreement.judgements == 2 and policy.self_agreement.samples == 3
    assert policy.self_agreement.mean == (1 + 2 / 3) / 2


def test_notes_are_redacted_before_they_reach_a_report() -> None:
    given = LabelSet(
        "l.csv", (Label(check="policy", passed=True, trace_id="a", notes="token=abc123"),)
    )
    found = measure([row("a", score(False))], given, redaction=Redaction(keys=("token",)))
    assert found.checks[0].disagreements[0].notes == "token=[REDACTED]"


def test_the_json_form_reads_back_to_the_same_agreement_with_its_figures_recomputed() -> None:
    rows = [row("a", score(True)), row("b", score(False)), row("c", score(True))]
    found = measure(rows, labels(("a", True), ("b", True), ("c", False), ("z", True)))
    data = json.loads(json.dumps(found.to_dict()))
    again = Agreement.from_dict(data)
    assert again.to_dict() == found.to_dict()
    data["checks"][0]["kappa"] = 0.99  # a written figure is never trusted
    assert Agreement.from_dict(data).checks[0].kappa == found.checks[0].kappa


def test_the_labels_files_are_what_the_generator_writes_from_the_truth_files() -> None:
    assert LABELS_CSV.read_text(encoding="utf-8") == make_labels.csv_text()
    assert LABELS_JSON.read_text(encoding="utf-8") == make_labels.json_text()
    from_csv, from_json = read_labels(LABELS_CSV), read_labels(LABELS_JSON)
    assert len(from_csv) == 144
    strip = [(x.trace_id, x.check, x.passed, x.notes) for x in from_csv.labels]
    assert strip == [(x.trace_id, x.check, x.passed, x.notes) for x in from_json.labels]
    assert [x.line for x in from_csv.labels[:2]] == [2, 3]
    assert from_json.labels[1].line is not None and from_json.labels[1].line > 2


def test_csv_text_reads_quoted_cells_over_several_lines_and_names_each_labels_first_line() -> None:
    text = 'check,trace_id,verdict,notes\n\npolicy,t1,PASS,"two\nlines"\npolicy,t2, fail ,\n'
    read = labels_from_csv_text(text)
    assert [(x.trace_id, x.passed, x.notes, x.line) for x in read.labels] == [
        ("t1", True, "two\nlines", 3),
        ("t2", False, "", 5),
    ]
