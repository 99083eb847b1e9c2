"""What a report shows of a trace beside its scores: the trajectory on a time axis.

A ``Trajectory`` holds a trace's agent, model and tool spans (times relative to the first
span, parents, status), each tool call's arguments **redacted** with the live path's rules
(``TOOLTRAIL_REDACT_*``, ``tooltrail.redact``), the final reply, span names and call errors
redacted as free text (``Redaction.redact_text``), the turn of each span,
and ``marks``: which failing score lands on which span. Marks come from
``tooltrail.scores.evaluation_events``, so the HTML report highlights the same span the
``gen_ai.evaluation.result`` event points at.

The batch pass keeps verdicts, not traces, so ``collect_trajectories`` reads the input again
(as ``--annotate`` does) for the rows ``embedded_rows`` picks: every failing row up to
``MAX_FAILING_TRAJECTORIES`` and a sample of passing ones. Only those traces' spans are kept,
at most ``MAX_TIMELINE_SPANS`` each (the rest are counted in ``spans_dropped``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.model import EvalTrace
from tooltrail.otlp import Limits
from tooltrail.otlp.decode.span import STATUS_ERROR, STATUS_OK
from tooltrail.redact import Redaction, clean_attribute, tool_args_text
from tooltrail.results import CaseResult
from tooltrail.scores import LABEL_FAIL, SCORE_LABEL, EventOptions, evaluation_events
from tooltrail.settings import redaction_from_env

#: Failing rows whose trajectory a report embeds; the rest are listed with their scores only.
MAX_FAILING_TRAJECTORIES = 500
#: Passing rows whose trajectory a report embeds, spread evenly over the run.
PASSING_SAMPLE = 20
#: Spans of one trajectory kept for the timeline.
MAX_TIMELINE_SPANS = 1000
#: Characters of the final reply kept.
MAX_REPLY_CHARS = 16_384

KINDS = ("agent", "model", "tool", "other")


@dataclass(slots=True)
class TimelineSpan:
    """One span of the timeline. ``arguments`` is the redacted JSON text of a tool call's
    arguments, ``None`` when the trace did not capture them."""

    span_id: str
    parent_span_id: str
    name: str
    kind: str
    start_ms: float
    duration_ms: float
    status: str = "unset"
    #: 1-based turn; ``None`` when the span covers several turns (a conversation's root).
    turn: int | None = None
    tool_name: str | None = None
    arguments: str | None = None
    error: str | None = None
    #: The agent that made the call (``ToolCall.agent``, redacted as free text), when
    #: recorded. The HTML report shows it; ``to_dict`` writes it only when set, so that a
    #: saved JSON report renders the same page (``tooltrail report``).
    agent: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
            "name": self.name,
            "kind": self.kind,
            "start_ms": self.start_ms,
            "duration_ms": self.duration_ms,
            "status": self.status,
            "turn": self.turn,
            "tool_name": self.tool_name,
            "arguments": self.arguments,
            "error": self.error,
        }
        if self.agent is not None:  # (a call's: a span without one is written as before)
            data["agent"] = self.agent
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimelineSpan:
        turn = data.get("turn")
        kind = str(data.get("kind", "other"))
        return cls(
            span_id=str(data.get("span_id") or ""),
            parent_span_id=str(data.get("parent_span_id") or ""),
            name=str(data.get("name") or ""),
            kind=kind if kind in KINDS else "other",
            start_ms=_number(data.get("start_ms")),
            duration_ms=_number(data.get("duration_ms")),
            status=str(data.get("status") or "unset"),
            turn=turn if isinstance(turn, int) and not isinstance(turn, bool) else None,
            tool_name=_text_or_none(data.get("tool_name")),
            arguments=_text_or_none(data.get("arguments")),
            error=_text_or_none(data.get("error")),
            agent=_text_or_none(data.get("agent")),
        )


@dataclass(slots=True)
class Trajectory:
    """A row's trace as the report shows it (see the module docstring)."""

    trace_ids: list[str]
    spans: list[TimelineSpan]
    reply: str | None = None
    turns: int = 1
    #: Span id -> names of the failing scores whose evaluation event points at that span.
    marks: dict[str, list[str]] = field(default_factory=dict)
    spans_dropped: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace_ids": list(self.trace_ids),
            "turns": self.turns,
            "reply": self.reply,
            "marks": {span_id: list(names) for span_id, names in self.marks.items()},
            "spans_dropped": self.spans_dropped,
            "spans": [span.to_dict() for span in self.spans],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Trajectory:
        """Read back what ``to_dict`` wrote; raises ``TypeError``/``ValueError`` when malformed."""
        if not isinstance(data, Mapping):
            raise TypeError("a trajectory must be an object")
        marks = data.get("marks") or {}
        if not isinstance(marks, Mapping):
            raise TypeError("trajectory marks must be an object")
        turns = data.get("turns")
        return cls(
            trace_ids=[str(t) for t in data.get("trace_ids") or ()],
            spans=[TimelineSpan.from_dict(s) for s in data.get("spans") or ()],
            reply=_text_or_none(data.get("reply")),
            turns=turns if isinstance(turns, int) and not isinstance(turns, bool) else 1,
            marks={str(k): [str(n) for n in v] for k, v in marks.items()},
            spans_dropped=int(data.get("spans_dropped") or 0),
        )


