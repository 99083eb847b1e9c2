"""What ``tooltrail serve`` says on its console (standard error) while it runs.

- One line per evaluated trace (``pipeline.console.ConsoleVerdicts``), written by the process
  that evaluated it (the receiver, or each worker: their standard error is the receiver's), at
  most ``--console-rate`` a second across all of them (a ``SharedRateWindow`` in shared memory),
  the lines left out counted (``console_lines_left_out``) and said.
- The counters, at most once a minute and only when they moved (``CounterLines``), by the
  receiver's process.

Writing never holds up evaluation: lines go through a bounded queue to a thread of their own
(``StderrLines``), so a terminal that scrolls slowly, is paused or a pipe nobody reads costs
lines (counted left out), not intake. ``--quiet`` turns the per-trace lines off.
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from tooltrail.pipeline.console import (
    ConsoleVerdicts,
    LocalRateWindow,
    RateWindow,
    SharedRateWindow,
)
from tooltrail.redact import Redaction

#: Lines waiting for the console at most; past it a line is left out (counted).
MAX_WAITING_LINES = 1000
#: Seconds ``close`` waits for the waiting lines to be written.
CLOSE_WAIT_S = 2.0
#: The least time between two counters lines (``--quiet`` keeps them).
COUNTERS_INTERVAL_S = 60.0
_CLOSE = None


class StderrLines:
    """Writes lines to standard error (looked up at each write, so a test's capture sees them)
    on a thread of its own; ``write`` never blocks."""

    def __init__(self, max_waiting: int = MAX_WAITING_LINES) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue(max_waiting)
        #: Lines refused because ``max_waiting`` were still waiting (the console is stuck),
        #: or that a closed console could not take.
        self.dropped = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="tooltrail-console", daemon=True)
        self._thread.start()

    def write(self, line: str) -> None:
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self._drop()

    def _drop(self) -> None:
        with self._lock:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            line = self._queue.get()
            if line is _CLOSE:
                return
            stream = sys.stderr
            if stream is None:
                continue
            try:
                stream.write(line + "\n")
                stream.flush()
            except (OSError, ValueError):  # a closed console: the lines are only counted
                self._drop()

    def close(self, wait_s: float = CLOSE_WAIT_S) -> None:
        """Write what waits (for at most ``wait_s``), then stop the thread."""
        try:
            self._queue.put(_CLOSE, timeout=wait_s)
        except queue.Full:
            return
        self._thread.join(wait_s)


class ServeConsole:
    """The per-trace lines of one ``tooltrail serve`` process: the result callback for its
    evaluator, and its counts for ``/stats``."""

    def __init__(self, *, rate: int, redaction: Redaction, shared_window: Any = None) -> None:
        window: RateWindow = (
            SharedRateWindow(shared_window, rate)
            if shared_window is not None
            else LocalRateWindow(rate)
        )
        self.lines = StderrLines()
        self.verdicts = ConsoleVerdicts(
            self.lines.write, redaction=redaction, window=window, who="tooltrail serve"
        )

    def stats(self) -> dict[str, int]:
        return {
            "console_lines": self.verdicts.written,
            "console_lines_left_out": self.verdicts.left_out + self.lines.dropped,
        }

    def close(self) -> None:
        self.verdicts.close()
        self.lines.close()


#: The counters a counters line shows, in order, with their words.
COUNTER_WORDS = (
    ("traces_evaluated", "traces evaluated"),
    ("cases_passed", "cases passed"),
    ("cases_failed", "cases failed"),
    ("evaluation_errors", "evaluation errors"),
    ("traces_partial", "partial"),
    ("traces_unmatched", "unmatched"),
    ("spans_received", "spans received"),
    ("requests_refused", "requests refused"),
    ("console_lines_left_out", "verdict lines left out"),
)


def counters_line(stats: Mapping[str, Any], now: float) -> str:
    """``HH:MM:SS tooltrail serve: 12 traces evaluated, 10 cases passed, ...`` (every counter of
    ``COUNTER_WORDS``, zeros too, so lines compare at a glance)."""
    stamp = time.strftime("%H:%M:%S", time.localtime(now))
    shown = ", ".join(f"{int(stats.get(key, 0))} {words}" for key, words in COUNTER_WORDS)
    return f"{stamp} tooltrail serve: {shown}"


class CounterLines:
    """The counters line, at most once per ``interval_s`` and only when a counter of it moved
    since the last one: an idle receiver says nothing. ``tick`` decides (the thread of
    ``start`` calls it every second; tests call it with their own clock)."""

    def __init__(
        self,
        stats: Callable[[], Mapping[str, Any]],
        write: Callable[[str], None],
        *,
        interval_s: float = COUNTERS_INTERVAL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._stats = stats
        self._write = write
        self._interval = interval_s
        self._clock = clock
        self._last_at = clock()
        self._last: tuple[int, ...] = tuple(0 for _ in COUNTER_WORDS)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def tick(self) -> bool:
        """Write the counters line if the interval has passed and they moved; True if written."""
        now = self._clock()
        if now - self._last_at < self._interval:
            return False
        stats = self._stats()
        values = tuple(int(stats.get(key, 0)) for key, _ in COUNTER_WORDS)
        if values == self._last:
            return False
        self._last, self._last_at = values, now
        self._write(counters_line(stats, now))
        return True

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="tooltrail-counters", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                self.tick()
            except Exception:  # noqa: BLE001, S112 - a counters line never stops the receiver
                continue

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
