"""Reports (text, JSON, JUnit XML, Markdown; HTML in ``report.html``, run comparison in
``report.compare``) and the CI gate (``suite.gate``, re-exported). Renderers return strings; writers
stream the same text to a file (``write_text(report, out)``) in bounded memory; only the CLI
prints."""

from __future__ import annotations

from tooltrail.report.json import iter_json, render_json, write_json
from tooltrail.report.junit import iter_junit, render_junit, write_junit
from tooltrail.report.markdown import iter_markdown, render_markdown, write_markdown
from tooltrail.report.text import iter_text, render_text, write_text
from tooltrail.suite.gate import Gate, GateResult

__all__ = [
    "Gate",
    "GateResult",
    "iter_json",
    "iter_junit",
    "iter_markdown",
    "iter_text",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_text",
    "write_json",
    "write_junit",
    "write_markdown",
    "write_text",
]