def embedded_rows(
    rows: Iterable[CaseResult],
    *,
    max_failing: int = MAX_FAILING_TRAJECTORIES,
    passing_sample: int = PASSING_SAMPLE,
) -> list[int]:
    """Indexes of the rows whose trajectory a report embeds: the first ``max_failing`` failing
    rows, then ``passing_sample`` passing rows spread evenly over the run, in report order."""
    failing: list[int] = []
    passing: list[int] = []
    for index, row in enumerate(rows):
        if not row.passed:
            if len(failing) < max_failing:
                failing.append(index)
        else:
            passing.append(index)
    if len(passing) > passing_sample:
        step = len(passing) / passing_sample
        passing = [passing[int(n * step)] for n in range(passing_sample)]
    return sorted(failing + passing)


def picked_rows(rows: Sequence[CaseResult], indexes: Iterable[int]) -> dict[int, CaseResult]:
    """Row index -> row, for ``indexes``, in one walk of ``rows`` that stops at the last
    one wanted: indexing rows read back from disk (``SpilledRows``) walks from the first row
    each time, hundreds of walks for the rows a report embeds. In the order of ``indexes``;
    raises ``IndexError`` for an index past the rows, as indexing does."""
    total = len(rows)
    order = [index + total if index < 0 else index for index in indexes]
    if not order:
        return {}
    if min(order) < 0 or max(order) >= total:
        raise IndexError("row index out of range")
    wanted = set(order)
    found: dict[int, CaseResult] = {}
    for index, row in enumerate(rows):
        if index in wanted:
            found[index] = row
            if len(found) == len(wanted):
                break
    return {index: found[index] for index in order}


