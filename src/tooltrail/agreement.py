"""How far a run's checks agree with human labels: per check, the confusion matrix, accuracy,
Cohen's kappa, the true positive and negative rates, the disagreeing runs, and for a judge
asked several samples its agreement with itself.

``measure(rows, labels)`` walks the rows once, in blocks as they come (rows read back from
disk are never all held), and keeps only the scores a label names: memory is bounded by the
labels file, not by the run. Each score a label names is matched by the most specific key
first: the label's trace and case, then the trace alone, then the case alone. The positive
class is *pass*: a true positive is a run the person passed and the check passed too.

A labelled score without a verdict (an ``error``, such as an unavailable judge, or a skipped
score) is counted apart (``no_verdict``), never as a pass or a fail. Kappa is ``None`` when it
cannot be computed: no labelled verdict, or labels and verdicts all of one and the same class
(chance agreement 1). The numbers are worked out exactly (fractions) and given as floats.

The report formats render an ``Agreement`` (``report.agreement``); the gate reads it through
a protocol (``suite.gate.GatedAgreement``: ``min_judge_kappa``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import islice
from typing import TYPE_CHECKING, Any

from tooltrail.checks.judges import JUDGE_CHECKS
from tooltrail.hints import did_you_mean
from tooltrail.labels import Label, LabelSet
from tooltrail.redact import DEFAULT_REDACTION, Redaction

if TYPE_CHECKING:
    from tooltrail.checks.score import Score
    from tooltrail.results import CaseResult

#: Rows taken from the walk at a time.
BLOCK = 4096
#: Lines named per check of the labels that matched no score (the rest are counted).
MAX_UNMATCHED_LINES = 10

_Key = tuple[str | None, str | None, str]


@dataclass(slots=True)
class Disagreement:
    """A run where the check's verdict is not the person's."""

    label: str
    case_id: str
    trace_id: str | None
    #: The person's verdict, and the check's.
    human_passed: bool
    check_passed: bool
    notes: str = ""
    explanation: str = ""
    #: The label's line in its file.
    line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "case_id": self.case_id,
            "trace_id": self.trace_id,
            "human": "pass" if self.human_passed else "fail",
            "check": "pass" if self.check_passed else "fail",
            "notes": self.notes,
            "explanation": self.explanation,
            "line": self.line,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Disagreement:
        trace_id, line = data.get("trace_id"), data.get("line")
        return cls(
            label=str(data["label"]),
            case_id=str(data["case_id"]),
            trace_id=None if trace_id is None else str(trace_id),
            human_passed=_verdict(data["human"]),
            check_passed=_verdict(data["check"]),
            notes=str(data.get("notes") or ""),
            explanation=str(data.get("explanation") or ""),
            line=line if isinstance(line, int) and not isinstance(line, bool) else None,
        )


@dataclass(slots=True)
class SelfAgreement:
    """A sampled judge's agreement with itself over the labelled runs it judged: the mean of
    each judgement's share of samples that agree with its majority (``JudgeOutcome``)."""

    judgements: int
    #: The most samples one judgement asked.
    samples: int
    mean: float

    def to_dict(self) -> dict[str, Any]:
        return {"judgements": self.judgements, "samples": self.samples, "mean": self.mean}


