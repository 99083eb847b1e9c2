"""What an evaluation gives, beside the model it judged (layer 0): a check's ``Score``, a
(case, trace) row (``CaseResult``), the summary of many rows and the report that holds them.

Nothing here runs a check: the runner is ``tooltrail.score``. Reports, results lines, events,
the batch pass's spill files and the pytest plugin read these types without it.
"""

from __future__ import annotations

from tooltrail.results.report import SCHEMA_VERSION, EvaluationReport, ReportError, SuiteFacts
from tooltrail.results.rows import CaseResult, EvaluationSample
from tooltrail.results.score import Score
from tooltrail.results.summary import (
    SUMMARY_BLOCK,
    CaseRuns,
    JudgeSummary,
    MetricSummary,
    RunVerdict,
    Summarizer,
    Summary,
    summarize,
)

__all__ = [
    "SCHEMA_VERSION",
    "SUMMARY_BLOCK",
    "CaseResult",
    "CaseRuns",
    "EvaluationReport",
    "EvaluationSample",
    "JudgeSummary",
    "MetricSummary",
    "ReportError",
    "RunVerdict",
    "Score",
    "Summarizer",
    "Summary",
    "SuiteFacts",
    "summarize",
]
