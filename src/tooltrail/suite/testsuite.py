"""A named, versioned set of cases (and optionally the gate its report must pass)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooltrail.hints import did_you_mean
from tooltrail.suite.case import Prices, TestCase
from tooltrail.suite.fields import FieldReader
from tooltrail.suite.load import suite_fields, suite_fields_of_file
from tooltrail.suite.suite_error import SuiteError

if TYPE_CHECKING:
    from tooltrail.judge.settings import JudgeSettings
    from tooltrail.model import EvalTrace
    from tooltrail.suite.gate import Gate


@dataclass(slots=True)
class TestSuite:
    """Cases with unique ids. ``TestSuite.load(path)`` reads a YAML or JSON suite file."""

    __test__ = False  # not a pytest test class

    name: str
    version: str = "1"
    cases: list[TestCase] = field(default_factory=list)
    gate: Gate | None = None
    #: model -> price, for the cases' ``max_cost_usd`` (a case's own ``prices`` win).
    prices: Prices | None = None
    #: Seconds each check may run, for the cases without a ``check_timeout`` of their own.
    check_timeout: float | None = None
    #: The suite's ``judge:`` block: the judge its judge checks ask (``tooltrail.score.run_judge``).
    judge: JudgeSettings | None = None

    def __post_init__(self) -> None:
        if self.prices:  # copies, so that a case shared by two suites keeps each one's prices
            self.cases = [
                replace(case, prices=self.prices) if case.prices is None else case
                for case in self.cases
            ]
        if self.check_timeout is not None:  # copies likewise
            self.cases = [
                replace(case, check_timeout=self.check_timeout)
                if case.check_timeout is None
                else case
                for case in self.cases
            ]
        seen: set[str] = set()
        for case in self.cases:
            if case.id in seen:
                raise SuiteError(f"suite {self.name!r} has two cases with id {case.id!r}")
            seen.add(case.id)

    @classmethod
    def load(cls, path: str | Path) -> TestSuite:
        """Read a suite file (YAML, or JSON when the name ends in ``.json``).

        Raises ``SuiteError`` naming the file, line and key path of the first problem.
        """
        return cls(**suite_fields_of_file(path))

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> TestSuite:
        """Build a suite from already-parsed data with the same strict checks as ``load``."""
        return cls(**suite_fields(data, FieldReader(source)))

    def with_check_timeout(self, seconds: float) -> TestSuite:
        """A copy whose every case's checks run under ``seconds`` (``eval --check-timeout``:
        the command line wins over the suite file)."""
        cases = [replace(case, check_timeout=seconds) for case in self.cases]
        return replace(self, cases=cases, check_timeout=seconds)

    def case(self, case_id: str) -> TestCase:
        """The case with this id; ``KeyError`` with a did-you-mean hint otherwise."""
        for case in self.cases:
            if case.id == case_id:
                return case
        ids = [c.id for c in self.cases]
        raise KeyError(f"no case {case_id!r} in suite {self.name!r}{did_you_mean(case_id, ids)}")

    def cases_for(self, trace: EvalTrace) -> list[TestCase]:
        """The cases that apply to ``trace``: policies whose ``match`` selects it, and the case
        named by its ``metadata["case_id"]`` (a ``tooltrail.case_id`` attribute). None for a
        trace that records no run (``EvalTrace.records_a_run``: an agent built, not run)."""
        if not trace.records_a_run:
            return []
        tagged = trace.metadata.get("case_id")
        return [
            case
            for case in self.cases
            if (case.match is not None and case.match.selects(trace))
            or (case.match is None and tagged is not None and case.id == tagged)
        ]
