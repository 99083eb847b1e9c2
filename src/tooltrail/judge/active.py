"""The judge a run uses when a judge check names none of its own.

``eval``, ``serve``, live inline evaluation and the pytest plugin set it from their settings
(``--judge-model``, a suite's ``judge:`` block); Python code uses :func:`use_judge`. A context
variable, so that threads and tasks started inside ``use_judge`` see it too when they copy the
context, and two runs in one process do not share it by accident.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tooltrail.judge.outcome import Judge

_ACTIVE: ContextVar[Judge | None] = ContextVar("tooltrail_judge", default=None)


def active_judge() -> Judge | None:
    """The judge set for this context, else ``None`` (a judge check then reports an error)."""
    return _ACTIVE.get()


@contextmanager
def use_judge(judge: Judge | None) -> Iterator[None]:
    """Judge checks inside this block use ``judge`` unless they carry one of their own."""
    token = _ACTIVE.set(judge)
    try:
        yield
    finally:
        _ACTIVE.reset(token)
