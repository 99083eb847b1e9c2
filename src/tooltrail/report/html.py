"""The HTML report: one self-contained page (inline CSS and a short filtering script, no
network) to look at what the agent did in the failing runs.

Layout: the summary (pass rate per metric and per case, the gate's verdict; with a comparison,
what changed since the base run), filters (case, failing metric, result, change), then one
section per row, failing rows first: its failed scores, and when the report holds the row's
``Trajectory`` a timeline of its agent, model and tool spans on a time axis (nesting indented,
parallel calls marked, per-turn groups for conversations), each tool call with its redacted
arguments, status and duration, the span each failing score's evaluation event points at
highlighted with that score's explanation, and the final reply.

With labels (``tooltrail eval --labels``), the summary adds the agreement of each labelled
check: its figures (accuracy, Cohen's kappa, the true positive and negative rates, a sampled
judge's self-agreement), its confusion matrix and its disagreeing runs.

Large runs: the summary covers every row; at most ``MAX_LISTED_FAILING`` failing rows are listed,
and passing rows only when their trajectory was embedded (a sample), with counts saying so.

Every string from a trace or a report is untrusted: all text goes through ``html.escape``
(quotes included, also in attributes); the script never parses text as HTML, and the page's
Content-Security-Policy lets only that script run.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from tooltrail.report.agreement import (
    MAX_LISTED_DISAGREEMENTS,
    TITLE,
    figures,
    headline,
    kind,
    plural,
    verdict_word,
)
from tooltrail.report.html_assets import CONTENT_SECURITY_POLICY, SCRIPT, STYLE
from tooltrail.report.stream import TextSink, write_pieces
from tooltrail.report.trajectory import TimelineSpan, Trajectory
from tooltrail.report.trials import by_k, figures_of, repeated
from tooltrail.results import SUMMARY_BLOCK, CaseResult, EvaluationReport, RunVerdict, Summarizer

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement
    from tooltrail.report.compare import Comparison
    from tooltrail.suite.gate import GateResult

#: Failing rows listed (with their failed scores); the rest are counted.
MAX_LISTED_FAILING = 2000
_INDENT_PX = 14
_MAX_DEPTH = 32


def _e(value: object) -> str:
    """Text safe in an element or a quoted attribute."""
    return html.escape(str(value), quote=True)


@dataclass(slots=True)
class Listing:
    """The rows a page lists (failing rows first, up to ``MAX_LISTED_FAILING``; passing rows
    with an embedded trajectory or a change), by row index, and how many rows failed and
    passed: what the page needs of its rows, found in one walk."""

    failing: list[tuple[int, CaseResult]] = field(default_factory=list)
    others: list[tuple[int, CaseResult]] = field(default_factory=list)
    failing_total: int = 0
    passing_total: int = 0


def list_rows(
    rows: Iterable[CaseResult],
    *,
    trajectories: Mapping[int, Trajectory] | None = None,
    changes: Mapping[int, object] | None = None,
    max_listed_failing: int = MAX_LISTED_FAILING,
    summarizer: Summarizer | None = None,
) -> Listing:
    """The ``Listing`` of ``rows``, in one walk; each block of rows is also added to
    ``summarizer`` when given, so the page's summary and its rows cost one walk of rows read
    back from disk (``tooltrail eval --format html``), not two."""
    trajectories = trajectories or {}
    changes = changes or {}
    listing = Listing()
    failing, others = listing.failing, listing.others
    index = 0
    walk = iter(rows)
    while block := list(islice(walk, SUMMARY_BLOCK)):
        if summarizer is not None:
            summarizer.add(block)
        for row in block:
            if not row.passed:
                listing.failing_total += 1
                if len(failing) < max_listed_failing:
                    failing.append((index, row))
            else:
                listing.passing_total += 1
                if index in trajectories or index in changes:
                    others.append((index, row))
            index += 1
    return listing


def iter_html(
    report: EvaluationReport,
    *,
    trajectories: Mapping[int, Trajectory] | None = None,
    gate: GateResult | None = None,
    comparison: Comparison | None = None,
    max_listed_failing: int = MAX_LISTED_FAILING,
    listing: Listing | None = None,
    agreement: Agreement | None = None,
) -> Iterator[str]:
    """The page in pieces. ``trajectories`` maps a row's index in ``report.cases`` to its
    trajectory; ``comparison`` (of a base report with this one) adds the change of each row.
    ``listing``: the rows' ``list_rows``, when already walked (with the summary's walk).
    ``agreement``: the run's agreement with labels, shown after the summary's tables."""
    trajectories = trajectories or {}
    changes = comparison.changes_by_new_index() if comparison is not None else {}
    if listing is None:
        listing = list_rows(
            report.cases,
            trajectories=trajectories,
            changes=changes,
            max_listed_failing=max_listed_failing,
        )
    failing, others = listing.failing, listing.others
    title = _title(report.suite_name, report.suite_version)
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CONTENT_SECURITY_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}: tooltrail report</title><style>{STYLE}</style></head><body>\n"
    )
    yield from _summary(report, title, gate, comparison, agreement)
    yield from _filters(report, comparison is not None)
    listed_passing = len(others)
    yield (
        f'<p class="muted">Listed: {len(failing)} of {listing.failing_total} failing rows '
        f"(failing first; trajectories of {sum(1 for i, _ in failing if i in trajectories)} "
        f"embedded) and {listed_passing} of {listing.passing_total} passing rows"
        f"{' (changed, or a sample with trajectories)' if comparison else ' (a sample)'}. "
        'Shown: <b id="shown">all</b>.</p>\n'  # the filter script counts
    )
    unchanged = "still-passing" if comparison is not None else None  # compare.STILL_PASSING
    for index, row in failing + others:
        yield _row(row, trajectories.get(index), changes.get(index, unchanged))
    yield f"</main><script>{SCRIPT}</script></body></html>\n"


def render_html(report: EvaluationReport, **options: object) -> str:
    """The page as one string (see ``iter_html`` for the options)."""
    return "".join(iter_html(report, **options))  # type: ignore[arg-type]


def write_html(
    report: EvaluationReport,
    out: TextSink,
    *,
    trajectories: Mapping[int, Trajectory] | None = None,
    gate: GateResult | None = None,
    comparison: Comparison | None = None,
    listing: Listing | None = None,
    agreement: Agreement | None = None,
) -> None:
    """Write the page to ``out`` as it is rendered."""
    write_pieces(
        iter_html(
            report,
            trajectories=trajectories,
            gate=gate,
            comparison=comparison,
            listing=listing,
            agreement=agreement,
        ),
        out,
    )


def _summary(
    report: EvaluationReport,
    title: str,
    gate: GateResult | None,
    comparison: Comparison | None,
    agreement: Agreement | None,
) -> Iterator[str]:
    summary = report.summary
    outcome = "pass" if report.passed else "fail"
    yield (
        f'<header><h1>{_e(title)}</h1><p><b class="{outcome}">'
        f"{summary.passed_cases}/{summary.total_cases} runs passed</b> "
        f"({summary.pass_rate:.1%}; average score {summary.average_score:.2f})</p>\n"
    )
    if summary.judge is not None:
        yield f'<p class="judge">{_e(summary.judge.line())}</p>\n'
    if gate is None:
        yield '<p class="gate muted">No gate configured.</p>\n'
    else:
        verdict_class = "pass" if gate.passed else ("muted" if gate.inconclusive else "fail")
        yield f'<div class="gate">Gate: <b class="{verdict_class}">{gate.verdict}</b>'
        if gate.reasons:
            yield "<ul>" + "".join(f"<li>{_e(r)}</li>" for r in gate.reasons) + "</ul>"
        yield "</div>\n"
    if comparison is not None:
        from tooltrail.report.compare import iter_comparison_html

        yield from iter_comparison_html(comparison)
    yield '<div class="grid"><div><h2>Metrics</h2><table><tr><th>metric</th><th>passed</th>'
    yield "<th>rate</th></tr>"
    for name, metric in summary.metrics.items():
        yield (
            f'<tr><td>{_e(name)}</td><td class="num">{metric.passed}/{metric.total}</td>'
            f"<td>{_rate_bar(metric.pass_rate)} {metric.pass_rate:.1%}</td></tr>"
        )
    yield "</table></div>\n<div><h2>Cases</h2><table><tr><th>case</th><th>passed runs</th>"
    yield "<th>rule</th><th>verdict</th></tr>"
    for verdict in summary.runs:
        rule = "every run" if verdict.threshold is None else f"threshold {verdict.threshold:g}"
        outcome = "PASS" if verdict.passed else "FAIL"
        yield (
            f'<tr><td>{_e(verdict.case_id)}</td><td class="num">{verdict.passed_runs}/'
            f'{verdict.runs}</td><td>{rule}</td><td class="{outcome.lower()}">{outcome}'
            "</td></tr>"
        )
    yield from _trials(repeated(summary.runs))
    if agreement is None:  # (the page without labels, byte for byte as before)
        yield "</table></div></div></header>\n<main>\n"
        return
    yield "</table></div></div>\n"
    yield from _agreement(agreement)
    yield "</header>\n<main>\n"


def _trials(verdicts: list[RunVerdict]) -> Iterator[str]:
    """The figures of the cases that ask for repeated runs (``report.trials``), as a table
    closing the cases' one; nothing without such cases (the page as before, byte for byte)."""
    if not verdicts:
        return
    yield (
        "</table><h2>Repeated trials</h2><table><tr><th>case</th><th>interval</th>"
        "<th>at the threshold</th><th>flip rate</th><th>pass@k</th><th>pass^k</th></tr>"
    )
    for verdict in verdicts:
        shown = figures_of(verdict)
        cells = (
            verdict.case_id,
            shown.interval,
            shown.reading,
            shown.flip_rate,
            by_k(shown.ks, shown.pass_at),
            by_k(shown.ks, shown.pass_hat),
        )
        yield "<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in cells) + "</tr>"


