"""Checks on the main thread under SIGALRM: a time limit with no thread hand-off.

The batch pass (and its worker processes) and the pytest plugin evaluate on the main thread,
trace after trace; handing each trace to a worker thread would cost two thread switches. There
an interval timer (``setitimer(ITIMER_REAL)``) does the job: past the limit its handler raises
``CheckStopped`` inside the check, which stops a busy or allocating loop at its next bytecode
and a ``time.sleep`` or socket read at once (the call fails with EINTR, and the handler's
exception ends it). The timer fires again every ``_REFIRE_S`` until the check returns, for a
check that swallows the first one.

While a check runs, SIGINT goes through a handler that notes a real interrupt before the one
installed (``KeyboardInterrupt`` by default): a ``KeyboardInterrupt`` the check raises itself is
its error, a real one stops the run.

Used only where it can be: on the main thread, on a platform with ``setitimer``, and while
nothing else uses SIGALRM (``usable``); its handler, once installed, stays (it does nothing
outside a check). Elsewhere ``timelimit`` hands the checks to a worker thread.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Sequence
from typing import Any

from tooltrail.checks.outcomes import CheckStopped, Outcome, Raised, Step
from tooltrail.checks.protocol import Check

try:  # ``signal``'s own C functions: the same calls, without the wrapping of each handler in
    # an enum (that wrapping is most of the cost of a check run here)
    from _signal import getsignal as _getsignal
    from _signal import signal as _setsignal
except ImportError:  # pragma: no cover - another interpreter
    _getsignal, _setsignal = signal.getsignal, signal.signal

#: After the first ``CheckStopped``, the timer fires again this often until the check returns.
_REFIRE_S = 0.1

_armed = False
_real_interrupt = False


def _on_alarm(signum: int, frame: Any) -> None:
    if _armed:
        raise CheckStopped


def usable() -> bool:
    """Whether checks can run here under SIGALRM: the main thread, ``setitimer`` exists, and
    SIGALRM has no handler but this module's."""
    if (
        not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        return False
    handler = _getsignal(signal.SIGALRM)
    if handler is _on_alarm:
        return True
    if handler != signal.SIG_DFL or signal.getitimer(signal.ITIMER_REAL)[0] > 0:
        return False  # someone else's handler, or a timer of the program's own is running
    _setsignal(signal.SIGALRM, _on_alarm)  # kept: it does nothing outside a check
    return True


def run_here(steps: Sequence[Step], timed_out: Callable[[Check, float], Outcome]) -> list[Outcome]:
    """Run ``steps`` on this (the main) thread, each timed one under its limit; ``timed_out``
    makes the outcome of a check past it."""
    global _real_interrupt
    previous = _getsignal(signal.SIGINT)
    watch = callable(previous) or previous in (signal.SIG_DFL, signal.SIG_IGN)
    _real_interrupt = False
    if watch:
        _setsignal(signal.SIGINT, _interrupt_handler(previous))
    outcomes: list[Outcome] = []
    append = outcomes.append
    try:
        for check, ctx, limit in steps:
            if limit is None:  # tooltrail's own check: no timer
                try:
                    append(check.evaluate(ctx))
                except Exception as exc:  # noqa: BLE001 - reported as the check's error
                    append(Raised(exc))
                continue
            try:
                append(_timed(check, ctx, limit))
            except CheckStopped:  # the timer fired as the check returned
                _disarm()
                append(timed_out(check, limit))
            except KeyboardInterrupt as exc:
                if _real_interrupt:
                    raise
                append(Raised(exc))
            except BaseException as exc:  # noqa: BLE001 - SystemExit and the like included
                append(Raised(exc))
    finally:
        _disarm()
        if watch:
            _setsignal(signal.SIGINT, previous)
    return outcomes


def _timed(check: Check, ctx: Any, limit: float) -> Any:
    """``check.evaluate(ctx)`` with the timer armed; ``CheckStopped`` past ``limit``."""
    global _armed
    _armed = True
    signal.setitimer(signal.ITIMER_REAL, limit, _REFIRE_S)
    try:
        return check.evaluate(ctx)
    finally:
        _disarm()


def _disarm() -> None:
    global _armed
    _armed = False
    signal.setitimer(signal.ITIMER_REAL, 0)


def _interrupt_handler(previous: Any) -> Callable[[int, Any], None]:
    def on_sigint(signum: int, frame: Any) -> None:
        global _real_interrupt
        _real_interrupt = True
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:
            raise KeyboardInterrupt

    return on_sigint
