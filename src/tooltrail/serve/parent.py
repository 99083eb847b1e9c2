"""A worker process of ``tooltrail serve`` ends with the process that started it.

The router decides when workers stop (an end marker behind everything it sent), so SIGTERM and
SIGINT to a worker whose router is alive are ignored: a signal to the whole process group
(Ctrl-C, ``systemctl stop``) reaches the router, which then stops its workers in order. A worker
whose router is gone (killed, crashed) stops by itself instead: on Linux the kernel sends it
SIGTERM when the router dies (``PR_SET_PDEATHSIG``), elsewhere it sees the end of its input pipe.
Either way it evaluates what it holds and exits; nothing is left running.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
from types import FrameType

_PR_SET_PDEATHSIG = 1


class ParentGone(BaseException):
    """The router of this worker is gone (a ``BaseException``: no handler may swallow it)."""


class ParentWatch:
    """Installed first thing in a worker: signals mean "stop" only once ``parent`` is gone."""

    def __init__(self, parent: int) -> None:
        self.parent = parent
        self._stopping = False

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._handle)
        _signal_on_parent_death(signal.SIGTERM)
        if self.gone():  # died before the kernel was told to signal us
            raise ParentGone

    def gone(self) -> bool:
        """Whether the router died (this process was handed to another parent)."""
        return os.getppid() != self.parent

    def stopping(self) -> None:
        """The worker is finishing on its own: later signals must not interrupt that."""
        self._stopping = True

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if not self._stopping and self.gone():
            self._stopping = True
            raise ParentGone


def _signal_on_parent_death(signum: int) -> bool:
    """Ask Linux to send ``signum`` to this process when its parent dies; False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name, use_errno=True)
        return bool(libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
