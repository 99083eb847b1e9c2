"""Why one attempt at a judge's answer failed, and whether another attempt may help.

Every client adapter (a completion function, an SDK) turns what went wrong into an
:class:`AttemptFailure`, so that the runner's retry loop has one rule: retry what is
retryable, wait what the server asked (``Retry-After``), and say the last reason.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(slots=True)
class AttemptFailure(Exception):
    """One attempt failed: ``reason`` is the text the outcome's error ends with."""

    reason: str
    retryable: bool = True
    #: Seconds the server asked to wait before the next attempt (``Retry-After``), if it did.
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return self.reason


def retry_after_seconds(
    headers: Mapping[str, str] | None, now: float | None = None
) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``Retry-After`` in seconds or as
    an HTTP date. ``None`` when there is none or it cannot be read; never below 0."""
    if not headers:
        return None
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000
        except ValueError:
            value = math.nan
        if math.isfinite(value):
            return max(0.0, value)
    raw = _header(headers, "retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        value = float(raw)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        value = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, value) if math.isfinite(value) else None


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, whatever its case (an SDK gives a case-insensitive mapping, a test a
    plain dict)."""
    value = headers.get(name)
    if value is not None:
        return value
    for key, found in headers.items():
        if key.lower() == name:
            return found
    return None