def _agreement(agreement: Agreement) -> Iterator[str]:
    """The agreement with labels: a table of every check's figures, then per check its
    confusion matrix and disagreeing runs. Names, notes and explanations are escaped."""
    yield f'<section class="agreement"><h2>{TITLE}</h2><p class="muted">'
    yield f"{_e(headline(agreement))}</p>\n"
    if agreement.checks:
        yield (
            "<table><tr><th>check</th><th>kind</th><th>labelled</th><th>accuracy</th>"
            "<th>kappa</th><th>true positive rate</th><th>true negative rate</th>"
            "<th>self-agreement</th><th>no verdict</th></tr>"
        )
        for check in agreement.checks:
            shown = figures(check)
            cells = (
                check.check,
                kind(check),
                check.compared,
                shown.accuracy,
                shown.kappa,
                shown.true_positive_rate,
                shown.true_negative_rate,
                shown.self_agreement,
                check.no_verdict,
            )
            yield "<tr>" + "".join(f"<td>{_e(cell)}</td>" for cell in cells) + "</tr>"
        yield "</table>\n"
    for check in agreement.checks:
        yield (
            f'<div class="check-agreement" data-check="{_e(check.check)}">'
            f"<h3>{_e(check.check)}</h3>"
            '<table class="matrix"><tr><th></th><th>check pass</th><th>check fail</th></tr>'
            f'<tr><th>human pass</th><td class="num">{check.true_positive}</td>'
            f'<td class="num">{check.false_negative}</td></tr>'
            f'<tr><th>human fail</th><td class="num">{check.false_positive}</td>'
            f'<td class="num">{check.true_negative}</td></tr></table>'
        )
        if check.disagreements:
            count = plural(len(check.disagreements), "disagreeing run")
            yield f'<p>{count}:</p><ul class="disagreements">'
            for found in check.disagreements[:MAX_LISTED_DISAGREEMENTS]:
                trace = f" <small>trace {_e(found.trace_id)}</small>" if found.trace_id else ""
                notes = f"; notes: {_e(found.notes)}" if found.notes else ""
                said = (
                    f'<div class="why">{_e(found.explanation)}</div>' if found.explanation else ""
                )
                yield (
                    f"<li><b>{_e(found.label)}</b>{trace}: human "
                    f"{verdict_word(found.human_passed)}, check "
                    f"{verdict_word(found.check_passed)}{notes}{said}</li>"
                )
            more = len(check.disagreements) - MAX_LISTED_DISAGREEMENTS
            if more > 0:
                yield f"<li>... and {more} more (the JSON report lists them all)</li>"
            yield "</ul>"
        yield "</div>\n"
    if agreement.unmatched:
        yield f"<p>{plural(agreement.unmatched_count, 'label')} matched no score:</p><ul>"
        yield "".join(f"<li>{_e(u.describe())}</li>" for u in agreement.unmatched)
        yield "</ul>"
    yield "</section>\n"


