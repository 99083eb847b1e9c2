"""Warnings that repeat at most once per interval, so a hot failure cannot flood the host's logs."""

from __future__ import annotations

import logging
import threading
import time


class ThrottledWarning:
    """Logs a warning at most once per ``interval_s`` for each key; counts what it held back."""

    def __init__(self, logger: logging.Logger, interval_s: float = 60.0) -> None:
        self._logger = logger
        self._interval = interval_s
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}
        self._lock = threading.Lock()

    def warn(self, key: str, message: str, *args: object) -> bool:
        """Log ``message % args`` unless ``key`` was logged within the interval; True if logged.

        Never pass tool argument values in ``args``: they are customer data.
        """
        now = time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self._interval:
                self._held[key] = self._held.get(key, 0) + 1
                return False
            self._last[key] = now
            held = self._held.pop(key, 0)
        if held:
            message += " (%d similar warnings held back)"
            args = (*args, held)
        self._logger.warning(message, *args)
        return True
