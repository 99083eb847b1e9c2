"""The judge a run uses when a judge check names none of its own.

``eval``, ``serve``, live inline evaluation and the pytest plugin set it from their settings
(``--judge-model``, a suite's ``judge:`` block); Python code uses :func:`use_judge`. A context
variable, so that threads and tasks started inside ``use_judge`` see it too when they copy the
context, and two runs in one process do not share it by accident.

When nothing was installed, the judge is the one pytest-agent-eval's configuration names:
``model`` of ``[tool.agent_eval]`` in ``./pyproject.toml`` (``judge.agent_eval_config``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from tooltrail.judge.outcome import Judge, JudgeOutcome

#: Stands for "no judge was set": ``use_judge(None)`` sets none on purpose.
_UNSET: Any = object()
_ACTIVE: ContextVar[Any] = ContextVar("tooltrail_judge", default=_UNSET)


def active_judge() -> Judge | None:
    """The judge set for this context; when none was set (not even ``use_judge(None)``), the
    judge of ``[tool.agent_eval] model`` in ``./pyproject.toml`` (:func:`configured_judge`);
    else ``None`` (a judge check then reports an error)."""
    judge = _ACTIVE.get()
    if judge is _UNSET:
        try:
            return configured_judge()
        except ValueError as exc:  # a bad table or model: every judge check says so
            return _Unusable(str(exc))
    return judge  # type: ignore[no-any-return]


class _Unusable:
    """The judge of a configuration that cannot be used: every judgement is an error saying
    why (the check's score then names it), none raises."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def judge(
        self, prompt: str, *, samples: int = 1, params: dict[str, Any] | None = None
    ) -> JudgeOutcome:
        return JudgeOutcome(verdict=None, model="[tool.agent_eval]", error=self.reason)


def configured_judge(directory: Path | None = None) -> Judge | None:
    """The judge pytest-agent-eval's configuration names (``[tool.agent_eval]`` ``model``,
    ``retries``, ``timeout`` of ``pyproject.toml`` in ``directory``, default the working
    directory), else ``None``. ``JudgeConfigError`` for a bad table or an unusable model."""
    from tooltrail.judge.agent_eval_config import agent_eval_judge_settings

    settings = agent_eval_judge_settings((directory or Path.cwd()) / "pyproject.toml")
    if not settings:
        return None
    from tooltrail.judge.fallback import model_judge

    return model_judge(
        settings["model"], retries=settings.get("retries"), timeout_s=settings.get("timeout_s")
    )


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


def resolver_installed() -> bool:
    """Whether a run or the process installed a model resolver (else :func:`judge_for_model`
    asks the model's SDK with the default settings)."""
    return _SCOPED.get() is not None or _RESOLVER[0] is not None


def judge_for_model(model: str) -> Judge | None:
    """The judge for ``model`` from this context's resolver, else the process's; ``None``
    when none is installed. A resolver's ``ValueError`` (a model it cannot serve) passes
    through. (pytest-agent-eval's evaluators ask ``judge.fallback.model_judge`` when
    :func:`resolver_installed` is false.)"""
    resolve = _SCOPED.get() or _RESOLVER[0]
    return None if resolve is None else resolve(model)
