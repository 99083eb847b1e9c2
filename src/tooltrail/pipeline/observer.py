"""What the inline evaluator tells whoever runs it, besides its result callbacks.

``pipeline.inline.InlineEvaluator`` counts what it does on itself (``traces_evaluated``,
``late_pieces``, ...) and writes its results lines to a file of its own. A host that keeps its
own counters or its own results file (``tooltrail serve``: ``/stats``, a results file shared by
worker processes, ``serve.sinks``) passes an ``EvaluationObserver`` and a ``ResultLines``
instead of changing the evaluator: in-process neither is given, and nothing is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from tooltrail.results import CaseResult


class EvaluationObserver(Protocol):
    """Told of each step of the evaluator's counts, on the thread that judged the trace (the
    delivery thread, or a judge worker: several at once)."""

    def counted(self, deltas: Mapping[str, int]) -> None:
        """The evaluator's counters named in ``deltas`` grew by their values (after it counted
        them on itself)."""
        ...

    def failed(self) -> None:
        """Converting or judging a trace raised (the evaluator counted an error)."""
        ...

    def judged(self, partial: bool, matched: bool) -> None:
        """A trace was converted and judged for the first time: ``partial``, the piece that
        was; ``matched``, whether a case applied to it."""
        ...

    def first_verdict(self, results: list[CaseResult]) -> None:
        """The cases of a trace's first verdict (not a revision) were judged."""
        ...

    def dropped(self) -> None:
        """A trace the buffer gave up was named by its ``dropped`` line."""
        ...


class ResultLines(Protocol):
    """Where results lines go: each ``append`` one whole line (``result_line`` and the notices
    of ``pipeline.inline``), which may be held and written later; ``flush`` writes what is
    held (the evaluator calls it when the trace buffer has nothing more ready, after each
    judge worker's trace, and in ``force_flush``); ``close`` once, when the evaluator shuts
    down, writing what is held first. Each may raise ``OSError``. One without ``flush``
    (written before it existed) is taken to write each line at once."""

    def append(self, data: bytes) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...
