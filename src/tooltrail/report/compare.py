"""Two runs side by side: which rows got worse, which got better, per-metric pass-rate deltas.

Rows are matched by case id and label; when several rows of one report share both (a policy
applied to traces labelled alike) they are told apart by trace id when the other report has
the same trace (the same dump evaluated again), else by their order. A row only in the new
report that fails counts as newly failing; a row only in the base is listed as removed.

The run regressed when more than ``tolerance`` (a fraction) of the new rows are newly failing,
or a metric present in both runs lost more than ``tolerance`` of pass rate: with the default 0,
any newly failing row or any drop. Rates are compared exactly (fractions, no float drift).
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from tooltrail.report.markdown import escape as md_escape
from tooltrail.results import CaseResult, EvaluationReport

NEWLY_FAILING = "newly-failing"
NEWLY_PASSING = "newly-passing"
STILL_FAILING = "still-failing"
STILL_PASSING = "still-passing"
ADDED = "added"
REMOVED = "removed"

#: The change filter of the HTML report: value -> label.
CHANGE_LABELS = {
    NEWLY_FAILING: "newly failing",
    NEWLY_PASSING: "newly passing",
    STILL_FAILING: "still failing",
    STILL_PASSING: "unchanged (passing)",
    ADDED: "added (passing)",
}
_LISTED = (NEWLY_FAILING, NEWLY_PASSING, STILL_FAILING, REMOVED)

COMPARISON_SCHEMA_VERSION = 1


@dataclass(slots=True)
class RowChange:
    """One matched (or unmatched) row and how its verdict moved."""

    change: str
    case_id: str
    label: str
    base: CaseResult | None
    new: CaseResult | None
    #: Index of the row in the new report's rows (``None`` for a removed row).
    new_index: int | None

    def to_dict(self) -> dict[str, Any]:
        row = self.new if self.new is not None else self.base
        assert row is not None
        return {
            "change": self.change,
            "case_id": self.case_id,
            "label": self.label,
            "base_trace_id": self.base.trace_id if self.base is not None else None,
            "new_trace_id": self.new.trace_id if self.new is not None else None,
            "failures": [
                {"name": s.name, "metric": s.metric, "explanation": s.explanation}
                for s in row.failures
            ],
        }


@dataclass(slots=True)
class MetricDelta:
    """A metric's passed/total in both runs (0/0 when a run lacks it)."""

    metric: str
    base_passed: int
    base_total: int
    new_passed: int
    new_total: int

    @property
    def base_rate(self) -> Fraction | None:
        return Fraction(self.base_passed, self.base_total) if self.base_total else None

    @property
    def new_rate(self) -> Fraction | None:
        return Fraction(self.new_passed, self.new_total) if self.new_total else None

    @property
    def delta(self) -> Fraction | None:
        """New rate minus base rate; ``None`` unless the metric is in both runs."""
        if self.base_rate is None or self.new_rate is None:
            return None
        return self.new_rate - self.base_rate

    def to_dict(self) -> dict[str, Any]:
        delta = self.delta
        return {
            "metric": self.metric,
            "base": {"passed": self.base_passed, "total": self.base_total},
            "new": {"passed": self.new_passed, "total": self.new_total},
            "delta": None if delta is None else float(delta),
        }


