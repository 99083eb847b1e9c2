"""The CI gate: floors a report must meet, and the reasons when it does not.

It lives with the suite (a suite file may carry its gate) and knows reports only by the shape
of their summary (``GatedReport``), so the suite layer imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from tooltrail.suite.errors import SuiteError
from tooltrail.suite.fields import FieldReader, KeyPath, read_document


class _Rate(Protocol):
    @property
    def passed(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def pass_rate(self) -> float: ...


class _Summary(Protocol):
    @property
    def total_cases(self) -> int: ...
    @property
    def passed_cases(self) -> int: ...
    @property
    def pass_rate(self) -> float: ...
    @property
    def metrics(self) -> Mapping[str, _Rate]: ...


class GatedReport(Protocol):
    """What a gate reads of a report (``tooltrail.evaluate.EvaluationReport`` has it)."""

    @property
    def summary(self) -> _Summary: ...


def meets(passed: int, total: int, floor: float) -> bool:
    """``passed / total >= floor`` exactly (a rate equal to its floor passes; no float drift)."""
    if total <= 0:
        return False
    return Fraction(passed, total) >= Fraction(repr(float(floor)))


GATE_KEYS = ("min_pass_rate", "min_metric_pass_rate", "max_failed_cases")


@dataclass(slots=True)
class GateResult:
    passed: bool
    #: Why the gate failed, one sentence per broken floor; empty when it passed.
    reasons: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.passed


@dataclass(slots=True)
class Gate:
    """Floors on a report. A value equal to its floor passes; a metric named here but absent
    from the report fails the gate."""

    min_pass_rate: float | None = None
    min_metric_pass_rate: dict[str, float] = field(default_factory=dict)
    max_failed_cases: int | None = None

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

    def check(self, report: GatedReport) -> GateResult:
        """Whether ``report`` meets every floor, with one reason per floor it breaks."""
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
        return GateResult(not reasons, reasons)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.min_pass_rate is not None:
            data["min_pass_rate"] = self.min_pass_rate
        if self.min_metric_pass_rate:
            data["min_metric_pass_rate"] = dict(self.min_metric_pass_rate)
        if self.max_failed_cases is not None:
            data["max_failed_cases"] = self.max_failed_cases
        return data


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
    return gate


__all__ = [
    "GATE_KEYS",
    "Gate",
    "GateResult",
    "GatedReport",
    "SuiteError",
    "gate_from_data",
    "meets",
]
