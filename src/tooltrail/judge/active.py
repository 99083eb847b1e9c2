"""The judge a run uses when a judge check names none of its own.

``eval``, ``serve``, live inline evaluation and the pytest plugin set it from their settings
(``--judge-model``, a suite's ``judge:`` block); Python code uses :func:`use_judge`. A context
variable, so that threads and tasks started inside ``use_judge`` see it too when they copy the
context, and two runs in one process do not share it by accident.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
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


#: A model string (``openai:gpt-4o-mini``) -> the judge that asks that model; raises
#: ``ValueError`` for a model it cannot serve.
ModelResolver = Callable[[str], Judge]
#: The process's resolver (a list cell, so that threads see what was set).
_RESOLVER: list[ModelResolver | None] = [None]
#: A run's own resolver (``use_model_resolver``), over the process's: two runs in one process
#: each resolve through their own runner.
_SCOPED: ContextVar[ModelResolver | None] = ContextVar("tooltrail_judge_resolver", default=None)


def set_model_resolver(resolve: ModelResolver | None) -> ModelResolver | None:
    """Install how a judge check that names a ``model`` (a YAML turn's ``judge: {model}``)
    gets its judge; returns the resolver it replaces. The judge engine's wiring installs one."""
    previous = _RESOLVER[0]
    _RESOLVER[0] = resolve
    return previous


@contextmanager
def use_model_resolver(resolve: ModelResolver | None) -> Iterator[None]:
    """Inside this block (and threads that copy its context) ``judge_for_model`` asks
    ``resolve`` first; the process's resolver (``set_model_resolver``) stays as it was."""
    token = _SCOPED.set(resolve)
    try:
        yield
    finally:
        _SCOPED.reset(token)


def judge_for_model(model: str) -> Judge | None:
    """The judge for ``model`` from this context's resolver, else the process's; ``None``
    when none is installed. A resolver's ``ValueError`` (a model it cannot serve) passes
    through."""
    resolve = _SCOPED.get() or _RESOLVER[0]
    return None if resolve is None else resolve(model)
