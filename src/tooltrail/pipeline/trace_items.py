"""What the inline evaluator reads and keeps of a trace's items, apart from how it judges them.

``pipeline.inline.InlineEvaluator`` judges whole traces, and revises a verdict when a later
piece of its trace comes, the same way wherever the traces come from. What differs is the
items a trace is made of: the agent's SDK spans in-process, decoded OTLP spans and log
records in ``tooltrail serve`` (``serve.received_items``). A ``TraceItems`` answers, for one
kind of item, the questions the evaluator asks of them: how a trace of them is converted, what
is kept of a judged trace for a revision (and read back, and let go), when two items are one
(an exporter's retry), and how many of them are spans and how many log records (counters).

``SdkItems`` is the in-process one and the evaluator's default. The evaluator binds each
method once, so a method of a ``TraceItems`` costs a call, never a lookup, per item.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Protocol, TypeVar

from opentelemetry.sdk.trace import ReadableSpan

from tooltrail.convert import to_eval_trace
from tooltrail.model import EvalTrace
from tooltrail.pipeline.adapt import otlp_spans
from tooltrail.pipeline.buffer import CompletedTrace

#: The items of a trace, as the buffer delivers them.
ItemT = TypeVar("ItemT")
#: What is kept of a judged trace's items until its revision window is over.
KeptT = TypeVar("KeptT")


class TraceItems(Protocol[ItemT, KeptT]):
    """How the inline evaluator reads and keeps the items (``ItemT``) of a trace.

    Every method may be called from the buffer's delivery thread and from judge workers at
    once (``pipeline.judge_queue``): an implementation keeps no state per trace."""

    def convert(
        self,
        trace: CompletedTrace[ItemT],
        items: list[ItemT],
        partial: bool,
        usage: bool,
        content: bool,
    ) -> EvalTrace | None:
        """``items`` (the whole of ``trace`` judged so far) as the trace ``tooltrail eval``
        would read, partial when ``partial`` says so (``usage``, ``content``: what the suite
        reads, ``to_eval_trace``'s); ``None``: nothing to judge yet."""
        ...

    def pack(self, items: list[ItemT]) -> KeptT:
        """What is kept of ``items`` for a revision."""
        ...

    def unpack(self, kept: KeptT, trace_id: int) -> list[ItemT]:
        """The items ``pack`` kept, as they were handed to it."""
        ...

    def release(self, kept: KeptT) -> None:
        """What ``pack`` kept is let go (``RevisionStore``'s ``on_release``): once each."""
        ...

    def unique(self, items: list[ItemT]) -> list[ItemT]:
        """A first piece's items without the log records an exporter's retry repeated (the
        evaluator counts those left out, ``log_records_duplicate``); ``items`` itself when
        none are."""
        ...

    def key(self, item: ItemT) -> Hashable:
        """What a retried copy of ``item`` has in common with it (a late piece's items are
        merged with the kept ones by it)."""
        ...

    def sizes(self, items: list[ItemT]) -> tuple[int, int]:
        """Spans and log records among ``items``."""
        ...

    def late_records(self, items: list[ItemT]) -> int:
        """The log records a later piece brings (counted ``log_records_late``)."""
        ...


class SdkItems:
    """The agent's own SDK spans (``ReadableSpan``), in-process: kept as they are (alive anyway
    while the agent's exporters hold them), told apart by span id, never a log record."""

    __slots__ = ()

    def convert(
        self,
        trace: CompletedTrace[ReadableSpan],
        items: list[ReadableSpan],
        partial: bool,
        usage: bool,
        content: bool,
    ) -> EvalTrace | None:
        eval_trace = to_eval_trace(otlp_spans(items), usage=usage, content=content)
        eval_trace.partial = eval_trace.partial or partial
        return eval_trace

    def pack(self, items: list[ReadableSpan]) -> list[ReadableSpan]:
        return items

    def unpack(self, kept: list[ReadableSpan], trace_id: int) -> list[ReadableSpan]:
        return kept

    def release(self, kept: list[ReadableSpan]) -> None:
        """Nothing else holds them."""

    def unique(self, items: list[ReadableSpan]) -> list[ReadableSpan]:
        """An SDK span ends once: a piece holds no copies."""
        return items

    def key(self, item: ReadableSpan) -> Hashable:
        return int(item.context.span_id)

    def sizes(self, items: list[ReadableSpan]) -> tuple[int, int]:
        return len(items), 0

    def late_records(self, items: list[ReadableSpan]) -> int:
        return 0
