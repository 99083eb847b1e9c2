"""A judgement's deadline: one bound on all it does, every attempt, wait and sample counted.

A judge server can accept a request and never answer; a completion function can block
forever; a ``Retry-After`` can ask for a minute. The runner starts a :class:`Deadline` when a
judgement starts and asks it before each attempt and each wait; each attempt runs on a thread
of its own (:func:`call_before`), waited for no longer than the time left, so the judgement ends
by its deadline whatever the client does. An attempt left behind keeps running until its own
time limit ends it (an SDK's timeout, capped near the deadline); what it answers then is not
read. ``then`` runs when it ends, so the place it holds among the requests in flight is given
back only then: the bound on requests in flight holds for those left behind too.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


class Overdue(Exception):
    """The call had not ended when the time given to it was up."""


@dataclass(frozen=True, slots=True)
class Deadline:
    """When a judgement must have ended (``time.monotonic()``), and its length in seconds."""

    seconds: float
    ends_at: float

    @classmethod
    def start(cls, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now."""
        return cls(seconds=seconds, ends_at=time.monotonic() + seconds)

    def remaining(self) -> float:
        """Seconds left, 0 once passed."""
        return max(0.0, self.ends_at - time.monotonic())

    def passed(self, why: str = "", last: str | None = None) -> str:
        """The reason a judgement ended at its deadline: ``why`` says what it was doing,
        ``last`` is the failure of its last attempt, if one failed."""
        text = f"the judgement's deadline of {self.seconds:g} s passed{why}"
        return f"{text} (last failure: {last})" if last else text

    def too_close(self, reason: str) -> str:
        """``reason``, for a failure after which the wait before the next attempt would end
        past the deadline."""
        return (
            f"{reason} (no time is left for another attempt before the judgement's deadline "
            f"of {self.seconds:g} s)"
        )


def call_before(fn: Callable[[], T], seconds: float, *, then: Callable[[], Any]) -> T:
    """``fn()``'s result (or exception), from a thread of its own (the caller's context
    variables copied), waited for at most ``seconds``: :class:`Overdue` when it takes longer.
    ``then()`` runs on that thread once ``fn`` has ended, late or not."""
    done = threading.Event()
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def run() -> None:
        try:
            box["value"] = context.run(fn)
        except BaseException as exc:  # handed to the caller, who decides
            box["error"] = exc
        finally:
            try:
                then()
            finally:
                done.set()

    try:
        threading.Thread(target=run, name="tooltrail-judge-attempt", daemon=True).start()
    except BaseException:
        then()
        raise
    if not done.wait(seconds):
        raise Overdue(f"no answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