def collect_trajectories(
    paths: Sequence[str | os.PathLike[str]],
    rows: Sequence[CaseResult],
    *,
    group: str = "trace",
    limits: Limits | None = None,
    redaction: Redaction | None = None,
    indexes: Iterable[int] | None = None,
) -> dict[int, Trajectory]:
    """Row index -> trajectory, for ``indexes`` (default ``embedded_rows(rows)``), read again
    from ``paths``. Input problems were reported by the run; this read does not repeat them."""
    from tooltrail.convert import read_traces
    from tooltrail.otlp import read_spans

    wanted_rows = picked_rows(rows, embedded_rows(rows) if indexes is None else indexes)
    wanted = {row.trace_id for row in wanted_rows.values() if row.trace_id}
    if not wanted:
        return {}
    rules = redaction if redaction is not None else redaction_from_env()
    read_kwargs: dict[str, Any] = {"diagnostics": []}
    if limits is not None:
        read_kwargs["limits"] = limits
    traces = {
        trace.trace_id: trace
        for trace in read_traces(list(paths), group=group, **read_kwargs)  # type: ignore[arg-type]
        if trace.trace_id in wanted
    }
    span_trace = {
        trace_id: key
        for key, trace in traces.items()
        for trace_id in (trace.metadata.get("trace_ids") or [key])
    }
    raw: dict[str, list[_RawSpan]] = {key: [] for key in traces}
    dropped: dict[str, int] = dict.fromkeys(traces, 0)
    for span in read_spans(list(paths), **read_kwargs):
        key = span_trace.get(span.trace_id)
        if key is None:
            continue
        if len(raw[key]) >= MAX_TIMELINE_SPANS:
            dropped[key] += 1
            continue
        raw[key].append(_RawSpan.of(span))
    out: dict[int, Trajectory] = {}
    built: dict[str, Trajectory] = {}
    for index, row in wanted_rows.items():
        trace = traces.get(row.trace_id or "")
        if trace is None:
            continue
        base = built.get(trace.trace_id)
        if base is None:
            base = built[trace.trace_id] = build_trajectory(
                trace, raw[trace.trace_id], rules, spans_dropped=dropped[trace.trace_id]
            )
        out[index] = Trajectory(
            trace_ids=base.trace_ids,
            spans=base.spans,
            reply=base.reply,
            turns=base.turns,
            marks=failure_marks(trace, row),
            spans_dropped=base.spans_dropped,
        )
    return out


def failure_marks(trace: EvalTrace, row: CaseResult) -> dict[str, list[str]]:
    """Span id -> names of ``row``'s failing scores whose evaluation event lands on that span
    (the rule of ``tooltrail.scores``: the calls a score names, else the agent or root span)."""
    marks: dict[str, list[str]] = {}
    options = EventOptions(case_verdicts=False)
    for event in evaluation_events(trace, [row], options=options):
        if event.attributes.get(SCORE_LABEL) != LABEL_FAIL or not event.span_id:
            continue
        names = marks.setdefault(event.span_id, [])
        if event.evaluation_name not in names:
            names.append(event.evaluation_name)
    return marks


