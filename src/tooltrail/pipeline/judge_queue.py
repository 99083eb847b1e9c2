"""``JudgeQueue``: traces whose suite asks a judge model are evaluated off the ingest path.

A judge check waits for a model (seconds, up to its time limits and retries). In ``serve`` and
live evaluation the trace buffer hands complete traces to the evaluator on its one delivery
thread; judging there would hold every other trace (and, in live, the spans behind them) for
the length of the model calls. So the inline evaluator puts such traces in this bounded queue,
served by ``workers`` threads (the judge's ``concurrency``), and returns at once.

- **Order.** A trace always goes to the same worker (by trace id), so its revisions are judged
  after its first verdict, in order.
- **Full.** Past ``max_queued`` traces waiting (or ``max_spans`` spans in them), a trace is
  evaluated at once on the caller's thread with every judge answering ``judge queue full``
  without a model call: its judge scores are error scores (never passing), its other checks
  score as always, and the counter ``judge_queue_full`` says how many traces were so judged.
- **Shutdown** waits up to ``timeout_s`` for the queue to drain; traces still waiting are then
  evaluated with every judge answering ``judge queue shut down`` (counted
  ``judge_queue_dropped``), so each still gets its results line.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from contextvars import Context, copy_context
from typing import Any

from tooltrail.judge.outcome import Judge, JudgeOutcome
from tooltrail.judge.override import override_judges
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.pipeline.throttle import ThrottledWarning

_log = logging.getLogger(__name__)

#: Traces waiting for a judge, all workers together, before a trace is judged "queue full".
DEFAULT_JUDGE_QUEUE = 1000
#: Worker threads when the judge does not say its ``concurrency``.
DEFAULT_JUDGE_WORKERS = 4
#: Seconds shutdown waits for the queue to drain.
DEFAULT_DRAIN_TIMEOUT_S = 30.0
#: The reasons a judge answers without a model call (``Judge not called: {reason}.``).
QUEUE_FULL = "judge queue full"
QUEUE_SHUT_DOWN = "judge queue shut down"


class NotJudging:
    """A judge that calls no model: every outcome is skipped with ``reason``."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def judge(
        self, prompt: str, *, samples: int = 1, params: dict[str, Any] | None = None
    ) -> JudgeOutcome:
        return JudgeOutcome(verdict=None, model="", skipped=self.reason)


def workers_of(judge: Judge | None) -> int:
    """The judge's ``concurrency`` (a ``JudgeRunner``'s bound on requests in flight), else the
    default: more workers than requests allowed in flight would only wait for a place."""
    concurrency = getattr(judge, "concurrency", None)
    if isinstance(concurrency, int) and not isinstance(concurrency, bool) and concurrency > 0:
        return concurrency
    return DEFAULT_JUDGE_WORKERS


class JudgeQueue:
    """Runs ``evaluate(trace)`` on ``workers`` threads, at most ``max_queued`` traces waiting.

    ``context``: where the run's judge is installed (``judge.use_judge``, a model resolver;
    default: the caller's context now). Each worker runs in a copy of it, as threads do not
    inherit the context of the code that started them.
    """

    def __init__(
        self,
        evaluate: Callable[[CompletedTrace], None],
        *,
        context: Context | None = None,
        workers: int = DEFAULT_JUDGE_WORKERS,
        max_queued: int = DEFAULT_JUDGE_QUEUE,
        max_spans: int | None = None,
    ) -> None:
        if workers < 1 or max_queued < 1 or (max_spans is not None and max_spans < 1):
            raise ValueError("a judge queue needs at least 1 worker, 1 place and 1 span")
        self._evaluate = evaluate
        #: Where the run's judge is installed; each worker runs in a copy of it.
        self.context = context if context is not None else copy_context()
        self.max_queued = max_queued
        #: Spans the waiting traces may hold together (``None``: no bound but ``max_queued``).
        self.max_spans = max_spans
        self._spans = 0
        self._queues: list[deque[CompletedTrace]] = [deque() for _ in range(workers)]
        self._changed = threading.Condition()
        self._busy = 0
        self._closing = False
        self._warn = ThrottledWarning(_log)
        #: Traces judged by the workers, traces judged "queue full", dropped at shutdown.
        self.judged = 0
        self.full = 0
        self.dropped = 0
        self.peak_queued = 0
        self._threads = [
            threading.Thread(
                target=self.context.copy().run,
                args=(self._work, i),
                name=f"tooltrail-judge-{i}",
                daemon=True,
            )
            for i in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    @property
    def queued(self) -> int:
        """Traces waiting now."""
        with self._changed:
            return self._waiting()

    def _waiting(self) -> int:
        return sum(len(q) for q in self._queues)

    def submit(self, trace: CompletedTrace) -> None:
        """Queue ``trace``; when the queue is full (or shut down), judge it now without a model."""
        with self._changed:
            size = len(trace.spans)
            fits = (
                self.max_spans is None or self._spans == 0 or self._spans + size <= self.max_spans
            )
            if not self._closing and self._waiting() < self.max_queued and fits:
                self._queues[trace.trace_id % len(self._queues)].append(trace)
                self._spans += size
                self.peak_queued = max(self.peak_queued, self._waiting())
                self._changed.notify_all()
                return
            reason = QUEUE_SHUT_DOWN if self._closing else QUEUE_FULL
            if reason == QUEUE_FULL:
                self.full += 1
            else:
                self.dropped += 1
        self._warn.warn(
            reason,
            "tooltrail: %s: a trace's judge checks are error scores (counter %s)",
            reason,
            "judge_queue_full" if reason == QUEUE_FULL else "judge_queue_dropped",
        )
        with override_judges(NotJudging(reason)):
            self._evaluate(trace)

    def _work(self, index: int) -> None:
        mine = self._queues[index]
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(mine) or self._closing)
                if not mine:
                    return
                trace = mine.popleft()
                self._spans -= len(trace.spans)
                self._busy += 1
            try:
                self._evaluate(trace)  # never raises (``InlineEvaluator``)
            finally:
                with self._changed:
                    self._busy -= 1
                    self.judged += 1
                    self._changed.notify_all()

    def drain(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` for every queued trace to be judged."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            return self._changed.wait_for(
                lambda: self._waiting() == 0 and self._busy == 0,
                timeout=max(0.0, deadline - time.monotonic()),
            )

    def shutdown(self, timeout_s: float = DEFAULT_DRAIN_TIMEOUT_S) -> int:
        """Drain for up to ``timeout_s``; judge what is left without a model. Returns the
        number of traces so dropped from the queue."""
        self.drain(timeout_s)
        with self._changed:
            self._closing = True
            left = [trace for q in self._queues for trace in q]
            for q in self._queues:
                q.clear()
            self._spans = 0
            self.dropped += len(left)
            self._changed.notify_all()
        if left:
            _log.warning(
                "tooltrail: %d trace(s) still waiting for a judge at shutdown: their judge "
                "checks are error scores (counter judge_queue_dropped)",
                len(left),
            )
        with override_judges(NotJudging(QUEUE_SHUT_DOWN)):
            for trace in left:
                self._evaluate(trace)
        return len(left)

    def stats(self) -> dict[str, int]:
        """The queue's counters, named as in ``/stats``."""
        with self._changed:
            return {
                "judge_queue_waiting": self._waiting(),
                "judge_queue_spans": self._spans,
                "judge_queue_in_progress": self._busy,
                "judge_queue_peak": self.peak_queued,
                "judge_queue_judged": self.judged,
                "judge_queue_full": self.full,
                "judge_queue_dropped": self.dropped,
            }
