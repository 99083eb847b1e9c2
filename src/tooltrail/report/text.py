"""The plain-text report: one line per row, its failures indented, the metric table, the count.

This is the format of the seed example (``examples/refund_trajectory.py``); reports diff cleanly
against agentic-evals output.
"""

from __future__ import annotations

from tooltrail.evaluate import EvaluationReport, RunVerdict

LABEL_WIDTH = 22
METRIC_WIDTH = 24


def render_text(report: EvaluationReport) -> str:
    """The report as text, ending in a newline."""
    label_width = max([LABEL_WIDTH] + [len(row.label) for row in report.cases])
    lines: list[str] = []
    for row in report.cases:
        lines.append(f"{row.label:<{label_width}} {'PASS' if row.passed else 'FAIL'}")
        for score in row.failures:
            explanation = score.explanation.replace("\n", "\n        ")
            lines.append(f"    {score.name}: {explanation}")
    metrics = report.summary.metrics
    if metrics:
        lines.append("")
        metric_width = max([METRIC_WIDTH] + [len(name) for name in metrics])
        for name, metric in metrics.items():
            lines.append(f"{name:<{metric_width}} {metric.passed}/{metric.total} passed")
    repeated = [verdict for verdict in report.summary.runs if verdict.repeated]
    if repeated:
        lines.append("")
        lines.extend(run_line(verdict, label_width) for verdict in repeated)
    summary = report.summary
    lines.append("")
    lines.append(f"{summary.passed_cases}/{summary.total_cases} runs passed")
    return "\n".join(lines) + "\n"


def run_line(verdict: RunVerdict, width: int = LABEL_WIDTH) -> str:
    """``booking   1/3 runs passed (threshold 0.8): FAIL``."""
    rule = (
        "every run must pass" if verdict.threshold is None else f"threshold {verdict.threshold:g}"
    )
    outcome = "PASS" if verdict.passed else "FAIL"
    counts = f"{verdict.passed_runs}/{verdict.runs}"
    return f"{verdict.case_id:<{width}} {counts} runs passed ({rule}): {outcome}"
