"""The CI gate: floors a report must meet, and the reasons when it does not.

It lives with the suite (a suite file may carry its gate) and knows reports only by the shape
of their summary (``GatedReport``), and a run's agreement with labels only by the shape of its
checks' kappas (``GatedAgreement``, which ``tooltrail.agreement.Agreement`` has), so the suite
layer imports nothing above it.

A gate's verdict is ``pass``, ``fail``, or, with ``confidence``, ``inconclusive``: each case
that asks for repeated runs is decided by the Wilson interval of its pass rate
(``tooltrail.trials``), and one whose interval straddles its threshold cannot be decided from
these runs. CI may rerun on it (``tooltrail eval``'s and ``tooltrail gate``'s exit code 75).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tooltrail.suite.fields import FieldReader, KeyPath, read_document
from tooltrail.suite.suite_error import SuiteError
from tooltrail.trials import Trials, meets


class _Rate(Protocol):
    @property
    def passed(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def pass_rate(self) -> float: ...


class _Runs(Protocol):
    """One case's runs verdict (``tooltrail.results.RunVerdict`` has it)."""

    @property
    def case_id(self) -> str: ...
    @property
    def threshold(self) -> float | None: ...
    @property
    def repeated(self) -> bool: ...
    @property
    def trials(self) -> Trials: ...


class _Summary(Protocol):
    @property
    def total_cases(self) -> int: ...
    @property
    def passed_cases(self) -> int: ...
    @property
    def pass_rate(self) -> float: ...
    @property
    def metrics(self) -> Mapping[str, _Rate]: ...
    @property
    def runs(self) -> Sequence[_Runs]: ...


class GatedReport(Protocol):
    """What a gate reads of a report (``tooltrail.results.EvaluationReport`` has it)."""

    @property
    def summary(self) -> _Summary: ...


class _CheckKappa(Protocol):
    @property
    def check(self) -> str: ...
    @property
    def judge(self) -> bool: ...
    @property
    def compared(self) -> int: ...
    @property
    def kappa(self) -> float | None: ...


class GatedAgreement(Protocol):
    """What a gate reads of a run's agreement with labels: each labelled check's kappa."""

    @property
    def source(self) -> str: ...
    @property
    def checks(self) -> Sequence[_CheckKappa]: ...


GATE_KEYS = (
    "min_pass_rate",
    "min_metric_pass_rate",
    "max_failed_cases",
    "min_judge_kappa",
    "confidence",
)