@dataclass(slots=True)
class Comparison:
    base_name: str
    new_name: str
    tolerance: float
    rows: list[RowChange]
    metrics: list[MetricDelta]
    #: Rows per change kind (every row, also the unlisted still-passing ones).
    counts: dict[str, int] = field(default_factory=dict)
    new_total: int = 0
    #: What makes the two reports less comparable than they look (``coverage_warnings``).
    warnings: list[str] = field(default_factory=list)

    def listed(self, change: str) -> list[RowChange]:
        return [r for r in self.rows if r.change == change]

    def regressions(self) -> list[str]:
        """One sentence per regression beyond the tolerance; empty when the run held."""
        reasons: list[str] = []
        tolerance = Fraction(repr(float(self.tolerance)))
        newly = self.counts.get(NEWLY_FAILING, 0)
        if newly and Fraction(newly, max(self.new_total, 1)) > tolerance:
            reasons.append(f"{newly} newly failing row{'s' if newly != 1 else ''}")
        for metric in self.metrics:
            delta = metric.delta
            if delta is not None and -delta > tolerance:
                reasons.append(
                    f"metric {metric.metric!r} pass rate fell from {metric.base_passed}/"
                    f"{metric.base_total} to {metric.new_passed}/{metric.new_total} "
                    f"({float(delta) * 100:+.1f} points)"
                )
        return reasons

    @property
    def regressed(self) -> bool:
        return bool(self.regressions())

    def changes_by_new_index(self) -> dict[int, str]:
        """New row index -> change kind, for the HTML report's change filter."""
        return {r.new_index: r.change for r in self.rows if r.new_index is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": COMPARISON_SCHEMA_VERSION,
            "base": self.base_name,
            "new": self.new_name,
            "tolerance": self.tolerance,
            "regressed": self.regressed,
            "regressions": self.regressions(),
            "counts": {kind: self.counts.get(kind, 0) for kind in (*CHANGE_LABELS, REMOVED)},
            "metrics": [m.to_dict() for m in self.metrics],
            "rows": {kind: [r.to_dict() for r in self.listed(kind)] for kind in _LISTED},
            "warnings": list(self.warnings),
        }


def compare_reports(
    base: EvaluationReport,
    new: EvaluationReport,
    *,
    tolerance: float = 0.0,
    base_name: str = "base",
    new_name: str = "new",
) -> Comparison:
    """How ``new`` differs from ``base`` (see the module docstring for matching and rules)."""
    if not 0.0 <= tolerance <= 1.0:
        raise ValueError(f"tolerance must be between 0 and 1, not {tolerance!r}")
    base_rows = list(base.cases)
    new_rows = list(new.cases)
    base_keys = _keys(base_rows, new_rows)
    new_keys = _keys(new_rows, base_rows)
    base_by_key = dict(zip(base_keys, base_rows, strict=True))
    changes: list[RowChange] = []
    counts: dict[str, int] = {}
    matched: set[tuple[str, str, str]] = set()
    for index, (key, row) in enumerate(zip(new_keys, new_rows, strict=True)):
        before = base_by_key.get(key)
        if before is None:
            kind = ADDED if row.passed else NEWLY_FAILING
        else:
            matched.add(key)
            kind = _change(before.passed, row.passed)
        counts[kind] = counts.get(kind, 0) + 1
        if kind != STILL_PASSING:
            changes.append(RowChange(kind, row.case_id, row.label, before, row, index))
    for key, row in zip(base_keys, base_rows, strict=True):
        if key not in matched:
            counts[REMOVED] = counts.get(REMOVED, 0) + 1
            changes.append(RowChange(REMOVED, row.case_id, row.label, row, None, None))
    names = list(dict.fromkeys([*base.summary.metrics, *new.summary.metrics]))
    metrics = []
    for name in sorted(names):
        before_m = base.summary.metrics.get(name)
        after_m = new.summary.metrics.get(name)
        metrics.append(
            MetricDelta(
                metric=name,
                base_passed=before_m.passed if before_m else 0,
                base_total=before_m.total if before_m else 0,
                new_passed=after_m.passed if after_m else 0,
                new_total=after_m.total if after_m else 0,
            )
        )
    return Comparison(
        base_name=base_name,
        new_name=new_name,
        tolerance=tolerance,
        rows=changes,
        metrics=metrics,
        counts=counts,
        new_total=len(new_rows),
        warnings=coverage_warnings(
            base, new, base_rows, new_rows, base_name=base_name, new_name=new_name
        ),
    )


#: Trace ids a warning quotes at most, of each side.
_QUOTED_TRACES = 3


