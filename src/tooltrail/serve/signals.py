"""SIGTERM and SIGINT as a request to stop, from the first moment of ``tooltrail serve`` to its
last.

Python's default for SIGTERM ends the process on the spot: during start-up that left worker
processes (and multiprocessing's resource tracker) running with nobody to stop them. From
``install`` on, either signal only sets ``requested``; start-up looks at it between its steps
(``StartCancelled``), and once the event loop runs, ``attach`` makes the signal end ``serve``
gracefully. A process that stops itself this way stops what it started.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from types import FrameType, TracebackType

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class StartCancelled(Exception):
    """A stop was requested while ``serve`` was starting; what was started has been stopped."""


class StopSignals:
    """``with StopSignals() as signals:`` SIGTERM and SIGINT set ``signals.requested``.

    ``restore``: put the previous handlers back on leaving. The CLI passes ``False``, and both
    signals are ignored from then on: its process ends right after, and a second signal while
    it exits (a supervisor that sends SIGTERM twice) would otherwise meet the default action
    and turn a clean stop, its summary already printed, into an exit by signal. (Keeping this
    class's handler would not do: the interpreter puts the default back for every Python
    handler while it finalizes, before the process is gone.) SIGKILL still ends it."""

    def __init__(self, *, restore: bool = True) -> None:
        self.restore = restore
        self.requested = threading.Event()
        #: The first signal received, if any.
        self.signum: int | None = None
        self._stop: asyncio.Event | None = None
        self._previous: dict[int, object] = {}

    def __enter__(self) -> StopSignals:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if not self.restore:
            for ignored in SIGNALS:
                signal.signal(ignored, signal.SIG_IGN)
            return
        for signum, previous in self._previous.items():
            if previous is not None:  # None: a handler not set from Python, left as it is
                signal.signal(signum, previous)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None = None) -> None:
        if self.signum is None:
            self.signum = signum
        self.requested.set()
        if self._stop is not None:
            self._stop.set()

    def attach(self, loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
        """While the loop runs, a signal sets ``stop`` (at once, whichever thread the system
        delivered it to); one that came before sets it now."""
        self._stop = stop
        for signum in SIGNALS:
            loop.add_signal_handler(signum, self._handle, signum)
        if self.requested.is_set():
            stop.set()

    def detach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Back to setting ``requested`` only (the loop's removal would restore the defaults)."""
        self._stop = None
        for signum in SIGNALS:
            loop.remove_signal_handler(signum)
            signal.signal(signum, self._handle)

    def check(self) -> None:
        """Raise ``StartCancelled`` if a stop was requested (a start-up step is next)."""
        if self.requested.is_set():
            raise StartCancelled("stopped by a signal during start-up")
