"""Reports (text, JSON, JUnit XML, Markdown) and the CI gate. Renderers return strings; only the
CLI prints."""

from __future__ import annotations

from tooltrail.report.gate import Gate, GateResult
from tooltrail.report.json import render_json
from tooltrail.report.junit import render_junit
from tooltrail.report.markdown import render_markdown
from tooltrail.report.text import render_text

__all__ = [
    "Gate",
    "GateResult",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_text",
]