def coverage_warnings(
    base: EvaluationReport,
    new: EvaluationReport,
    base_rows: Sequence[CaseResult],
    new_rows: Sequence[CaseResult],
    *,
    base_name: str = "base",
    new_name: str = "new",
) -> list[str]:
    """Why the comparison may not say what it seems to: the reports are of different suites
    (name or version), or cover different traces (rows are then matched by case id and label
    alone, so a "newly failing" row may be another run)."""
    found: list[str] = []
    if (base.suite_name, base.suite_version) != (new.suite_name, new.suite_version):
        found.append(
            f"the reports are of different suites: {base_name} of {base.suite_name!r} version "
            f"{base.suite_version!r}, {new_name} of {new.suite_name!r} version "
            f"{new.suite_version!r}"
        )
    before = {row.trace_id for row in base_rows if row.trace_id}
    after = {row.trace_id for row in new_rows if row.trace_id}
    if before != after and before and after:
        only_base, only_new = sorted(before - after), sorted(after - before)
        common = len(before & after)
        found.append(
            f"the reports cover different traces: {common} in both, {len(only_base)} only in "
            f"{base_name}{_quoted(only_base)}, {len(only_new)} only in {new_name}"
            f"{_quoted(only_new)}; rows are matched by case and label"
            + ("" if common else " (no trace in common: a row may be another run)")
        )
    return found


def _quoted(ids: Sequence[str]) -> str:
    if not ids:
        return ""
    shown = ", ".join(ids[:_QUOTED_TRACES])
    return f" ({shown}{', ...' if len(ids) > _QUOTED_TRACES else ''})"


def _change(passed_before: bool, passed_now: bool) -> str:
    if passed_before:
        return STILL_PASSING if passed_now else NEWLY_FAILING
    return NEWLY_PASSING if passed_now else STILL_FAILING


def _keys(rows: Sequence[CaseResult], other: Sequence[CaseResult]) -> list[tuple[str, str, str]]:
    """A matching key per row: (case id, label, ""), or with a trace id (present in the other
    report) or an occurrence number when several rows share case id and label."""
    shared: dict[tuple[str, str], int] = {}
    for row in rows:
        shared[(row.case_id, row.label)] = shared.get((row.case_id, row.label), 0) + 1
    other_traces = {(r.case_id, r.label, r.trace_id) for r in other if r.trace_id}
    seen: dict[tuple[str, str], int] = {}
    keys = []
    for row in rows:
        pair = (row.case_id, row.label)
        if shared[pair] == 1:
            keys.append((*pair, ""))
        elif row.trace_id and (*pair, row.trace_id) in other_traces:
            keys.append((*pair, f"trace {row.trace_id}"))
        else:
            seen[pair] = seen.get(pair, 0) + 1
            keys.append((*pair, f"#{seen[pair]}"))
    return keys


# --- renderers ------------------------------------------------------------------------------


def _row_name(change: RowChange) -> str:
    if change.label == change.case_id:
        return change.label
    return f"{change.label} [{change.case_id}]"


def _rate(passed: int, total: int) -> str:
    return f"{passed}/{total} {passed / total:.1%}" if total else "-"


def _delta(metric: MetricDelta) -> str:
    delta = metric.delta
    return "-" if delta is None else f"{float(delta) * 100:+.1f}"


def _verdict(comparison: Comparison) -> str:
    reasons = comparison.regressions()
    if reasons:
        return "REGRESSED: " + "; ".join(reasons)
    return f"no regression (tolerance {comparison.tolerance:g})"