@dataclass(slots=True)
class CheckAgreement:
    """One check's verdicts against the labels that name it."""

    check: str
    #: Whether a judge gave the check's verdicts (a judge record, or a judge check's metric).
    judge: bool = False
    true_positive: int = 0
    false_negative: int = 0
    false_positive: int = 0
    true_negative: int = 0
    #: Labelled scores without a verdict (errors, skipped).
    no_verdict: int = 0
    disagreements: list[Disagreement] = field(default_factory=list)
    self_agreement: SelfAgreement | None = None

    @property
    def compared(self) -> int:
        """Labelled scores with a verdict: the matrix's total."""
        return self.true_positive + self.false_negative + self.false_positive + self.true_negative

    @property
    def human_passed(self) -> int:
        return self.true_positive + self.false_negative

    @property
    def human_failed(self) -> int:
        return self.false_positive + self.true_negative

    def accuracy_fraction(self) -> Fraction | None:
        if not self.compared:
            return None
        return Fraction(self.true_positive + self.true_negative, self.compared)

    def kappa_fraction(self) -> Fraction | None:
        """Cohen's kappa, exactly: ``(po - pe) / (1 - pe)``; ``None`` when ``pe`` is 1 or
        nothing was compared."""
        n = self.compared
        if not n:
            return None
        observed = Fraction(self.true_positive + self.true_negative, n)
        check_passed = self.true_positive + self.false_positive
        check_failed = self.false_negative + self.true_negative
        chance = Fraction(
            self.human_passed * check_passed + self.human_failed * check_failed, n * n
        )
        if chance == 1:
            return None
        return (observed - chance) / (1 - chance)

    @property
    def accuracy(self) -> float | None:
        found = self.accuracy_fraction()
        return None if found is None else float(found)

    @property
    def kappa(self) -> float | None:
        found = self.kappa_fraction()
        return None if found is None else float(found)

    @property
    def true_positive_rate(self) -> float | None:
        """Of the runs the person passed, the share the check passed (``None``: none)."""
        total = self.human_passed
        return self.true_positive / total if total else None

    @property
    def true_negative_rate(self) -> float | None:
        """Of the runs the person failed, the share the check failed (``None``: none)."""
        total = self.human_failed
        return self.true_negative / total if total else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "judge": self.judge,
            "compared": self.compared,
            "no_verdict": self.no_verdict,
            "matrix": {
                "true_positive": self.true_positive,
                "false_negative": self.false_negative,
                "false_positive": self.false_positive,
                "true_negative": self.true_negative,
            },
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "true_positive_rate": self.true_positive_rate,
            "true_negative_rate": self.true_negative_rate,
            "self_agreement": (
                self.self_agreement.to_dict() if self.self_agreement is not None else None
            ),
            "disagreements": [d.to_dict() for d in self.disagreements],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckAgreement:
        """Read back from the counts (the rates are worked out again, never trusted)."""
        matrix = data["matrix"]
        own = data.get("self_agreement")
        return cls(
            check=str(data["check"]),
            judge=bool(data.get("judge", False)),
            true_positive=_count(matrix["true_positive"]),
            false_negative=_count(matrix["false_negative"]),
            false_positive=_count(matrix["false_positive"]),
            true_negative=_count(matrix["true_negative"]),
            no_verdict=_count(data.get("no_verdict", 0)),
            disagreements=[Disagreement.from_dict(d) for d in data.get("disagreements") or ()],
            self_agreement=(
                SelfAgreement(
                    judgements=_count(own["judgements"]),
                    samples=_count(own["samples"]),
                    mean=float(own["mean"]),
                )
                if isinstance(own, Mapping)
                else None
            ),
        )


@dataclass(slots=True)
class UnmatchedCheck:
    """The labels of one check name that no score of the run answered: a check the suite does
    not have (``known`` false, with a did-you-mean), or runs the input does not hold."""

    check: str
    count: int
    known: bool
    hint: str = ""
    #: The lines of the first ``MAX_UNMATCHED_LINES`` of them.
    lines: list[int] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "count": self.count,
            "known": self.known,
            "hint": self.hint,
            "lines": list(self.lines),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UnmatchedCheck:
        return cls(
            check=str(data["check"]),
            count=_count(data["count"]),
            known=bool(data.get("known", False)),
            hint=str(data.get("hint") or ""),
            lines=[_count(line) for line in data.get("lines") or ()],
        )

    def describe(self) -> str:
        """``refund_polcy: 48 labels (lines 2, 5, ...): no score of the run has this name``."""
        shown = ", ".join(str(line) for line in self.lines)
        more = ", ..." if self.count > len(self.lines) else ""
        lines = f" (line{'s' if self.count > 1 else ''} {shown}{more})" if shown else ""
        why = (
            "the run has this check, but not on the runs these labels name"
            if self.known
            else f"no score of the run has this name{self.hint}"
        )
        return f"{self.check}: {self.count} label{'s' if self.count > 1 else ''}{lines}: {why}"


@dataclass(slots=True)
class Agreement:
    """Every labelled check's agreement (by check name), and the labels left unanswered."""

    #: The labels file.
    source: str
    labels: int
    #: Labels that named at least one score of the run.
    matched: int
    checks: list[CheckAgreement] = field(default_factory=list)
    #: The labels that named no score, by check name (in order of first label).
    unmatched: list[UnmatchedCheck] = field(default_factory=list)

    @property
    def unmatched_count(self) -> int:
        return self.labels - self.matched

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "labels": self.labels,
            "matched": self.matched,
            "unmatched": [u.to_dict() for u in self.unmatched],
            "checks": [c.to_dict() for c in self.checks],
        }

    @classmethod
    def from_dict(cls, data: Any) -> Agreement:
        """Read a JSON report's ``agreement`` back; ``ValueError`` when it is malformed."""
        try:
            return cls(
                source=str(data.get("source", "")),
                labels=_count(data["labels"]),
                matched=_count(data["matched"]),
                checks=[CheckAgreement.from_dict(c) for c in data.get("checks") or ()],
                unmatched=[UnmatchedCheck.from_dict(u) for u in data.get("unmatched") or ()],
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"malformed agreement: {type(exc).__name__}: {exc}") from None


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"expected a count, got {value!r}")
    return value


