"""What the receiver says about one export request, independent of HTTP or gRPC."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(slots=True, frozen=True)
class Accepted:
    """The request was taken. ``rejected`` spans of it were not (``partial_success``)."""

    accepted: int
    rejected: int = 0
    #: Why spans were rejected: the first few reasons, for ``partial_success.error_message``.
    message: str = ""


class Undecodable(Exception):
    """The body is not an OTLP export request at all (400 / INVALID_ARGUMENT)."""


class Throttled(Exception):
    """The buffer is full; the client should retry after ``retry_after`` seconds (503)."""

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ShuttingDown(Exception):
    """The receiver stopped taking data (503 / UNAVAILABLE): send it elsewhere or later."""
