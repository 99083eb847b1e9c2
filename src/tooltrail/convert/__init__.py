"""Spans -> ``EvalTrace``: group by trace (or conversation), find tool calls, order them.

``to_eval_trace`` converts spans already in hand; ``read_traces`` streams files. Both collect
with ``collect.TraceCollector`` (``TraceFacts``, the compact facts of one trace, log records
joined) and build with ``build_eval_trace``.

Memory: conversion never keeps decoded spans, only per trace a parent link per span and
compact facts of tool, agent, model and root spans (``TraceFacts``). How long those live is
``read_traces``' business (see ``reading``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tooltrail.convert.build import build_eval_trace
from tooltrail.convert.collect import DEFAULT_MAX_SPANS, TraceCollector, conversations
from tooltrail.convert.decoded import Decoded, is_log_record
from tooltrail.convert.facts import TraceFacts
from tooltrail.convert.reading import (
    GROUPS,
    TWO_PASS_BYTES,
    Group,
    check_group,
    read_traces,
)
from tooltrail.model import EvalTrace
from tooltrail.otlp.decode.span import Diagnostic, Span


def to_eval_trace(
    spans: Iterable[Decoded],
    diagnostics: list[Diagnostic] | None = None,
    *,
    usage: bool = False,
    content: bool = False,
) -> EvalTrace:
    """The ``EvalTrace`` of ``spans``: one trace, or the traces of one conversation, any order.

    With spans of several traces the result is one conversation: ``trace_id`` is the
    conversation id and ``metadata["trace_ids"]`` lists the traces in start order. Log records
    among ``spans`` are joined to their spans (``convert.logjoin``); those left unjoined are
    reported in ``diagnostics``. ``usage``, ``content``: as ``read_traces``' (for budget
    checks; for checks that read what was said and returned).
    """
    collector = TraceCollector(diagnostics=diagnostics, usage=usage, content=content)
    for item in spans:
        if is_log_record(item):
            collector.add_log(item)
        else:
            collector.add(item)
    return collector.build(collector.take_all())


def group_spans(spans: Iterable[Span], group: Group = "trace") -> Iterator[list[Span]]:
    """The spans of each trace (or conversation), each group in arrival order.

    Groups come out in order of first arrival once ``spans`` is exhausted. Duplicate span ids
    (exporter retries) keep the first copy. A trace belongs to the conversation named by its
    earliest root or agent span that carries a conversation id (as ``read_traces`` decides).
    """
    check_group(group)
    by_trace: dict[str, list[Span]] = {}
    seen: dict[str, set[str]] = {}
    facts = TraceCollector()  # decides each trace's conversation, as ``read_traces`` does
    for span in spans:
        ids = seen.setdefault(span.trace_id, set())
        if span.span_id in ids:
            continue
        ids.add(span.span_id)
        by_trace.setdefault(span.trace_id, []).append(span)
        if group == "conversation":
            facts.add(span)
    if group == "trace":
        yield from by_trace.values()
        return
    for members in conversations(facts.take_all()):
        yield [span for trace in members for span in by_trace[trace.trace_id]]


__all__ = [
    "DEFAULT_MAX_SPANS",
    "GROUPS",
    "TWO_PASS_BYTES",
    "Group",
    "TraceCollector",
    "TraceFacts",
    "build_eval_trace",
    "group_spans",
    "read_traces",
    "to_eval_trace",
]