def _rate_bar(rate: float) -> str:
    width = max(0.0, min(rate, 1.0)) * 100
    return f'<span class="rate"><i style="width:{width:.1f}%"></i></span>'


def _filters(report: EvaluationReport, compared: bool) -> Iterator[str]:
    cases = [v.case_id for v in report.summary.runs]
    metrics = list(report.summary.metrics)
    yield '<div class="filters">'
    yield _select("case", "Case", [(c, c) for c in cases])
    yield _select("metrics", "Failing metric", [(m, m) for m in metrics])
    yield _select("result", "Result", [("fail", "failing"), ("pass", "passing")])
    if compared:
        from tooltrail.report.compare import CHANGE_LABELS

        yield _select("change", "Change", list(CHANGE_LABELS.items()))
    yield (
        '<span class="legend"><i style="background:var(--agent)"></i>agent'
        '<i style="background:var(--model)"></i>model<i style="background:var(--tool)"></i>'
        'tool<i style="background:var(--other)"></i>other</span></div>\n'
    )


def _select(key: str, label: str, options: Sequence[tuple[str, str]]) -> str:
    items = "".join(f'<option value="{_e(v)}">{_e(text)}</option>' for v, text in options)
    return (
        f'<label>{_e(label)} <select data-filter="{_e(key)}"><option value="">all</option>'
        f"{items}</select></label>"
    )


