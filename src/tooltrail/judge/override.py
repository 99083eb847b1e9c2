"""A judge that answers every judge check of a context, whatever judge or model it names.

``serve`` and live evaluation judge traces in a bounded queue (``pipeline.judge_queue``); a
trace that finds it full is evaluated at once with a judge that calls no model, so the thread
evaluating it is never held by a model, even for a check that carries a judge of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from tooltrail.judge.outcome import Judge

_OVERRIDE: ContextVar[Judge | None] = ContextVar("tooltrail_judge_override", default=None)


def overriding_judge() -> Judge | None:
    """The judge :func:`override_judges` set for this context, else ``None``."""
    return _OVERRIDE.get()


@contextmanager
def override_judges(judge: Judge) -> Iterator[None]:
    """Every judge check inside this block asks ``judge`` (``checks.judges`` looks here
    first)."""
    token = _OVERRIDE.set(judge)
    try:
        yield
    finally:
        _OVERRIDE.reset(token)