@dataclass(slots=True)
class GateResult:
    passed: bool
    #: Why the gate failed, one sentence per broken floor; empty when it passed.
    reasons: list[str] = field(default_factory=list)
    #: Not passed, and no floor broken: only repeated cases the runs cannot decide (their
    #: interval straddles the threshold). CI may rerun.
    inconclusive: bool = False

    def __bool__(self) -> bool:
        return self.passed

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL`` or ``INCONCLUSIVE``: the word the commands and reports print."""
        if self.passed:
            return "PASS"
        return "INCONCLUSIVE" if self.inconclusive else "FAIL"


@dataclass(slots=True)
class Gate:
    """Floors on a report. A value equal to its floor passes; a metric named here but absent
    from the report fails the gate.

    ``min_judge_kappa``: a floor on Cohen's kappa of the checks measured against labels
    (``tooltrail eval --labels``): a number holds for every labelled judge check, a mapping
    (check name -> floor) for the checks it names, judges or not. It fails the gate when a
    check's kappa is below its floor or cannot be computed, when no check it covers has a
    labelled verdict, and when the run was not measured against labels at all.

    ``confidence``: decide each case that asks for repeated runs (``runs > 1`` or a
    ``threshold``) by the Wilson interval of its pass rate at this confidence
    (``tooltrail.trials``): below its threshold fails the gate, straddling it makes the gate
    ``inconclusive`` (when nothing else fails it)."""

    min_pass_rate: float | None = None
    min_metric_pass_rate: dict[str, float] = field(default_factory=dict)
    max_failed_cases: int | None = None
    min_judge_kappa: float | dict[str, float] | None = None
    confidence: float | None = None

    @classmethod
    def load(cls, path: str | Path) -> Gate:
        """Read a gate file (YAML or JSON): the gate keys at top level, or under ``gate:``."""
        data, reader = read_document(path)
        if isinstance(data, dict) and set(data) == {"gate"}:
            return gate_from_data(data["gate"], reader, ("gate",))
        return gate_from_data(data, reader, ())

    @classmethod
    def from_mapping(cls, data: Any, source: str | None = None) -> Gate:
        """Build a gate from parsed data (strict keys, like ``load``)."""
        return gate_from_data(data, FieldReader(source), ())

    def check(self, report: GatedReport, agreement: GatedAgreement | None = None) -> GateResult:
        """Whether ``report`` meets every floor, with one reason per floor it breaks;
        ``agreement``: the run's agreement with labels, for ``min_judge_kappa``."""
        summary = report.summary
        reasons: list[str] = []
        if self.min_pass_rate is not None:
            if summary.total_cases == 0:
                reasons.append("no cases were evaluated, so the pass rate cannot be checked")
            elif not meets(summary.passed_cases, summary.total_cases, self.min_pass_rate):
                reasons.append(
                    f"pass rate {summary.passed_cases}/{summary.total_cases} "
                    f"({summary.pass_rate:.2%}) is below the minimum {self.min_pass_rate:.2%}"
                )
        for metric, floor in sorted(self.min_metric_pass_rate.items()):
            found = summary.metrics.get(metric)
            if found is None or found.total == 0:
                reasons.append(f"metric {metric!r} is named in the gate but absent from the report")
            elif not meets(found.passed, found.total, floor):
                reasons.append(
                    f"metric {metric!r} pass rate {found.passed}/{found.total} "
                    f"({found.pass_rate:.2%}) is below the minimum {floor:.2%}"
                )
        if self.max_failed_cases is not None:
            failed = summary.total_cases - summary.passed_cases
            if failed > self.max_failed_cases:
                reasons.append(
                    f"{failed} failed cases exceed the maximum of {self.max_failed_cases}"
                )
        if self.min_judge_kappa is not None:
            reasons.extend(kappa_reasons(self.min_judge_kappa, agreement))
        undecided: list[str] = []
        if self.confidence is not None:
            below, undecided = trial_reasons(summary.runs, self.confidence)
            reasons.extend(below)
        if reasons:
            return GateResult(False, reasons + undecided)
        return GateResult(not undecided, undecided, inconclusive=bool(undecided))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.min_pass_rate is not None:
            data["min_pass_rate"] = self.min_pass_rate
        if self.min_metric_pass_rate:
            data["min_metric_pass_rate"] = dict(self.min_metric_pass_rate)
        if self.max_failed_cases is not None:
            data["max_failed_cases"] = self.max_failed_cases
        if self.min_judge_kappa is not None:
            floor = self.min_judge_kappa
            data["min_judge_kappa"] = dict(floor) if isinstance(floor, dict) else floor
        if self.confidence is not None:
            data["confidence"] = self.confidence
        return data


def trial_reasons(runs: Sequence[_Runs], confidence: float) -> tuple[list[str], list[str]]:
    """Why the repeated cases fail the gate at ``confidence``, and which ones it cannot decide
    (their Wilson interval straddles the threshold), one sentence each."""
    failed: list[str] = []
    undecided: list[str] = []
    for verdict in runs:
        if not verdict.repeated:
            continue
        trials = verdict.trials
        decided = trials.verdict(verdict.threshold, confidence)
        if decided == "pass":
            continue
        interval = trials.interval(confidence)
        floor = 1.0 if verdict.threshold is None else verdict.threshold
        rule = f"threshold {floor:.2%}"
        if verdict.threshold is None:
            rule += " (every run must pass)"
        said = (
            f"case {verdict.case_id!r}: {trials.passed}/{trials.runs} runs passed, "
            f"{confidence:.0%} interval [{interval.low:.2%}, {interval.high:.2%}]"
        )
        if decided == "inconclusive":
            undecided.append(
                f"{said} straddles the {rule}: inconclusive (more runs narrow the interval)"
            )
        else:
            failed.append(f"{said} is below the {rule}")
    return failed, undecided