def _row(row: CaseResult, trajectory: Trajectory | None, change: str | None) -> str:
    failures = row.failures
    metrics = "|".join(dict.fromkeys(score.metric for score in failures))
    state = "fail" if not row.passed else "pass"
    change_attr = f' data-change="{_e(change)}"' if change else ""
    parts = [
        f'<section class="row{" failed" if not row.passed else ""}" data-case="{_e(row.case_id)}"'
        f' data-metrics="{_e(metrics)}" data-result="{state}"{change_attr}>'
        f'<h3><span class="{state}">{state.upper()}</span> {_e(row.label)} '
        f"<small>case {_e(row.case_id)} · trace {_e(row.trace_id or '-')}</small>"
    ]
    if change:
        parts.append(f'<span class="badge">{_e(change.replace("-", " "))}</span>')
    parts.append("</h3>")
    if failures:
        parts.append('<ul class="failures">')
        for score in failures:
            parts.append(f"<li><b>{_e(score.name)}</b>: {_e(score.explanation)}</li>")
        parts.append("</ul>")
    if trajectory is None:
        parts.append('<p class="muted">Trajectory not embedded in this report.</p>')
    else:
        parts.append(_timeline(trajectory, {s.name: s.explanation for s in failures}))
    parts.append("</section>\n")
    return "".join(parts)


def _timeline(trajectory: Trajectory, explanations: Mapping[str, str]) -> str:
    ordered = _tree_order(trajectory.spans)
    end = max((s.start_ms + s.duration_ms for s, _ in ordered), default=0.0) or 1.0
    parallel = _parallel_calls(trajectory.spans)
    groups: dict[int | None, list[str]] = {}
    for span, depth in ordered:
        turn = span.turn if trajectory.turns > 1 else None
        groups.setdefault(turn, []).append(
            _span_row(span, depth, end, trajectory.marks.get(span.span_id, ()), explanations,
                      id(span) in parallel)
        )  # fmt: skip
    ticks = "".join(
        f'<span style="left:{at / end * 100:.0f}%">{_ms(at)}</span>' for at in _ticks(end)
    )
    parts = ['<div class="traj">', f'<div class="axis">{ticks}</div>']
    for turn in sorted(groups, key=lambda t: -1 if t is None else t):
        if trajectory.turns > 1:
            parts.append(f"<h4>{'Conversation' if turn is None else f'Turn {turn}'}</h4>")
        parts.extend(groups[turn])
    if trajectory.spans_dropped:
        parts.append(
            f'<p class="muted">{trajectory.spans_dropped} more spans of this trace are not '
            "shown (timeline limit).</p>"
        )
    placed = {s.span_id for s in trajectory.spans}
    unplaced = [n for sid, names in trajectory.marks.items() if sid not in placed for n in names]
    if unplaced:
        parts.append(
            '<p class="muted">Also judged on spans not in this timeline: '
            f"{_e(', '.join(unplaced))}.</p>"
        )
    reply = "(no reply in the trace)" if trajectory.reply is None else trajectory.reply
    parts.append(f'<div class="reply"><b>Final reply</b><pre>{_e(reply)}</pre></div></div>')
    return "".join(parts)