def iter_comparison_text(comparison: Comparison) -> Iterator[str]:
    """The comparison as text lines: changed rows with the failures now, metric deltas, verdict."""
    yield f"base: {comparison.base_name}\nnew:  {comparison.new_name}\n"
    for warning in comparison.warnings:
        yield f"warning: {warning}\n"
    for kind in _LISTED:
        rows = comparison.listed(kind)
        if not rows:
            continue
        yield f"\n{kind.replace('-', ' ')} ({len(rows)})\n"
        for change in rows:
            yield f"    {_row_name(change)}\n"
            row = change.new if change.new is not None else change.base
            if kind != REMOVED and row is not None:
                for score in row.failures:
                    explanation = score.explanation.replace("\n", "\n            ")
                    yield f"        {score.name}: {explanation}\n"
    width = max([24] + [len(m.metric) for m in comparison.metrics])
    yield f"\n{'metric':<{width}} {'base':>14} {'new':>14} {'delta':>7}\n"
    for m in comparison.metrics:
        base = _rate(m.base_passed, m.base_total)
        new = _rate(m.new_passed, m.new_total)
        yield f"{m.metric:<{width}} {base:>14} {new:>14} {_delta(m):>7}\n"
    yield f"\n{_verdict(comparison)}\n"


def render_comparison_text(comparison: Comparison) -> str:
    return "".join(iter_comparison_text(comparison))


def iter_comparison_markdown(comparison: Comparison) -> Iterator[str]:
    """The comparison as GitHub-flavoured Markdown (for a pull request comment)."""
    yield f"## tooltrail: {md_escape(comparison.new_name)} vs {md_escape(comparison.base_name)}\n"
    yield f"\n**{md_escape(_verdict(comparison))}**\n"
    for warning in comparison.warnings:
        yield f"\n> **Warning:** {md_escape(warning)}\n"
    counts = ", ".join(
        f"{comparison.counts.get(kind, 0)} {kind.replace('-', ' ')}" for kind in _LISTED
    )
    yield f"\n{counts}.\n"
    listed = [c for kind in _LISTED for c in comparison.listed(kind)]
    if listed:
        yield "\n| Change | Row | Failed scores (now) |\n|---|---|---|\n"
        for change in listed:
            row = change.new if change.change != REMOVED else None
            failed = (
                ""
                if row is None
                else "<br>".join(
                    f"{md_escape(s.name)}: {md_escape(s.explanation)}" for s in row.failures
                )
            )
            kind = change.change.replace("-", " ")
            yield f"| {kind} | {md_escape(_row_name(change))} | {failed} |\n"
    yield "\n| Metric | Base | New | Delta (points) |\n|---|---:|---:|---:|\n"
    for m in comparison.metrics:
        yield (
            f"| {md_escape(m.metric)} | {_rate(m.base_passed, m.base_total)} | "
            f"{_rate(m.new_passed, m.new_total)} | {_delta(m)} |\n"
        )


def render_comparison_markdown(comparison: Comparison) -> str:
    return "".join(iter_comparison_markdown(comparison))


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def iter_comparison_html(comparison: Comparison) -> Iterator[str]:
    """The comparison's section of the HTML report (the rows carry their change)."""
    yield (
        f'<div class="gate"><b class="{"fail" if comparison.regressed else "pass"}">'
        f"{_e(_verdict(comparison))}</b><br><small>base {_e(comparison.base_name)} · new "
        f"{_e(comparison.new_name)}</small><br>"
    )
    yield ", ".join(
        f"{comparison.counts.get(kind, 0)} {_e(kind.replace('-', ' '))}" for kind in _LISTED
    )
    removed = comparison.listed(REMOVED)
    if removed:
        names = ", ".join(_e(_row_name(c)) for c in removed[:50])
        yield f"<br>Removed rows: {names}{' ...' if len(removed) > 50 else ''}"
    yield "</div>\n<h2>Metric changes</h2><table><tr><th>metric</th><th>base</th><th>new</th>"
    yield "<th>delta (points)</th></tr>"
    for m in comparison.metrics:
        delta = m.delta
        cls = "fail" if delta is not None and delta < 0 else ""
        yield (
            f'<tr><td>{_e(m.metric)}</td><td class="num">{_rate(m.base_passed, m.base_total)}'
            f'</td><td class="num">{_rate(m.new_passed, m.new_total)}</td>'
            f'<td class="num {cls}">{_delta(m)}</td></tr>'
        )
    yield "</table>\n"