def kappa_reasons(
    floor: float | Mapping[str, float], agreement: GatedAgreement | None
) -> list[str]:
    """Why the agreement with labels breaks ``min_judge_kappa`` (nothing when it holds)."""
    if agreement is None:
        return ["min_judge_kappa is set, but the run was not measured against labels (--labels)"]
    checks = {found.check: found for found in agreement.checks}
    if isinstance(floor, Mapping):
        floors = sorted(floor.items())
        missing = [name for name, _ in floors if checks.get(name) is None]
        reasons = [
            f"check {name!r} is named in min_judge_kappa but no label in "
            f"{agreement.source} matched its scores"
            for name in missing
        ]
        named = [(checks[name], limit) for name, limit in floors if name not in missing]
    else:
        judged = [found for found in agreement.checks if found.judge]
        if not judged:
            return [f"min_judge_kappa is set, but no judge check has labels in {agreement.source}"]
        reasons, named = [], [(found, float(floor)) for found in judged]
    for found, limit in named:
        what = f"{'judge check' if found.judge else 'check'} {found.check!r}"
        if found.compared == 0:
            reasons.append(f"{what} has no labelled verdict, so its kappa cannot be checked")
        elif found.kappa is None:
            reasons.append(
                f"{what} kappa cannot be computed over {found.compared} labelled verdicts "
                "(labels and verdicts are all one class), so it cannot meet the minimum "
                f"{limit:.3f}"
            )
        elif found.kappa < limit:
            reasons.append(
                f"{what} kappa {found.kappa:.3f} over {found.compared} labelled verdicts is "
                f"below the minimum {limit:.3f}"
            )
    return reasons


def gate_from_data(data: Any, reader: FieldReader, path: KeyPath) -> Gate:
    """Validate gate keys at ``path`` of a parsed document."""
    top = reader.mapping(data, path, GATE_KEYS, what="a gate mapping")
    if not top:
        reader.fail(path, f"a gate needs at least one of {', '.join(GATE_KEYS)}")
    gate = Gate()
    if top.get("min_pass_rate") is not None:
        gate.min_pass_rate = reader.fraction(top["min_pass_rate"], path + ("min_pass_rate",))
    if top.get("min_metric_pass_rate") is not None:
        key_path = path + ("min_metric_pass_rate",)
        metrics = reader.free_mapping(top["min_metric_pass_rate"], key_path)
        gate.min_metric_pass_rate = {
            name: reader.fraction(floor, key_path + (name,)) for name, floor in metrics.items()
        }
    if top.get("max_failed_cases") is not None:
        gate.max_failed_cases = reader.integer(
            top["max_failed_cases"], path + ("max_failed_cases",)
        )
    if top.get("min_judge_kappa") is not None:
        gate.min_judge_kappa = _kappa_floors(top["min_judge_kappa"], reader, path)
    if top.get("confidence") is not None:
        gate.confidence = confidence_of(top["confidence"], reader, path + ("confidence",))
    return gate


def confidence_of(value: Any, reader: FieldReader, path: KeyPath) -> float:
    """A confidence level: a number strictly between 0 and 1 (0.95 for 95%)."""
    number = reader.number(value, path)
    if not 0 < number < 1:
        reader.fail(path, f"a confidence is a number strictly between 0 and 1, got {value!r}")
    return number


def kappa_floor(value: Any, reader: FieldReader, path: KeyPath) -> float:
    """A floor on Cohen's kappa: a number from -1 to 1."""
    number = reader.number(value, path)
    if not -1 <= number <= 1:
        reader.fail(path, f"a kappa floor is a number from -1 to 1, got {value!r}")
    return number


def _kappa_floors(value: Any, reader: FieldReader, path: KeyPath) -> float | dict[str, float]:
    key_path = path + ("min_judge_kappa",)
    if not isinstance(value, dict):
        return kappa_floor(value, reader, key_path)
    floors = reader.free_mapping(value, key_path, what="a number or a mapping of check names")
    if not floors:
        reader.fail(key_path, "name at least one check, or give one number for every judge")
    return {name: kappa_floor(limit, reader, key_path + (name,)) for name, limit in floors.items()}


__all__ = [
    "GATE_KEYS",
    "Gate",
    "GateResult",
    "GatedAgreement",
    "GatedReport",
    "SuiteError",
    "confidence_of",
    "gate_from_data",
    "kappa_floor",
    "kappa_reasons",
    "meets",
    "trial_reasons",
]