@dataclass(slots=True)
class _RawSpan:
    """The few facts of a read span the timeline needs (its attributes are not kept)."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    status: str
    kind: str

    @classmethod
    def of(cls, span: Any) -> _RawSpan:
        from tooltrail.dialects import is_agent_span, is_model_span

        if is_agent_span(span):
            kind = "agent"
        elif is_model_span(span):
            kind = "model"
        else:
            kind = "other"
        code = span.status_code
        return cls(
            trace_id=span.trace_id,
            span_id=span.span_id,
            parent_span_id=span.parent_span_id,
            name=span.name,
            start_ns=span.start_ns,
            end_ns=span.end_ns,
            status="error" if code == STATUS_ERROR else "ok" if code == STATUS_OK else "unset",
            kind=kind,
        )


def build_trajectory(
    trace: EvalTrace,
    raw_spans: Sequence[_RawSpan],
    redaction: Redaction,
    *,
    spans_dropped: int = 0,
) -> Trajectory:
    """The trajectory of ``trace`` (its calls, reply, turns) over its read spans (times,
    parents, kinds). Calls without a span of their own (model-side calls) get an entry of
    their own under the span that carried them. No marks: they belong to a row."""
    meta = trace.metadata
    trace_ids = [str(t) for t in meta.get("trace_ids") or [trace.trace_id]]
    agent_ids = {str(s) for s in meta.get("agent_span_ids") or ()}
    per_turn_traces = len(trace_ids) > 1 and trace.turn_count == len(trace_ids)
    calls_by_span = {call.span_id: call for call in trace.tool_calls if call.span_id}
    starts = [s.start_ns for s in raw_spans if s.start_ns] + [
        c.start_ns for c in trace.tool_calls if c.start_ns
    ]
    origin = min(starts) if starts else 0

    def ms(ns: int) -> float:
        return round((ns - origin) / 1e6, 3) if ns and origin else 0.0

    spans: list[TimelineSpan] = []
    seen: set[str] = set()
    for raw in sorted(raw_spans, key=lambda s: (s.start_ns, s.span_id)):
        call = calls_by_span.get(raw.span_id)
        kind = "tool" if call is not None else ("agent" if raw.span_id in agent_ids else raw.kind)
        turn = trace_ids.index(raw.trace_id) + 1 if per_turn_traces else None
        spans.append(
            TimelineSpan(
                span_id=raw.span_id,
                parent_span_id=raw.parent_span_id,
                name=redaction.redact_text(raw.name),
                kind=kind,
                start_ms=ms(raw.start_ns),
                duration_ms=_duration(raw.start_ns, raw.end_ns),
                status=raw.status,
                turn=turn,
            )
        )
        seen.add(raw.span_id)
    by_id = {span.span_id: span for span in spans}
    for call in trace.tool_calls:
        arguments = None if call.args is None else tool_args_text(redaction, call.args)[0]
        error = _free_text(redaction, call.error, redaction.max_value_chars)
        agent = _free_text(redaction, call.agent, redaction.max_value_chars)
        span = by_id.get(call.span_id or "")
        if span is not None and span.kind == "tool" and span.tool_name is None:
            span.tool_name, span.arguments, span.error = call.name, arguments, error
            span.agent = agent
            span.status = call.status if call.status != "unset" else span.status
            span.turn = call.turn if not per_turn_traces else span.turn
            continue
        spans.append(  # a call with no span of its own: placed under the span that carried it
            TimelineSpan(
                span_id=call.span_id or "",
                parent_span_id=call.span_id if call.span_id in seen else "",
                name=f"tool call {call.name}",
                kind="tool",
                start_ms=ms(call.start_ns),
                duration_ms=_duration(call.start_ns, call.end_ns),
                status=call.status,
                turn=call.turn,
                tool_name=call.name,
                arguments=arguments,
                error=error,
                agent=agent,
            )
        )
    if not per_turn_traces:
        _turns_from_calls(spans)
    return Trajectory(
        trace_ids=trace_ids,
        spans=spans,
        reply=_free_text(redaction, trace.output, MAX_REPLY_CHARS),
        turns=trace.turn_count or max((s.turn or 1 for s in spans), default=1),
        spans_dropped=spans_dropped,
    )


def _free_text(redaction: Redaction, text: str | None, limit: int) -> str | None:
    """A reply, error or name as a report may show it: redacted as free text, capped."""
    return redaction.cap(redaction.redact_text(text), limit) if text else text


def redact_trajectory(trajectory: Trajectory, redaction: Redaction) -> Trajectory:
    """``trajectory`` (read from a report file, which any version may have written) with
    ``redaction`` applied again: arguments cleaned as argument text, names, errors and the
    reply as free text. The rules only ever hide more, so this is a no-op on what
    ``build_trajectory`` made with the same rules."""
    for span in trajectory.spans:
        span.name = redaction.redact_text(span.name)
        if span.arguments is not None:
            span.arguments = clean_attribute(redaction, span.arguments)[0]
        span.error = _free_text(redaction, span.error, redaction.max_value_chars)
        span.agent = _free_text(redaction, span.agent, redaction.max_value_chars)
    trajectory.reply = _free_text(redaction, trajectory.reply, MAX_REPLY_CHARS)
    return trajectory


def _turns_from_calls(spans: list[TimelineSpan]) -> None:
    """A span that is not a call takes the turn of the calls below it when they share one;
    a span over calls of several turns (a conversation's root) has none."""
    children: dict[str, list[TimelineSpan]] = {}
    for span in spans:
        children.setdefault(span.parent_span_id, []).append(span)

    def turns_below(span: TimelineSpan, depth: int) -> set[int]:
        if span.tool_name is not None:
            return {span.turn or 1}
        found: set[int] = set()
        if depth < 64:
            for child in children.get(span.span_id, ()):
                if child is not span:
                    found |= turns_below(child, depth + 1)
        span.turn = next(iter(found)) if len(found) == 1 else None if found else 1
        return found

    for span in spans:
        if span.tool_name is None and span.turn is None:
            turns_below(span, 0)


def _duration(start_ns: int, end_ns: int) -> float:
    return round((end_ns - start_ns) / 1e6, 3) if start_ns and end_ns > start_ns else 0.0


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return 0.0


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)
