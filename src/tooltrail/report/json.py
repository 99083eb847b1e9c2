"""The JSON report: ``EvaluationReport.to_dict()`` (stable names, ``schema_version``)."""

from __future__ import annotations

import json

from tooltrail.evaluate import EvaluationReport


def render_json(report: EvaluationReport, *, indent: int | None = 2) -> str:
    """The report as a JSON document, ending in a newline. Non-finite values are ``null``."""
    return json.dumps(report.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False) + "\n"
