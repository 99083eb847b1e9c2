"""The report formats by name, registered like checks: tooltrail's own (html, json, junit,
markdown, text) in the same table as those an installed package declares in the entry-point
group ``tooltrail.report_formats``::

    [project.entry-points."tooltrail.report_formats"]
    csv = "my_reports:write_csv"

Each entry is a writer, ``write(report, sink, *, trajectories, gate, agreement)``, that streams
the report to a text sink (it may ignore what it does not show). ``tooltrail eval --format`` and
``tooltrail report --format`` take any name of the table (``REPORT_FORMATS.names()``). A
built-in writer's module is imported when the format is used, not when the table is read.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from tooltrail.registries import NamedFactories, RegistryError
from tooltrail.report.stream import TextSink
from tooltrail.results.report import EvaluationReport

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement
    from tooltrail.report.trajectory import Trajectory
    from tooltrail.suite.gate import GateResult

#: The entry-point group installed packages register their report formats in.
ENTRY_POINT_GROUP = "tooltrail.report_formats"

__all__ = [
    "ENTRY_POINT_GROUP",
    "REPORT_FORMATS",
    "ReportWriter",
    "RegistryError",
    "report_writer",
]


class ReportWriter(Protocol):
    """A report format: streams ``report`` to ``sink``; ``trajectories`` (the failing runs'
    timelines, by row), ``gate`` (the gate's verdict) and ``agreement`` (with human labels)
    are given when the run has them."""

    def __call__(
        self,
        report: EvaluationReport,
        sink: TextSink,
        *,
        trajectories: Mapping[int, Trajectory] | None = None,
        gate: GateResult | None = None,
        agreement: Agreement | None = None,
    ) -> None: ...


def _built_in(module: str, function: str, *, shows_runs: bool) -> ReportWriter:
    """The writer ``function`` of ``tooltrail.report.<module>``, imported when the format is
    first used; ``shows_runs``: it takes the failing runs' timelines and the gate's verdict
    (the others show neither)."""

    def write(
        report: EvaluationReport,
        sink: TextSink,
        *,
        trajectories: Mapping[int, Trajectory] | None = None,
        gate: GateResult | None = None,
        agreement: Agreement | None = None,
    ) -> None:
        writer = getattr(importlib.import_module(f"tooltrail.report.{module}"), function)
        if shows_runs:
            writer(report, sink, trajectories=trajectories, gate=gate, agreement=agreement)
        else:
            writer(report, sink, agreement=agreement)

    # what an error naming the format's owner says (``registries``): the real writer
    write.__module__, write.__qualname__ = f"tooltrail.report.{module}", function
    return write


#: Report formats by name: the built-in ones, and those installed as entry points.
REPORT_FORMATS: NamedFactories[ReportWriter] = NamedFactories(ENTRY_POINT_GROUP, "report format")
for _name, _function, _shows_runs in (
    ("html", "write_html", True),
    ("json", "write_json", True),
    ("junit", "write_junit", False),
    ("markdown", "write_markdown", False),
    ("text", "write_text", False),
):
    REPORT_FORMATS.register(_name, _built_in(_name, _function, shows_runs=_shows_runs))


def report_writer(name: str) -> ReportWriter:
    """The writer of format ``name``; ``KeyError`` for a name no format has, ``RegistryError``
    for an installed one that cannot be loaded."""
    writer = REPORT_FORMATS.get(name)
    if writer is None:
        raise KeyError(name)
    return writer
