"""Run checks that are not tooltrail's own each under a time limit, so that no check can hang
or end a run (tooltrail's own, limit ``None``, run to their end: ``registry.is_builtin``).

On the main thread (the batch pass and its worker processes, the pytest plugin) the checks run
right there under a timer (``checkalarm``): no hand-off. Anywhere else (``serve``, the live
inline evaluator) the checks of one evaluation (a trace and every case it meets) go to a
worker thread in one hand-off, and the caller waits. Python cannot kill a thread: a check past
its limit is given up, its result is a ``TimedOut``, the remaining checks go on on a fresh
worker, and the old worker is abandoned (a daemon thread) after ``threadstop`` asks it to
raise ``CheckStopped``: a busy or allocating Python loop stops at once; a check blocked inside
C (``time.sleep``, a socket read) stays parked until that call returns, and its thread then
ends.

Abandoned threads still alive are counted; at most ``MAX_ABANDONED`` at once. Past that, no
check with a limit starts (each is ``NotRun``) until one of them ends: a check that hangs every
time cannot pile up threads without bound. ``stats()`` has the counters; each event is logged
at most once a minute.

Whatever a check raises, ``SystemExit`` and ``KeyboardInterrupt`` included, comes back as
``Raised``; a real interrupt of the process (SIGINT) propagates as usual: it reaches the main
thread, which is waiting here for a worker, or tells ``checkalarm`` it is real.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Sequence
from contextvars import Context, copy_context
from dataclasses import dataclass
from queue import SimpleQueue
from typing import Any

from tooltrail.checks import checkalarm, threadstop
from tooltrail.checks.outcomes import CheckStopped, NotRun, Outcome, Raised, Step, TimedOut
from tooltrail.checks.protocol import Check
from tooltrail.checks.score import Score

__all__ = [
    "DEFAULT_CHECK_TIMEOUT_S",
    "MAX_ABANDONED",
    "CheckStopped",
    "NotRun",
    "Outcome",
    "Raised",
    "Step",
    "TimeLimitStats",
    "TimedOut",
    "outcome_score",
    "run_steps",
    "stats",
]

_log = logging.getLogger(__name__)

#: The default time limit of one check, in seconds (a suite's ``check_timeout`` sets another).
DEFAULT_CHECK_TIMEOUT_S = 10.0
#: Abandoned worker threads alive at once; past it, checks are not started.
MAX_ABANDONED = 16
#: Idle workers kept for the next evaluation (one per thread evaluating at once is enough).
_MAX_IDLE = 32
#: How often a wait on a built-in check (no limit) looks whether the next check began.
_BUILTIN_POLL_S = 0.05
#: At most one log line per kind of event in this many seconds.
_LOG_INTERVAL_S = 60.0


@dataclass(slots=True, frozen=True)
class TimeLimitStats:
    """Counters since the process started."""

    #: Checks given up at their time limit.
    timed_out: int
    #: Checks not started because ``MAX_ABANDONED`` given-up checks were still running.
    not_run: int
    #: Worker threads of given-up checks still running now.
    abandoned_alive: int
    #: Worker threads of given-up checks that have ended since.
    abandoned_ended: int
    #: Whether a given-up check can be stopped (``threadstop.AVAILABLE``).
    can_stop: bool


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.timed_out = 0
        self.not_run = 0
        self.abandoned_alive = 0
        self.abandoned_ended = 0
        self.logged: dict[str, float] = {}


_counters = _Counters()


def stats() -> TimeLimitStats:
    """The time-limit counters of this process."""
    c = _counters
    with c.lock:
        return TimeLimitStats(
            timed_out=c.timed_out,
            not_run=c.not_run,
            abandoned_alive=c.abandoned_alive,
            abandoned_ended=c.abandoned_ended,
            can_stop=threadstop.AVAILABLE,
        )


def _warn(kind: str, message: str, *args: Any) -> None:
    now = time.monotonic()
    with _counters.lock:
        last = _counters.logged.get(kind)
        if last is not None and now - last < _LOG_INTERVAL_S:
            return
        _counters.logged[kind] = now
    _log.warning(message, *args)


class _Job:
    """The steps of one evaluation and how far a worker got; ``lock`` guards the rest."""

    __slots__ = ("steps", "outcomes", "current", "finished", "lock", "abandoned", "context")

    def __init__(self, steps: Sequence[Step], outcomes: list[Outcome], start: int) -> None:
        self.steps = steps
        self.outcomes = outcomes
        #: The caller's context variables (the run's judge): the checks run inside a copy.
        self.context: Context = copy_context()
        #: (index of the step running, when it started): one tuple, so read in one go.
        self.current = (start, time.monotonic())
        #: Held until a worker has run every step (the caller waits to acquire it).
        self.finished = threading.Lock()
        self.finished.acquire()
        self.lock = threading.Lock()
        self.abandoned = False


class _Worker:
    """A daemon thread that runs jobs until one of them abandons it."""

    __slots__ = ("jobs", "thread", "abandoned")

    def __init__(self) -> None:
        self.jobs: SimpleQueue[_Job | None] = SimpleQueue()
        self.abandoned = False
        self.thread = threading.Thread(target=self._loop, name="tooltrail-check", daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        try:
            while (job := self.jobs.get()) is not None and self._run(job):
                pass
        except BaseException:  # noqa: BLE001 - CheckStopped landing between two checks
            pass
        finally:
            if self.abandoned:
                with _counters.lock:
                    _counters.abandoned_alive -= 1
                    _counters.abandoned_ended += 1

    @staticmethod
    def _run(job: _Job) -> bool:
        """Run the job's steps from ``job.current``; False when the caller gave the job up
        meanwhile (this thread then ends)."""
        steps, outcomes = job.steps, job.outcomes
        index = job.current[0]
        count = len(steps)
        run = job.context.run
        while index < count:
            check, ctx, _ = steps[index]
            outcome: Outcome
            try:
                outcome = run(check.evaluate, ctx)
            except BaseException as exc:  # noqa: BLE001 - SystemExit and the like included
                outcome = Raised(exc)
            with job.lock:
                if job.abandoned:
                    return False
                outcomes.append(outcome)
                index += 1
                job.current = (index, time.monotonic())
        job.finished.release()
        return True


_idle: list[_Worker] = []


def _take_worker() -> _Worker:
    while True:
        try:
            worker = _idle.pop()
        except IndexError:
            return _Worker()
        if worker.thread.is_alive():
            return worker


def _give_back(worker: _Worker) -> None:
    if len(_idle) < _MAX_IDLE:
        _idle.append(worker)
    else:
        worker.jobs.put(None)


def run_steps(steps: Sequence[Step]) -> list[Outcome]:
    """The outcome of each step, in order: what its check returned, or ``Raised``,
    ``TimedOut``, ``NotRun``. Returns within the sum of the limits (plus the built-in checks'
    own time: those, limit ``None``, run to their end).

    On the main thread, with SIGALRM free, the checks run right here under an interval timer
    (``checkalarm``): no hand-off. Elsewhere every step goes to a worker thread, in one
    hand-off."""
    if checkalarm.usable():
        return checkalarm.run_here(steps, _timed_out_here)
    return _run_on_worker(steps)


def _timed_out_here(check: Check, limit: float) -> TimedOut:
    with _counters.lock:
        _counters.timed_out += 1
    _warn(
        "timed-out",
        "tooltrail: check %s ran past its time limit of %s s and was given up (counter timed_out)",
        _name_of(check),
        f"{limit:g}",
    )
    return TimedOut(limit)


def _run_on_worker(steps: Sequence[Step]) -> list[Outcome]:
    outcomes: list[Outcome] = []
    count = len(steps)
    while len(outcomes) < count:
        with _counters.lock:
            abandoned = _counters.abandoned_alive
        if abandoned >= MAX_ABANDONED:
            _warn(
                "not-run",
                "tooltrail: %d checks given up at their time limit are still running; further "
                "checks are not started until one ends (counter not_run)",
                abandoned,
            )
            _run_without_timed(steps, outcomes, abandoned)
            break
        worker = _take_worker()
        job = _Job(steps, outcomes, len(outcomes))
        worker.jobs.put(job)
        if _wait(job, worker):
            _give_back(worker)
    return outcomes


def _run_without_timed(steps: Sequence[Step], outcomes: list[Outcome], abandoned: int) -> None:
    """The rest of ``steps`` past the bound of abandoned checks: tooltrail's own checks run
    here, the others are ``NotRun``."""
    not_run = 0
    for check, ctx, limit in steps[len(outcomes) :]:
        if limit is not None:
            outcomes.append(NotRun(abandoned))
            not_run += 1
            continue
        try:
            outcomes.append(check.evaluate(ctx))
        except Exception as exc:  # noqa: BLE001 - reported as the check's error
            outcomes.append(Raised(exc))
    with _counters.lock:
        _counters.not_run += not_run


def _wait(job: _Job, worker: _Worker) -> bool:
    """Wait for ``job``; True when its worker ran every step, False when a step ran past its
    limit (its ``TimedOut`` is appended and the worker abandoned)."""
    steps = job.steps
    try:
        while True:
            index, started = job.current
            if index >= len(steps):  # every step ran: the worker is about to say so
                job.finished.acquire()
                return True
            limit = steps[index][2]
            if limit is None:  # a built-in check: no limit; look again at the next one
                if job.finished.acquire(timeout=_BUILTIN_POLL_S):
                    return True
                continue
            if job.finished.acquire(timeout=max(0.0, started + limit - time.monotonic())):
                return True
            with job.lock:
                if job.current != (index, started) or time.monotonic() - started < limit:
                    continue  # the check ended meanwhile: wait for the next one
                job.outcomes.append(TimedOut(limit))
                _abandon(job, worker)
                with _counters.lock:
                    _counters.timed_out += 1
            name = _name_of(steps[index][0])
            _warn(
                "timed-out",
                "tooltrail: check %s ran past its time limit of %s s and was given up "
                "(counter timed_out)",
                name,
                f"{limit:g}",
            )
            return False
    except BaseException:  # a real interrupt of the waiting thread: leave the checks behind
        with job.lock:
            if not job.abandoned:
                _abandon(job, worker)
        raise


def _abandon(job: _Job, worker: _Worker) -> None:
    """Give ``worker`` up (``job.lock`` held: the worker cannot end before it is asked to
    stop, so its thread id is still its own)."""
    job.abandoned = True
    worker.abandoned = True
    with _counters.lock:
        _counters.abandoned_alive += 1
    ident = worker.thread.ident
    if ident is not None:
        threadstop.raise_in(ident, CheckStopped)


def _name_of(check: Check) -> str:
    name = getattr(check, "name", None)
    return repr(name) if isinstance(name, str) else type(check).__name__


def _after_fork_in_child() -> None:
    """A forked child (a batch worker process) has none of the parent's threads."""
    _idle.clear()
    global _counters
    _counters = _Counters()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def outcome_score(check: Check, outcome: TimedOut | Raised | NotRun) -> Score:
    """The failing score of a check that timed out, raised or was not run; it names the check
    (and its limit) and has ``error`` set. A check configured ``required: false`` stays
    advisory."""
    name = _name_of(check)
    label = getattr(check, "name", None)
    label = label if isinstance(label, str) else type(check).__name__
    if outcome.__class__ is TimedOut:
        limit = outcome.limit  # type: ignore[union-attr]
        explanation = (
            f"Check {name} ran past its time limit of {limit:g} s and was given up (check_timeout)."
        )
        error = "CheckTimeout"
    elif outcome.__class__ is Raised:
        exc = outcome.error  # type: ignore[union-attr]
        explanation = f"Scorer {name} failed: {type(exc).__name__}: {exc}"
        error = type(exc).__name__
    else:
        explanation = (
            f"Check {name} was not run: {outcome.abandoned} checks given up at their time "  # type: ignore[union-attr]
            "limit are still running."
        )
        error = "CheckNotRun"
    return Score.failing(
        label,
        label,
        explanation,
        error=error,
        required=getattr(check, "required", True) is not False,
    )