def _span_row(
    span: TimelineSpan,
    depth: int,
    end: float,
    marks: Sequence[str],
    explanations: Mapping[str, str],
    parallel: bool,
) -> str:
    left = min(max(span.start_ms / end, 0.0), 1.0) * 100
    width = min(max(span.duration_ms / end * 100, 0.3), 100 - left)
    offending = " offending" if marks else ""
    name = _e(span.name or span.tool_name or span.span_id)
    badge = ' <span class="badge">parallel</span>' if parallel else ""
    row = (
        f'<div class="sp k-{_e(span.kind)} st-{_e(span.status)}{offending}" '
        f'data-span-id="{_e(span.span_id)}" title="{name}">'
        f'<div class="name" style="padding-left:{min(depth, _MAX_DEPTH) * _INDENT_PX}px">'
        f'<span class="kind">{_e(span.kind)}</span> {name}{badge}</div>'
        f'<div class="lane"><i style="left:{left:.2f}%;width:{width:.2f}%"></i></div>'
        f'<div class="dur">{_ms(span.duration_ms)}</div></div>'
    )
    if span.tool_name is None and not marks:
        return row
    details = [f'<div class="call{offending}" data-span-id="{_e(span.span_id)}"'
               f' style="margin-left:{min(depth, _MAX_DEPTH) * _INDENT_PX}px">']  # fmt: skip
    if span.tool_name is not None:
        arguments = "(arguments not captured)" if span.arguments is None else span.arguments
        by = f" · by agent <i>{_e(span.agent)}</i>" if span.agent else ""
        details.append(
            f"<b>{_e(span.tool_name)}</b>(<code>{_e(arguments)}</code>){by} · status "
            f"{_status_word(span.status)} · {_ms(span.duration_ms)}"
        )
        if span.error:
            details.append(f'<div class="why">error: {_e(span.error)}</div>')
    for name_of_score in marks:
        explanation = explanations.get(name_of_score, "")
        details.append(f'<div class="why"><b>{_e(name_of_score)}</b>: {_e(explanation)}</div>')
    details.append("</div>")
    return row + "".join(details)


def _tree_order(spans: Sequence[TimelineSpan]) -> list[tuple[TimelineSpan, int]]:
    """Spans depth first (children by start time) with their depth; a span whose parent is not
    in the list is a root. Cycles and over-deep chains cannot loop: each span is placed once."""
    owner: dict[str, TimelineSpan] = {}  # a model-side call shares its carrier's span id
    for span in spans:
        if span.span_id:
            owner.setdefault(span.span_id, span)
    children: dict[str, list[TimelineSpan]] = {}
    roots: list[TimelineSpan] = []
    for span in spans:
        parent = span.parent_span_id
        if parent in owner and owner[parent] is not span:
            children.setdefault(parent, []).append(span)
        else:
            roots.append(span)
    out: list[tuple[TimelineSpan, int]] = []
    placed: set[int] = set()
    stack = [(span, 0) for span in sorted(roots, key=_start, reverse=True)]
    while stack:
        span, depth = stack.pop()
        if id(span) in placed:
            continue
        placed.add(id(span))
        out.append((span, depth))
        kids = children.get(span.span_id, ())
        stack.extend((kid, depth + 1) for kid in sorted(kids, key=_start, reverse=True))
    out.extend((span, 0) for span in spans if id(span) not in placed)  # cycles
    return out


def _start(span: TimelineSpan) -> float:
    return span.start_ms


def _parallel_calls(spans: Sequence[TimelineSpan]) -> set[int]:
    """Ids (``id()``) of tool calls that overlap in time with a sibling call."""
    siblings: dict[str, list[TimelineSpan]] = {}
    for span in spans:
        if span.tool_name is not None and span.duration_ms > 0:
            siblings.setdefault(span.parent_span_id, []).append(span)
    found: set[int] = set()
    for calls in siblings.values():
        calls.sort(key=_start)
        latest: TimelineSpan | None = None
        for call in calls:
            if latest is not None and call.start_ms < latest.start_ms + latest.duration_ms:
                found.update((id(call), id(latest)))
            if latest is None or call.start_ms + call.duration_ms > (
                latest.start_ms + latest.duration_ms
            ):
                latest = call
    return found


def _ms(value: float) -> str:
    """A duration as a person reads it: ``36.7 µs``, ``4.2 ms``, ``1.52 s`` (three figures at
    most, in the unit that needs no leading zeros)."""
    if value >= 1000:
        return f"{value / 1000:.3g} s"
    if value >= 1:
        return f"{value:.3g} ms"
    if value <= 0:
        return "0"
    return f"{value * 1000:.3g} µs"


def _ticks(end: float) -> list[float]:
    """Round times for the timeline's axis (0, 20 µs, 40 µs, ...): the first step of 1, 2,
    2.5 or 5 times a power of ten that gives at most four ticks before ``end``."""
    if end <= 0 or not math.isfinite(end):
        return [0.0]
    magnitude = 10 ** math.floor(math.log10(end / 4))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if end / (m * magnitude) <= 4)
    return [n * step for n in range(4) if n * step < end]


def _title(name: str, version: str) -> str:
    """``booking-judged (version 1)``: the suite's name and version, as words."""
    name = name or "tooltrail"
    return f"{name} (version {version})" if version else name


def _status_word(status: str) -> str:
    """A span's status as a person reads it: ``error``, or ``ok`` (OpenTelemetry's unset
    status: the span recorded no error)."""
    return "error" if status == "error" else "ok"
