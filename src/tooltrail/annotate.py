"""Offline: scores of a batch run written next to the traces they judge.

Two outputs, both readable by tooltrail's own reader and by any OTLP/JSON tool:

- ``write_annotations``: the run's ``gen_ai.evaluation.result`` events as an OTLP logs file
  (one request per trace), each record carrying the judged span's trace and span ids;
- ``write_annotated_traces``: a copy of the evaluated traces (tool spans redacted as
  ``tooltrail serve --dump`` redacts them) plus one ``tooltrail.evaluation`` span per evaluated
  case, a child of the trace's root span, so a backend that shows only traces shows the verdict
  too.

``annotate_run`` does both from the input files and the results of ``tooltrail eval``, which
keeps only results, not traces: it reads the input again, streaming. Which span each verdict
points at is decided in ``tooltrail.scores``, the same as on the live path.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooltrail.model import EvalTrace
from tooltrail.otlp import (
    Diagnostic,
    Limits,
    LogRecord,
    OtlpFileWriter,
    Span,
    SpanEvent,
    encode_logs_request,
    read_log_records,
    read_spans,
)
from tooltrail.otlp.decode.ids import SPAN_ID_BYTES, ZERO_HEX
from tooltrail.otlp.decode.span import STATUS_ERROR, STATUS_UNSET
from tooltrail.pipeline.span_redaction import redacted
from tooltrail.redact import Redaction
from tooltrail.results import CaseResult
from tooltrail.scores import (
    CASE_SCORE_NAME,
    EVALUATION_NAME,
    EvaluationEvent,
    EventOptions,
    OriginsLike,
    case_attributes,
    evaluation_events,
    evaluation_from_record,
    failed_score_names,
)
from tooltrail.settings import redaction_from_env

#: Name of the span added under a trace's root for each evaluated case.
EVALUATION_SPAN_NAME = "tooltrail.evaluation"
PASSED = "tooltrail.passed"
#: Attribute of a score's span event on the evaluation span: the span the score judged.
JUDGED_SPAN_ID = "tooltrail.judged_span_id"

_SPAN_KIND_INTERNAL = 1
_SPANS_PER_REQUEST = 1000


def file_format(path: str | os.PathLike[str]) -> tuple[str, str | None]:
    """(format, compression) chosen from a file name: ``.pb``/``.proto``/``.bin`` write
    length-prefixed protobuf, anything else JSON lines; a ``.gz`` or ``.zst`` ending
    compresses the whole file."""
    name = os.fspath(path).lower()
    compression: str | None = None
    if name.endswith(".gz"):
        compression, name = "gzip", name[:-3]
    elif name.endswith((".zst", ".zstd")):
        compression, name = "zstd-stream", name.rsplit(".", 1)[0]
    fmt = "proto" if name.endswith((".pb", ".proto", ".bin")) else "json"
    return fmt, compression


def _writer(path: str | os.PathLike[str]) -> OtlpFileWriter:
    """A fresh file at ``path`` (an existing one is replaced, not appended to)."""
    fmt, compression = file_format(path)
    with open(path, "wb"):
        pass
    return OtlpFileWriter(path, format=fmt, compression=compression)  # type: ignore[arg-type]


def _results_by_trace(results: Iterable[CaseResult]) -> dict[str, list[CaseResult]]:
    by_trace: dict[str, list[CaseResult]] = {}
    for result in results:
        by_trace.setdefault(result.trace_id or "", []).append(result)
    return by_trace


# --- evaluation events as an OTLP logs file -------------------------------------------------


def write_annotations(
    path: str | os.PathLike[str],
    traces: Iterable[EvalTrace],
    results: Iterable[CaseResult],
    *,
    suite: str | None = None,
    explanations: bool = False,
    time_ns: int | None = None,
    origins: OriginsLike | None = None,
) -> int:
    """Write the evaluation events of ``results`` as an OTLP logs file; return how many.

    Results are matched to ``traces`` by ``CaseResult.trace_id``; a result whose trace is not
    among ``traces`` still gets its events, with the trace id alone (no span id). One request
    per trace, under a resource carrying the trace's ``service.name``. Explanations are left
    out unless ``explanations`` is true (they may quote argument values). ``origins``: the
    provenance attributes of every event (``tooltrail.origins.Origins``).
    """
    options = EventOptions(explanations=explanations, suite=suite, origins=origins)
    stamp = time.time_ns() if time_ns is None else time_ns
    pending = _results_by_trace(results)
    written = 0
    with _writer(path) as writer:
        for trace in traces:
            trace_results = pending.pop(trace.trace_id, None)
            if trace_results:
                written += _write_events(writer, trace, trace_results, options, stamp)
        for trace_id, trace_results in pending.items():
            trace = EvalTrace(trace_id, tool_calls=[])
            written += _write_events(writer, trace, trace_results, options, stamp)
    return written


def _write_events(
    writer: OtlpFileWriter,
    trace: EvalTrace,
    results: Sequence[CaseResult],
    options: EventOptions,
    stamp: int,
) -> int:
    events = evaluation_events(trace, results, options=options, time_ns=stamp)
    if not events:
        return 0
    service = trace.metadata.get("service.name")
    resource = {"service.name": service} if isinstance(service, str) else {}
    writer.write(encode_logs_request((_log_record(e) for e in events), resource=resource))
    return len(events)


def _log_record(event: EvaluationEvent) -> LogRecord:
    return LogRecord(
        trace_id=event.trace_id,
        span_id=event.span_id,
        time_ns=event.time_ns,
        event_name=event.name,
        attributes=event.attributes,
        severity_number=event.severity_number,
    )


def read_evaluations(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    diagnostics: list[Diagnostic] | None = None,
) -> Iterator[dict[str, Any]]:
    """The ``gen_ai.evaluation.result`` events in OTLP logs files, as evaluation dicts
    (see ``tooltrail.scores.evaluation_from_record``); other log records are skipped."""
    for record in read_log_records(paths, diagnostics=diagnostics):
        evaluation = evaluation_from_record(record)
        if evaluation is not None:
            yield evaluation


def read_traces_with_evaluations(
    paths: str | Iterable[str],
    *,
    evaluations: str | Iterable[str] | None = None,
    group: str = "trace",
    limits: Limits | None = None,
    diagnostics: list[Diagnostic] | None = None,
) -> Iterator[EvalTrace]:
    """``tooltrail.convert.read_traces`` with earlier verdicts attached to each trace.

    Evaluation events (tooltrail's or any producer's ``gen_ai.evaluation.result`` records)
    are read from ``evaluations`` (OTLP logs files), else looked for in ``paths`` themselves
    (a directory holding both traces and logs files, say); they land in
    ``EvalTrace.evaluations`` of the trace (or conversation) they name. Problems reading
    ``evaluations`` go to ``diagnostics``; when the trace inputs are scanned for events, only
    the trace reader reports problems.
    """
    from tooltrail.convert import read_traces

    scan = paths if evaluations is None else evaluations
    found: dict[str, list[dict[str, Any]]] = {}
    scan_diagnostics = [] if evaluations is None else diagnostics
    for evaluation in read_evaluations(scan, diagnostics=scan_diagnostics):
        found.setdefault(evaluation["trace_id"], []).append(evaluation)
    for trace in read_traces(paths, group=group, limits=limits, diagnostics=diagnostics):  # type: ignore[arg-type]
        trace_ids = dict.fromkeys([trace.trace_id, *(trace.metadata.get("trace_ids") or ())])
        for trace_id in trace_ids:
            trace.evaluations.extend(found.get(trace_id, ()))
        yield trace


# --- a copy of the traces with evaluation spans ---------------------------------------------


@dataclass(slots=True)
class _Anchor:
    """Where the evaluation spans of one result key go, and what is known of that trace."""

    trace_id: str
    root_span_id: str = ""
    results: list[CaseResult] = field(default_factory=list)
    trace: EvalTrace | None = None
    root: Span | None = None
    top: Span | None = None
    seen: bool = False

    def note(self, span: Span) -> None:
        """Track the root span (the known root id, else a parentless span, earliest first)."""
        self.seen = True
        if self.root_span_id:
            if span.span_id == self.root_span_id:
                self.root = span
            return
        if not span.parent_span_id and (self.root is None or span.start_ns < self.root.start_ns):
            self.root = span
        if self.top is None or span.start_ns < self.top.start_ns:
            self.top = span


def write_annotated_traces(
    path: str | os.PathLike[str],
    spans: Iterable[Span],
    results: Iterable[CaseResult],
    *,
    traces: Iterable[EvalTrace] | None = None,
    suite: str | None = None,
    explanations: bool = False,
    redaction: Redaction | None = None,
) -> int:
    """Copy the spans of every evaluated trace to ``path``, adding one ``tooltrail.evaluation``
    span per result as a child of the trace's root span; return how many were added. Tool
    spans are copied redacted with ``redaction`` (default: ``TOOLTRAIL_REDACT_*``), as
    ``tooltrail serve`` dumps them.

    ``spans`` is streamed (e.g. ``tooltrail.otlp.read_spans(inputs)``); spans of traces
    without a result are not copied. ``traces`` (the evaluated ``EvalTrace`` objects) tell the
    root span and, for conversations, which traces a result covers: its evaluation span goes
    under the first trace's root. Without them a result's ``trace_id`` must be an OTLP trace
    id. A result whose trace has no span in ``spans`` gets no evaluation span.
    """
    options = EventOptions(explanations=explanations, suite=suite)
    rules = redaction if redaction is not None else redaction_from_env()
    anchors, copy_ids = _anchors(results, traces)
    written = 0
    with _writer(path) as writer:
        batch: list[Span] = []
        for span in spans:
            if span.trace_id not in copy_ids:
                continue
            anchor = anchors.get(span.trace_id)
            if anchor is not None:
                anchor.note(span)
            batch.append(span)
            if len(batch) >= _SPANS_PER_REQUEST:
                writer.write_spans(redacted(rules, batch))
                batch.clear()
        if batch:
            writer.write_spans(redacted(rules, batch))
        added: list[Span] = []
        for anchor in anchors.values():
            added.extend(_evaluation_spans(anchor, options))
        for start in range(0, len(added), _SPANS_PER_REQUEST):
            writer.write_spans(added[start : start + _SPANS_PER_REQUEST])
            written += len(added[start : start + _SPANS_PER_REQUEST])
    return written


def _anchors(
    results: Iterable[CaseResult], traces: Iterable[EvalTrace] | None
) -> tuple[dict[str, _Anchor], set[str]]:
    """Anchors keyed by the OTLP trace id their evaluation spans go into, and every trace id
    whose spans are copied."""
    pending = _results_by_trace(results)
    anchors: dict[str, _Anchor] = {}
    copy_ids: set[str] = set()
    for trace in traces or ():
        trace_results = pending.pop(trace.trace_id, None)
        if not trace_results:
            continue
        trace_ids = [str(t) for t in trace.metadata.get("trace_ids") or ()] or [trace.trace_id]
        root = trace.metadata.get("root_span_id")
        anchor = anchors.setdefault(trace_ids[0], _Anchor(trace_ids[0], str(root or "")))
        anchor.results.extend(trace_results)
        anchor.trace = trace
        copy_ids.update(trace_ids)
    for trace_id, trace_results in pending.items():
        if trace_id:
            anchors.setdefault(trace_id, _Anchor(trace_id)).results.extend(trace_results)
            copy_ids.add(trace_id)
    return anchors, copy_ids


def evaluation_span_id(trace_id: str, case_id: str, index: int) -> str:
    """A stable span id for the ``index``-th evaluation span of a trace: annotating the same
    run twice gives the same file."""
    seed = f"{trace_id}/{index}/{case_id}".encode()
    digest = hashlib.blake2b(seed, digest_size=SPAN_ID_BYTES).hexdigest()
    return digest if digest.strip("0") else ZERO_HEX[SPAN_ID_BYTES][:-1] + "1"


def _evaluation_spans(anchor: _Anchor, options: EventOptions) -> list[Span]:
    parent = anchor.root or anchor.top
    if not anchor.seen or parent is None:
        return []
    trace = anchor.trace or EvalTrace(
        anchor.trace_id, tool_calls=[], metadata={"root_span_id": parent.span_id}
    )
    at = parent.end_ns or parent.start_ns
    spans: list[Span] = []
    for index, result in enumerate(anchor.results):
        failed = failed_score_names(result)
        attributes = case_attributes(result, options)
        attributes[PASSED] = bool(result.passed)
        events = [
            SpanEvent(
                event.name,
                at,
                {**event.attributes, JUDGED_SPAN_ID: event.span_id}
                if event.span_id
                else dict(event.attributes),
            )
            for event in evaluation_events(trace, [result], options=_scores_only(options))
            if event.attributes.get(EVALUATION_NAME) != CASE_SCORE_NAME
        ]
        spans.append(
            Span(
                trace_id=anchor.trace_id,
                span_id=evaluation_span_id(anchor.trace_id, str(result.case_id), index),
                parent_span_id=parent.span_id,
                name=EVALUATION_SPAN_NAME,
                kind=_SPAN_KIND_INTERNAL,
                start_ns=at,
                end_ns=at,
                status_code=STATUS_UNSET if result.passed else STATUS_ERROR,
                status_message="" if result.passed else f"Failed: {', '.join(failed)}",
                attributes=attributes,
                events=events,
                resource=dict(parent.resource),
                scope_name="tooltrail",
            )
        )
    return spans


def _scores_only(options: EventOptions) -> EventOptions:
    return EventOptions(explanations=options.explanations, suite=options.suite, case_verdicts=False)


# --- both, from the input files of a run ----------------------------------------------------


@dataclass(slots=True)
class AnnotationCounts:
    """What ``annotate_run`` wrote."""

    events: int = 0
    evaluation_spans: int = 0


def annotate_run(
    paths: Sequence[str],
    results: Sequence[CaseResult],
    *,
    annotate: str | os.PathLike[str] | None = None,
    annotate_traces: str | os.PathLike[str] | None = None,
    group: str = "trace",
    suite: str | None = None,
    explanations: bool = False,
    limits: Limits | None = None,
    origins: OriginsLike | None = None,
) -> AnnotationCounts:
    """Write the events (``annotate``) and/or the annotated trace copy (``annotate_traces``)
    of a batch run whose ``results`` came from the input ``paths`` (read again, streaming).

    Input problems were reported by the run itself; the second read does not report them again.
    """
    from tooltrail.convert import read_traces

    counts = AnnotationCounts()
    if annotate is None and annotate_traces is None:
        return counts
    wanted = {r.trace_id for r in results}
    traces = [
        t
        for t in read_traces(paths, group=group, limits=limits, diagnostics=[])  # type: ignore[arg-type]
        if t.trace_id in wanted
    ]
    if annotate is not None:
        counts.events = write_annotations(
            annotate, traces, results, suite=suite, explanations=explanations, origins=origins
        )
    if annotate_traces is not None:
        kwargs: dict[str, Any] = {"diagnostics": []}
        if limits is not None:
            kwargs["limits"] = limits
        counts.evaluation_spans = write_annotated_traces(
            annotate_traces,
            read_spans(paths, **kwargs),
            results,
            traces=traces,
            suite=suite,
            explanations=explanations,
        )
    return counts
