"""The judge of one run: built from the suite's ``judge:`` block and the command line's
overrides, installed for the run's judge checks, totalled, and closed at the end.

Part of ``score``, beside the runner. ``eval``, ``serve``, live inline evaluation and the
pytest plugin call :func:`run_judge_settings` once (``None``: no judge check in the suite, so
nothing is built and the run costs what it did without judges), then :func:`judging` around
the evaluation. The judge is installed in context variables (``judge.use_judge`` and
``judge.use_model_resolver``), so two runs in one process each use their own, and threads
that copy the context (``checks.timelimit``'s workers, :func:`parallel_map`) see it.

Worker processes and Dask workers get the :class:`~tooltrail.judge.JudgeSettings` (frozen,
picklable) and build one judge per process (:func:`process_judging`), kept for the process's
next tasks. What judging cost is not shipped back from them: each judge score carries its
record (``Score.judge``), and the report's summary adds those up (``results.JudgeSummary``),
across processes and for reports read back alike.
"""

from __future__ import annotations

import atexit
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from contextvars import copy_context
from dataclasses import fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

from tooltrail.score.needs import asks_judge

if TYPE_CHECKING:
    from tooltrail.checks.registry import Registry
    from tooltrail.judge import JudgeRunner, JudgeSettings, JudgeTotals
    from tooltrail.suite import TestSuite

T = TypeVar("T")
R = TypeVar("R")


def run_judge_settings(
    suite: TestSuite,
    overrides: Mapping[str, Any] | None = None,
    registry: Registry | None = None,
) -> JudgeSettings | None:
    """The settings of the run's judge: the suite's ``judge:`` block, ``overrides`` over it
    (a ``None`` value: not given), the suite's ``prices:`` when the block has none. ``None``
    when no check of the suite asks a judge. Raises ``JudgeConfigError`` for a bad override."""
    if not asks_judge(suite.cases, registry):
        return None
    from tooltrail.judge import JudgeSettings, override_settings

    settings = suite.judge or JudgeSettings()
    if overrides:
        settings = override_settings(settings, overrides, where="judge override")
    if settings.prices is None and suite.prices:
        settings = replace(settings, prices=dict(suite.prices))
    return settings


def build_run_judge(settings: JudgeSettings) -> JudgeRunner | None:
    """The runner ``settings`` describe; ``None`` without a model (judge checks that name a
    model of their own still get one, through :func:`judging`'s resolver)."""
    if settings.model is None:
        return None
    from tooltrail.judge import build_judge

    return build_judge(settings)


def check_judge(settings: JudgeSettings) -> None:
    """Build the judge ``settings`` describe once and close it: a missing SDK, an unknown
    provider or an unusable cache file is an error before any trace is read."""
    runner = build_run_judge(settings)
    if runner is not None:
        runner.close()


class _Resolver:
    """Judge model strings -> runners: the run's runner's ``for_model`` (shared budget,
    totals, bound and cache), or runners built from the settings when the run has no model."""

    def __init__(self, settings: JudgeSettings, runner: JudgeRunner | None) -> None:
        self.settings = settings
        self.runner = runner
        self.own: dict[str, JudgeRunner] = {}
        self.lock = threading.Lock()

    def __call__(self, model: str) -> Any:
        if self.runner is not None:
            return self.runner.for_model(model)
        with self.lock:
            known = self.own.get(model)
            if known is None:
                from tooltrail.judge import build_judge

                known = self.own[model] = build_judge(replace(self.settings, model=model))
            return known

    def totals(self) -> JudgeTotals:
        from tooltrail.judge import JudgeTotals

        found = [self.runner] if self.runner is not None else []
        with self.lock:
            found += list(self.own.values())
        return add_totals(r.totals() for r in found) if found else JudgeTotals()

    def close(self) -> None:
        with self.lock:
            own = list(self.own.values())
        for runner in ([self.runner] if self.runner is not None else []) + own:
            runner.close()


class RunJudge:
    """The judge installed for a run: what its judgements cost so far (:meth:`totals`)."""

    def __init__(self, resolver: _Resolver) -> None:
        self._resolver = resolver
        self.settings = resolver.settings
        self.runner = resolver.runner

    def totals(self) -> JudgeTotals:
        """Calls, cache hits, skips, tokens and dollars over the run's runners."""
        return self._resolver.totals()

    @property
    def concurrency(self) -> int:
        return self.settings.concurrency


@contextmanager
def judging(settings: JudgeSettings | None, *, close: bool = True) -> Iterator[RunJudge | None]:
    """Build the run's judge from ``settings`` and install it for the block (``None``:
    nothing built, nothing installed). The runners are closed at the end unless ``close`` is
    false (a worker process's runner, kept for its next task)."""
    if settings is None:
        yield None
        return
    resolver = _Resolver(settings, build_run_judge(settings))
    with ExitStack() as stack:
        if close:
            stack.callback(resolver.close)
        stack.enter_context(installed(resolver))
        yield RunJudge(resolver)


@contextmanager
def installed(resolve: Callable[[str], Any]) -> Iterator[None]:
    """``resolve`` (and its runner, when it has one) as this context's judge."""
    from tooltrail.judge import use_judge, use_model_resolver

    runner = getattr(resolve, "runner", None)
    with use_judge(runner), use_model_resolver(resolve):
        yield


_PROCESS: dict[str, RunJudge] = {}
_PROCESS_LOCK = threading.Lock()


@contextmanager
def process_judging(settings: JudgeSettings | None) -> Iterator[RunJudge | None]:
    """:func:`judging` for a task in a worker process (or a Dask worker): one judge per
    process and settings, kept for the process's next tasks (its cache connection, its
    clients, its budget), closed when the process exits."""
    if settings is None:
        yield None
        return
    key = repr(settings)
    with _PROCESS_LOCK:
        run = _PROCESS.get(key)
        if run is None:
            resolver = _Resolver(settings, build_run_judge(settings))
            run = _PROCESS[key] = RunJudge(resolver)
            atexit.register(resolver.close)
    with installed(run._resolver):
        yield run


def close_process_judges() -> None:
    """Close this process's judges (:func:`process_judging`): the batch driver calls it after
    tasks that ran in its own process."""
    with _PROCESS_LOCK:
        runs = list(_PROCESS.values())
        _PROCESS.clear()
    for run in runs:
        run._resolver.close()


def add_totals(parts: Iterable[JudgeTotals]) -> JudgeTotals:
    """The sum of ``parts`` (workers' or tasks' totals)."""
    from tooltrail.judge import JudgeTotals

    total = JudgeTotals()
    for part in parts:
        for f in fields(JudgeTotals):
            if f.name == "models":
                total.models |= part.models
            else:
                setattr(total, f.name, getattr(total, f.name) + getattr(part, f.name))
    return total


def parallel_map(fn: Callable[[T], R], items: list[T], workers: int) -> list[R]:
    """``fn`` over ``items`` on up to ``workers`` threads, in order, each call in a copy of
    this context (so it sees the run's judge). Judge calls then run side by side, the
    runner's bound on requests in flight holding them back."""
    if workers <= 1 or len(items) <= 1:
        return [fn(item) for item in items]
    pool = ThreadPoolExecutor(max_workers=min(workers, len(items)), thread_name_prefix="judging")
    try:
        futures = [pool.submit(copy_context().run, fn, item) for item in items]
        return [future.result() for future in futures]
    finally:  # interrupted: what has not started is dropped, not waited for
        pool.shutdown(wait=False, cancel_futures=True)
