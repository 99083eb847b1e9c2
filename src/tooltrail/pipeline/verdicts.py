"""A trace's verdict on its root span, for a pipeline that decides what to keep by it.

``serve --forward-verdicts`` and the live path's ``verdict_exporter`` send each trace on once
it is judged, with two attributes on its root span:

- ``tooltrail.verdict``: ``pass``, ``fail``, ``error`` (a failing score is a check's error: a
  judge that could not answer, a misconfigured check), ``partial`` (a piece of a trace handed
  on before it was complete) or ``none`` (no case of the suite applied, or the trace was test
  traffic left out);
- ``tooltrail.failed_checks``: the names of the failed checks (``case/check`` when several
  cases applied), only when some failed.

A collector's ``tail_sampling`` processor then keeps every trace whose root says ``fail`` or
``error`` and a share of the others (``collector-config/sampling.yaml``). A piece without the
root span (spans of a trace that arrive after its verdict) gets the attributes on its top
spans, those whose parent is not in the piece, so a policy looking at any span still finds
them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from tooltrail.model import EvalTrace
from tooltrail.otlp import Span
from tooltrail.pipeline.console import verdict_word
from tooltrail.results import CaseResult

VERDICT = "tooltrail.verdict"
FAILED_CHECKS = "tooltrail.failed_checks"
VERDICTS = ("pass", "fail", "error", "partial", "none")


@dataclass(frozen=True, slots=True)
class TraceVerdict:
    """What a forwarded trace's root span says of it."""

    verdict: str
    failed: tuple[str, ...] = ()

    def attributes(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {VERDICT: self.verdict}
        if self.failed:
            attributes[FAILED_CHECKS] = list(self.failed)
        return attributes


#: The verdict of a trace no case applied to, or that was not evaluated.
NO_VERDICT = TraceVerdict("none")
#: The verdict of a trace whose evaluation failed.
ERROR_VERDICT = TraceVerdict("error")
PARTIAL_VERDICT = TraceVerdict("partial")


def trace_verdict(eval_trace: EvalTrace, results: Sequence[CaseResult]) -> TraceVerdict:
    """The verdict of ``results`` on ``eval_trace`` (the console's word, in lower case)."""
    if not results:
        return NO_VERDICT
    several = len(results) > 1
    failed = tuple(
        dict.fromkeys(
            f"{result.case_id}/{score.name}" if several else score.name
            for result in results
            for score in result.failures
        )
    )
    return TraceVerdict(verdict_word(eval_trace, results).lower(), failed)


def stamped_spans(spans: Sequence[Span], verdict: TraceVerdict) -> list[Span]:
    """``spans`` (decoded OTLP spans) with ``verdict`` on the root, else on the top spans."""
    tops = _tops([(s.span_id, s.parent_span_id) for s in spans])
    attributes = verdict.attributes()
    return [
        replace(span, attributes={**span.attributes, **attributes}) if i in tops else span
        for i, span in enumerate(spans)
    ]


def stamped_sdk_spans(spans: Sequence[ReadableSpan], verdict: TraceVerdict) -> list[ReadableSpan]:
    """``spans`` (SDK spans) with ``verdict`` on the root, else on the top spans: each such span
    copied (an ended SDK span's attributes are frozen), the others as they are."""
    pairs = []
    for span in spans:
        context, parent = span.context, span.parent
        span_id = context.span_id if context is not None else 0
        parent_id = 0 if parent is None or parent.is_remote else parent.span_id
        pairs.append((span_id, parent_id))
    tops = _tops(pairs)
    attributes = verdict.attributes()
    return [_sdk_copy(span, attributes) if i in tops else span for i, span in enumerate(spans)]


def _tops(pairs: Sequence[tuple[Any, Any]]) -> set[int]:
    """Indices of the roots (no parent) among ``(span id, parent id)``; without any, of the spans
    whose parent is not among them."""
    roots = {i for i, (_, parent) in enumerate(pairs) if not parent}
    if roots:
        return roots
    ids = {span_id for span_id, _ in pairs}
    return {i for i, (_, parent) in enumerate(pairs) if parent not in ids}


def _sdk_copy(span: ReadableSpan, extra: dict[str, Any]) -> ReadableSpan:
    attributes = dict(span.attributes or {})
    attributes.update({k: tuple(v) if isinstance(v, list) else v for k, v in extra.items()})
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
