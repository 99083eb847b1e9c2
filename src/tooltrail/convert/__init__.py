"""Spans -> ``EvalTrace``: group by trace (or conversation), find tool calls, order them.

``to_eval_trace`` converts spans already in hand; ``read_traces`` streams files. Both go
through ``TraceFacts`` (the compact facts of one trace) and ``build_eval_trace``.

Memory: ``read_traces`` keeps, per trace of the input, a parent link per span and compact
facts of tool, agent, model and root spans, never the decoded spans themselves. Spans of one
trace arrive children first and may be spread over many records and files, so a trace is
complete only when the input is exhausted: traces are emitted then, in start order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, Literal

from tooltrail import dialects
from tooltrail.convert.build import build_eval_trace
from tooltrail.convert.facts import TraceFacts
from tooltrail.model import EvalTrace
from tooltrail.otlp.span import Diagnostic, Span

if TYPE_CHECKING:
    from tooltrail.otlp.limits import Limits

Group = Literal["trace", "conversation"]
GROUPS: tuple[str, ...] = ("trace", "conversation")

#: Spans one trace may hold when no ``Limits`` say otherwise.
DEFAULT_MAX_SPANS = 1_000_000


def to_eval_trace(spans: Iterable[Span]) -> EvalTrace:
    """The ``EvalTrace`` of ``spans``: one trace, or the traces of one conversation, any order.

    With spans of several traces the result is one conversation: ``trace_id`` is the
    conversation id and ``metadata["trace_ids"]`` lists the traces in start order.
    """
    by_trace: dict[str, TraceFacts] = {}
    for span in spans:
        facts = by_trace.get(span.trace_id)
        if facts is None:
            facts = by_trace[span.trace_id] = TraceFacts(span.trace_id, max_spans=DEFAULT_MAX_SPANS)
        facts.add(span)
    return build_eval_trace(list(by_trace.values()))


def group_spans(spans: Iterable[Span], group: Group = "trace") -> Iterator[list[Span]]:
    """The spans of each trace (or conversation), each group in arrival order.

    Groups come out in order of first arrival once ``spans`` is exhausted. Duplicate span ids
    (exporter retries) keep the first copy. A trace belongs to the conversation named by its
    earliest span that carries a conversation id.
    """
    _check_group(group)
    by_trace: dict[str, list[Span]] = {}
    seen: dict[str, set[str]] = {}
    conversation: dict[str, tuple[int, str]] = {}
    for span in spans:
        ids = seen.setdefault(span.trace_id, set())
        if span.span_id in ids:
            continue
        ids.add(span.span_id)
        by_trace.setdefault(span.trace_id, []).append(span)
        if group == "conversation":
            conv = dialects.conversation_id(span.attributes)
            if conv is not None:
                known = conversation.get(span.trace_id)
                if known is None or span.start_ns < known[0]:
                    conversation[span.trace_id] = (span.start_ns, conv)
    if group == "trace":
        yield from by_trace.values()
        return
    merged: dict[str, list[Span]] = {}
    for trace_id, trace_spans in by_trace.items():
        key = conversation[trace_id][1] if trace_id in conversation else "\0" + trace_id
        merged.setdefault(key, []).extend(trace_spans)
    yield from merged.values()


def read_traces(
    paths: str | Iterable[str],
    *,
    group: Group = "trace",
    limits: Limits | None = None,
    diagnostics: list[Diagnostic] | None = None,
) -> Iterator[EvalTrace]:
    """``EvalTrace`` per trace (or per conversation) of OTLP files, directories, globs, ``-``.

    Records that cannot be read are skipped with a ``Diagnostic`` appended to
    ``diagnostics``; so is the excess of a trace over ``limits.max_spans_per_trace`` (that
    trace is then marked ``partial``). Traces come out in start order.
    """
    from tooltrail.otlp import read_spans  # the decoder package; imported when first used

    _check_group(group)
    max_spans = limits.max_spans_per_trace if limits is not None else DEFAULT_MAX_SPANS
    kwargs: dict[str, Any] = {"diagnostics": diagnostics}
    if limits is not None:
        kwargs["limits"] = limits
    by_trace: dict[str, TraceFacts] = {}
    for span in read_spans(paths, **kwargs):
        facts = by_trace.get(span.trace_id)
        if facts is None:
            facts = by_trace[span.trace_id] = TraceFacts(span.trace_id, max_spans=max_spans)
        if not facts.add(span) and facts.dropped == 1 and diagnostics is not None:
            diagnostics.append(_over_limit(span, max_spans))
    traces = sorted(by_trace.values(), key=lambda t: (t.start_ns, t.trace_id))
    by_trace.clear()
    for batch in _batches(traces, group):
        yield build_eval_trace(batch)


def _batches(traces: list[TraceFacts], group: Group) -> Iterator[list[TraceFacts]]:
    if group == "trace":
        for trace in traces:
            yield [trace]
        return
    conversations: dict[str, list[TraceFacts]] = {}
    for trace in traces:
        key = trace.conversation_id or "\0" + trace.trace_id
        conversations.setdefault(key, []).append(trace)
    yield from conversations.values()


def _check_group(group: str) -> None:
    if group not in GROUPS:
        raise ValueError(f"group must be one of {', '.join(GROUPS)}, not {group!r}")


def _over_limit(span: Span, max_spans: int) -> Diagnostic:
    path, line, offset = _where(span.origin)
    return Diagnostic(
        path,
        line,
        offset,
        f"trace {span.trace_id} has more than {max_spans} spans (limits.max_spans_per_trace): "
        "the rest of it was dropped and the trace is marked partial",
    )


def _where(origin: str) -> tuple[str, int | None, int | None]:
    """``"path:line"`` / ``"path@offset"`` -> (path, line, offset)."""
    head, sep, tail = origin.rpartition(":")
    if sep and tail.isdigit():
        return head, int(tail), None
    head, sep, tail = origin.rpartition("@")
    if sep and tail.isdigit():
        return head, None, int(tail)
    return origin, None, None


__all__ = [
    "GROUPS",
    "Group",
    "TraceFacts",
    "build_eval_trace",
    "group_spans",
    "read_traces",
    "to_eval_trace",
]