def _verdict(value: Any) -> bool:
    if value not in ("pass", "fail"):
        raise ValueError(f"expected 'pass' or 'fail', got {value!r}")
    return bool(value == "pass")


class _Tally:
    """What ``measure`` gathers for one check as the rows go by."""

    __slots__ = ("agreement", "samples", "shares")

    def __init__(self, check: str) -> None:
        self.agreement = CheckAgreement(check=check)
        self.shares: list[float] = []
        self.samples = 0

    def add(self, row: CaseResult, score: Score, label: Label, rules: Redaction) -> None:
        found = self.agreement
        record = score.judge
        if record is not None or score.metric in JUDGE_CHECKS:
            found.judge = True
        if score.error is not None or score.skipped:
            found.no_verdict += 1
            return
        human, check = label.passed, bool(score.passed)
        if human and check:
            found.true_positive += 1
        elif human:
            found.false_negative += 1
        elif check:
            found.false_positive += 1
        else:
            found.true_negative += 1
        if human != check:
            found.disagreements.append(
                Disagreement(
                    label=row.label,
                    case_id=row.case_id,
                    trace_id=row.trace_id,
                    human_passed=human,
                    check_passed=check,
                    notes=rules.redact_text(label.notes),
                    explanation=score.explanation,
                    line=label.line,
                )
            )
        samples = record.get("samples") if record is not None else None
        share = record.get("agreement") if record is not None else None
        if isinstance(samples, int) and samples > 1 and isinstance(share, (int, float)):
            self.shares.append(float(share))
            self.samples = max(self.samples, samples)

    def result(self) -> CheckAgreement:
        if self.shares:
            self.agreement.self_agreement = SelfAgreement(
                judgements=len(self.shares),
                samples=self.samples,
                mean=sum(self.shares) / len(self.shares),
            )
        return self.agreement


def measure(
    rows: Iterable[CaseResult], labels: LabelSet, *, redaction: Redaction | None = None
) -> Agreement:
    """The agreement of ``rows``' scores with ``labels`` (see the module docstring).
    ``redaction``: the rules the labels' notes are redacted with before they reach a report
    (default ``redact.DEFAULT_REDACTION``; explanations are the rows' own, already redacted)."""
    rules = redaction or DEFAULT_REDACTION
    by_key: dict[_Key, Label] = {label.key: label for label in labels.labels}
    by_trace = any(label.trace_id is not None for label in labels.labels)
    by_case = any(label.case_id is not None for label in labels.labels)
    tallies: dict[str, _Tally] = {}
    used: set[_Key] = set()
    names: set[str] = set()
    walk = iter(rows)
    while block := list(islice(walk, BLOCK)):
        for row in block:
            trace_id, case_id = row.trace_id, row.case_id
            for score in row.scores:
                name = score.name
                names.add(name)
                label = None
                if by_trace and by_case:
                    label = by_key.get((trace_id, case_id, name))
                if label is None and by_trace:
                    label = by_key.get((trace_id, None, name))
                if label is None and by_case:
                    label = by_key.get((None, case_id, name))
                if label is None:
                    continue
                used.add(label.key)
                tally = tallies.get(name)
                if tally is None:
                    tally = tallies[name] = _Tally(name)
                tally.add(row, score, label, rules)
    return Agreement(
        source=labels.source,
        labels=len(labels),
        matched=len(used),
        checks=[tallies[name].result() for name in sorted(tallies)],
        unmatched=_unmatched([label for label in labels.labels if label.key not in used], names),
    )


def _unmatched(labels: list[Label], names: set[str]) -> list[UnmatchedCheck]:
    """``labels`` grouped by check, each group said why it matched nothing."""
    groups: dict[str, UnmatchedCheck] = {}
    for label in labels:
        group = groups.get(label.check)
        if group is None:
            known = label.check in names
            hint = "" if known else did_you_mean(label.check, names)
            group = groups[label.check] = UnmatchedCheck(label.check, 0, known, hint)
        group.count += 1
        if label.line is not None and len(group.lines) < MAX_UNMATCHED_LINES:
            group.lines.append(label.line)
    return list(groups.values())


__all__ = [
    "Agreement",
    "CheckAgreement",
    "Disagreement",
    "SelfAgreement",
    "UnmatchedCheck",
    "measure",
]
