"""Reports (text, JSON, JUnit XML, Markdown; HTML in ``report.html``, run comparison in
``report.compare``) and the CI gate (``suite.gate``, re-exported). Renderers return strings; writers
stream the same text to a file (``write_text(report, out)``) in bounded memory; only the CLI
prints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.lazy import lazy_exports

#: Public name -> the module that defines it, imported on first use (PEP 562): a run writes
#: one format and loads only that writer (``report.formats`` picks it by name).
_EXPORTS: dict[str, str] = {
    "Gate": "tooltrail.suite.gate",
    "GateResult": "tooltrail.suite.gate",
    "iter_json": "tooltrail.report.json",
    "iter_junit": "tooltrail.report.junit",
    "iter_markdown": "tooltrail.report.markdown",
    "iter_text": "tooltrail.report.text",
    "render_json": "tooltrail.report.json",
    "render_junit": "tooltrail.report.junit",
    "render_markdown": "tooltrail.report.markdown",
    "render_text": "tooltrail.report.text",
    "write_json": "tooltrail.report.json",
    "write_junit": "tooltrail.report.junit",
    "write_markdown": "tooltrail.report.markdown",
    "write_text": "tooltrail.report.text",
}

if TYPE_CHECKING:
    from tooltrail.report.json import iter_json, render_json, write_json
    from tooltrail.report.junit import iter_junit, render_junit, write_junit
    from tooltrail.report.markdown import iter_markdown, render_markdown, write_markdown
    from tooltrail.report.text import iter_text, render_text, write_text
    from tooltrail.suite.gate import Gate, GateResult

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

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
