"""What running a check under a time limit can come to, besides what the check returned."""

from __future__ import annotations

from dataclasses import dataclass

from tooltrail.checks.protocol import Check, CheckContext, CheckResult


class CheckStopped(BaseException):
    """Raised inside a check that ran past its time limit (a ``BaseException``, so that the
    check's own ``except Exception`` does not swallow it)."""


@dataclass(slots=True, frozen=True)
class TimedOut:
    """The check ran past ``limit`` seconds and was given up."""

    limit: float


@dataclass(slots=True, frozen=True)
class Raised:
    """The check raised ``error`` (any ``BaseException``)."""

    error: BaseException


@dataclass(slots=True, frozen=True)
class NotRun:
    """The check was not started: ``abandoned`` given-up checks are still running."""

    abandoned: int


Outcome = CheckResult | TimedOut | Raised | NotRun
#: One check to run: the check, what it sees, its time limit in seconds (``None``: a
#: built-in check, bounded by the size of the trace).
Step = tuple[Check, CheckContext, float | None]
