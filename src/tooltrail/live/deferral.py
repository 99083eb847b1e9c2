"""Tool spans whose end is finished on a worker thread instead of the application's.

``ToolArgsProcessor.on_end`` recognises a tool span cheaply; reading its arguments, screening
them for secrets, writing canonical JSON and copying the span cost several times more. When the
wrapped processors only queue spans for later delivery anyway (``BatchSpanProcessor``,
``TraceBuffer``), nobody can tell when that work happens, so the application's thread appends
the span to a queue and one worker thread finishes it. Nothing is lost on the way: a full queue
makes the caller finish the span itself (counted), ``finish_queued`` (``force_flush``) and
``close`` (``shutdown``) finish everything queued before they return, and a span queued while
``close`` runs is finished by the thread that queued it.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tooltrail.pipeline.buffer import TraceBuffer

#: The worker finishes what is queued at least this often.
_TICK_S = 0.05
#: Queued spans that wake the worker before its tick.
_WAKE_AT = 512
#: How many spans are finished between looks at a flush deadline.
_DEADLINE_EVERY = 256

#: Processors whose ``on_end`` only queues the span for delivery later, on their own thread.
_LATER = (BatchSpanProcessor, TraceBuffer)


def delivers_later(processor: SpanProcessor) -> bool:
    """Whether ``processor`` hands spans on later anyway, so a deferred ``on_end`` is invisible
    to everyone but ``force_flush`` (which finishes the queue first)."""
    return isinstance(processor, _LATER)


class DeferredEnds:
    """A bounded queue of ended spans and the worker thread that calls ``finish`` on each.

    ``finish(span)`` must not raise. Each queued span is finished exactly once, in queue order
    by one thread at a time. ``inline``: spans ``put`` refused because the queue was full (the
    caller then finishes them itself).
    """

    def __init__(self, finish: Callable[[Any], None], max_queued: int = 1 << 16) -> None:
        if max_queued < 1:
            raise ValueError("max_queued >= 1")
        # A bound method is held weakly, so the worker does not keep its processor alive.
        self._finish: Callable[[], Callable[[Any], None] | None] = (
            weakref.WeakMethod(finish)  # type: ignore[arg-type]
            if hasattr(finish, "__self__")
            else (lambda: finish)
        )
        self.max_queued = max_queued
        self.inline = 0
        self.closed = False
        self._init_state()
        self._start_worker()
        if hasattr(os, "register_at_fork"):
            ref = weakref.ref(self)

            def after_in_child() -> None:
                me = ref()
                if me is not None:
                    me._after_fork()

            os.register_at_fork(after_in_child=after_in_child)

    def _init_state(self) -> None:
        self._queue: deque[Any] = deque()
        self._wake = threading.Event()
        #: Held while finishing: whoever holds it pops and finishes, so a flush that takes it
        #: knows every span popped before has been finished.
        self._finishing = threading.Lock()
        self._count = threading.Lock()

    def _start_worker(self) -> None:
        self._worker = threading.Thread(
            target=_work,
            args=(weakref.ref(self), self._wake),
            name="tooltrail-tool-spans",
            daemon=True,
        )
        self._worker.start()

    def _after_fork(self) -> None:
        """In a forked child: the parent's queued spans are the parent's to deliver."""
        self._init_state()
        if not self.closed:
            self._start_worker()

    def __len__(self) -> int:
        return len(self._queue)

    def put(self, span: Any) -> bool:
        """Queue ``span`` (application thread); ``False``: full or closed, finish it yourself."""
        queue = self._queue
        if self.closed:
            return False
        if len(queue) >= self.max_queued:
            with self._count:
                self.inline += 1
            return False
        queue.append(span)
        if self.closed:  # ``close`` may have finished the queue just before this append
            self.finish_queued()
        elif len(queue) == _WAKE_AT:
            self._wake.set()
        return True

    def finish_queued(self, deadline: float | None = None) -> bool:
        """Finish every span queued before this call; ``False`` if ``deadline`` (monotonic)
        passed first (what is left stays queued for the worker)."""
        if deadline is None:
            self._finishing.acquire()
        elif not self._finishing.acquire(timeout=max(0.0, deadline - time.monotonic())):
            return False
        try:
            finish = self._finish()
            queue = self._queue
            for i in range(len(queue)):  # only holders of the lock pop: the count holds
                span = queue.popleft()
                if finish is not None:
                    finish(span)
                if deadline is not None and i % _DEADLINE_EVERY == _DEADLINE_EVERY - 1:
                    if time.monotonic() > deadline and queue:
                        return False
            return True
        finally:
            self._finishing.release()

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop queueing, finish everything queued, stop the worker."""
        self.closed = True
        self._wake.set()
        self._worker.join(timeout=timeout_s)
        self.finish_queued()


def _work(ref: weakref.ref[DeferredEnds], wake: threading.Event) -> None:
    """The worker: finish the queue every tick or when woken; end with its owner or ``close``."""
    while True:
        wake.wait(_TICK_S)
        wake.clear()
        me = ref()
        if me is None:
            return
        stopping = me.closed
        me.finish_queued()
        del me
        if stopping:
            return
