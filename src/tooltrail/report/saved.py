"""A JSON report written earlier (``tooltrail eval --format json``), read back with its optional
keys: the gate's verdict, the agreement with labels and the rows' trajectories (see
``tooltrail.report.json``).

The file may come from an older tooltrail or another machine, so what it holds is redacted
again with the configured rules (``TOOLTRAIL_REDACT_*``) as it is read: explanations
(``redacted_explanations``, as evaluation does), trajectories (``redact_trajectory``), and the
notes and explanations of the agreement's disagreeing runs (``Redaction.redact_text``)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import orjson

from tooltrail.agreement import Agreement
from tooltrail.redact import Redaction, redacted_explanations
from tooltrail.report.trajectory import Trajectory, redact_trajectory
from tooltrail.results import EvaluationReport, ReportError
from tooltrail.settings import redaction_from_env
from tooltrail.suite.gate import GateResult


@dataclass(slots=True)
class SavedReport:
    report: EvaluationReport
    #: Row index -> trajectory, for the rows that carry one.
    trajectories: dict[int, Trajectory] = field(default_factory=dict)
    gate: GateResult | None = None
    #: The run's agreement with labels (``tooltrail eval --labels``), when it was measured.
    agreement: Agreement | None = None


def read_saved_report(
    path: str | os.PathLike[str], redaction: Redaction | None = None
) -> SavedReport:
    """Read a JSON report file, redacted with ``redaction`` (default: the configured rules).
    Raises ``ReportError`` naming the file (and the row) when it is not JSON or not a report,
    ``OSError`` when it cannot be read."""
    with open(path, "rb") as handle:
        raw = handle.read()
    return saved_report_of(raw, os.fspath(path), redaction)


def saved_report_of(raw: bytes | str, name: str, redaction: Redaction | None = None) -> SavedReport:
    """``read_saved_report`` of a file's content; ``name`` is what messages call it."""
    rules = redaction if redaction is not None else redaction_from_env()
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ReportError(f"{name}: not JSON: {exc}") from None
    try:
        report = EvaluationReport.from_dict(data)
    except ReportError as exc:
        raise ReportError(f"{name}: {exc}") from None
    for row in report.cases:
        row.scores = redacted_explanations(rules, row.scores)
    trajectories: dict[int, Trajectory] = {}
    for index, row in enumerate(data.get("cases") or ()):
        found = row.get("trajectory") if isinstance(row, dict) else None
        if found is None:
            continue
        try:
            trajectories[index] = redact_trajectory(Trajectory.from_dict(found), rules)
        except (TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"{name}: cases[{index}].trajectory: malformed: {exc}") from None
    gate = None
    recorded = data.get("gate")
    if isinstance(recorded, dict) and isinstance(recorded.get("passed"), bool):
        gate = GateResult(
            recorded["passed"],
            [str(r) for r in recorded.get("reasons") or ()],
            inconclusive=recorded.get("inconclusive") is True and not recorded["passed"],
        )
    agreement = None
    if data.get("agreement") is not None:
        try:
            agreement = Agreement.from_dict(data["agreement"])
        except ValueError as exc:
            raise ReportError(f"{name}: agreement: {exc}") from None
        for check in agreement.checks:
            for found in check.disagreements:
                found.notes = rules.redact_text(found.notes)
                found.explanation = rules.redact_text(found.explanation)
    return SavedReport(report=report, trajectories=trajectories, gate=gate, agreement=agreement)
