"""The HTML report: one self-contained page (inline CSS and a short filtering script, no
network) to look at what the agent did in the failing runs.

Layout: the summary (pass rate per metric and per case, the gate's verdict; with a comparison,
what changed since the base run), filters (case, failing metric, result, change), then one
section per row, failing rows first: its failed scores, and when the report holds the row's
``Trajectory`` a timeline of its agent, model and tool spans on a time axis (nesting indented,
parallel calls marked, per-turn groups for conversations), each tool call with its redacted
arguments, status and duration, the span each failing score's evaluation event points at
highlighted with that score's explanation, and the final reply.

Large runs: the summary covers every row; at most ``MAX_LISTED_FAILING`` failing rows are listed,
and passing rows only when their trajectory was embedded (a sample), with counts saying so.

Every string from a trace or a report is untrusted: all text goes through ``html.escape``
(quotes included, also in attributes); the script never parses text as HTML, and the page's
Content-Security-Policy lets only that script run.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING

from tooltrail.evaluate import SUMMARY_BLOCK, CaseResult, EvaluationReport, Summarizer
from tooltrail.report.html_assets import CONTENT_SECURITY_POLICY, SCRIPT, STYLE
from tooltrail.report.stream import TextSink, write_pieces
from tooltrail.report.trajectory import TimelineSpan, Trajectory

if TYPE_CHECKING:
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
) -> Iterator[str]:
    """The page in pieces. ``trajectories`` maps a row's index in ``report.cases`` to its
    trajectory; ``comparison`` (of a base report with this one) adds the change of each row.
    ``listing``: the rows' ``list_rows``, when already walked (with the summary's walk)."""
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
    title = " ".join(t for t in (report.suite_name or "tooltrail", report.suite_version) if t)
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{_e(CONTENT_SECURITY_POLICY)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}: tooltrail report</title><style>{STYLE}</style></head><body>\n"
    )
    yield from _summary(report, title, gate, comparison)
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
) -> None:
    """Write the page to ``out`` as it is rendered."""
    write_pieces(
        iter_html(
            report, trajectories=trajectories, gate=gate, comparison=comparison, listing=listing
        ),
        out,
    )


def _summary(
    report: EvaluationReport,
    title: str,
    gate: GateResult | None,
    comparison: Comparison | None,
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
        verdict_class, gate_verdict = ("pass", "PASS") if gate.passed else ("fail", "FAIL")
        yield f'<div class="gate">Gate: <b class="{verdict_class}">{gate_verdict}</b>'
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
    yield "</table></div></div></header>\n<main>\n"


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
        f'<span style="left:{f * 100:.0f}%">{_ms(end * f)}</span>' for f in (0, 0.25, 0.5, 0.75)
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
        details.append(
            f"<b>{_e(span.tool_name)}</b>(<code>{_e(arguments)}</code>) · status "
            f"{_e(span.status)} · {_ms(span.duration_ms)}"
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
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.3g} ms" if value < 10 else f"{value:.0f} ms"
