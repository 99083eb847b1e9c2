"""A suite's report: its rows in report order and their summary, written as JSON-ready data
with a schema version and read back from it (``tooltrail gate``, ``tooltrail report``).

Beside the rows in layer 0: the report knows a suite only by its name, version and cases
(``SuiteFacts``), so reading one back needs neither the suite loader nor a check.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tooltrail.results.rows import CaseResult
from tooltrail.results.summary import CaseRuns, RunVerdict, Summary, summarize

#: Version of the ``EvaluationReport.to_dict`` layout; bumped on incompatible changes.
SCHEMA_VERSION = 1


class ReportError(ValueError):
    """A serialized report cannot be read back."""


class SuiteCase(CaseRuns, Protocol):
    """What a report reads of a suite's case (a ``suite.TestCase``): its id and runs."""

    @property
    def id(self) -> str: ...


class SuiteFacts(Protocol):
    """What a report reads of a suite (a ``suite.TestSuite``)."""

    @property
    def name(self) -> str: ...

    @property
    def version(self) -> str: ...

    @property
    def cases(self) -> Sequence[SuiteCase]: ...


@dataclass(slots=True)
class EvaluationReport:
    """Rows of (case, trace) results for one suite, and their roll-up."""

    suite_name: str
    suite_version: str
    #: The rows in report order: a list, or any re-iterable sequence (rows read back from disk).
    cases: Sequence[CaseResult]
    summary: Summary

    @property
    def passed(self) -> bool:
        """Whether every case passed (a repeated case by its runs threshold)."""
        return all(verdict.passed for verdict in self.summary.runs)

    @classmethod
    def from_results(
        cls, suite: SuiteFacts | None, results: Iterable[CaseResult]
    ) -> EvaluationReport:
        """A report over results computed anywhere, in the order given; the summary is derived.

        A ``Sequence`` is kept as it is, not copied: a batch run's rows may be read back from
        disk on each walk (``SpilledRows``), which the summary walks once."""
        rows = results if isinstance(results, Sequence) else list(results)
        cases = {c.id: c for c in suite.cases} if suite is not None else {}
        return cls(
            suite_name=suite.name if suite is not None else "",
            suite_version=suite.version if suite is not None else "",
            cases=rows,
            summary=summarize(rows, cases),
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data with stable field names and ``schema_version``."""
        summary = self.summary
        return {
            "schema_version": SCHEMA_VERSION,
            "suite": {"name": self.suite_name, "version": self.suite_version},
            "passed": self.passed,
            "summary": {
                "passed_cases": summary.passed_cases,
                "total_cases": summary.total_cases,
                "pass_rate": summary.pass_rate,
                "average_score": summary.average_score,
                "metrics": {
                    name: {"passed": m.passed, "total": m.total}
                    for name, m in summary.metrics.items()
                },
                "runs": [verdict.to_dict() for verdict in summary.runs],
                **({"judge": summary.judge.to_dict()} if summary.judge is not None else {}),
            },
            "cases": [row.to_dict() for row in self.cases],
        }

    @classmethod
    def from_dict(cls, data: Any) -> EvaluationReport:
        """Read a report written by :meth:`to_dict` (e.g. for ``tooltrail gate``)."""
        if not isinstance(data, dict):
            raise ReportError("a report must be a JSON object")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ReportError(
                f"unsupported report schema_version {version!r} (this tooltrail reads "
                f"{SCHEMA_VERSION})"
            )
        try:
            rows = [CaseResult.from_dict(row) for row in data.get("cases", [])]
            suite = data.get("suite") or {}
            runs = [
                RunVerdict(
                    case_id=str(r["case_id"]),
                    passed_runs=int(r["passed_runs"]),
                    runs=int(r["runs"]),
                    threshold=r.get("threshold"),
                    passed=bool(r["passed"]),
                    repeated=bool(r.get("repeated", False)),
                )
                for r in (data.get("summary") or {}).get("runs", [])
            ]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"malformed report: {type(exc).__name__}: {exc}") from None
        summary = summarize(rows, {})
        if runs:  # keep the recorded thresholds: the suite is not at hand
            counted = {verdict.case_id: verdict for verdict in summary.runs}
            for verdict in runs:  # the flips are the rows' own, in their order
                found = counted.get(verdict.case_id)
                if found is not None:
                    verdict.recorded, verdict.flips = found.recorded, found.flips
            summary.runs = runs
        return cls(str(suite.get("name", "")), str(suite.get("version", "")), rows, summary)
