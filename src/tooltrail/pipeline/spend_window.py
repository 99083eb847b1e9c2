"""A judge budget per window of time (so many dollars an hour, or a day), one account for every
worker process.

``SpendWindow`` is the ``judge.spend.SpendAccount`` that ``serve`` and live evaluation install
for their judge checks. Windows are aligned to the clock (an hour window starts on the hour,
UTC; a day at midnight UTC), or to ``origin`` with a window length of one's own. Within a
window, judgements may call a model until what they cost reaches ``budget_usd``; past it every
judge check gives a ``JudgeBudget`` error score (``skipped="budget"``) until the window turns,
and the next window starts from nothing.

**One account, however many processes.** The numbers live in a ``SpendState``: a list guarded
by a condition for the threads of one process, or (``SpendState.shared``) an array in shared
memory with a multiprocessing condition, made by ``serve``'s router before it starts its
workers and handed to each. Every reserve and settle is one short critical section.

**Stopping at the budget.** A judgement's cost is known only once it ends, so each one admitted
is reserved at the mean cost of the judgements settled so far; a judgement is admitted while
what was spent plus what is reserved stays under the budget, and waits (for a settle, or the
window's turn) when the reserved judgements might use the rest. Before any cost is known, one
judgement at a time is admitted. So a window's spend passes its budget by less than one
judgement when judgements cost about the same (a judgement costing far more than the mean may
pass it by that difference), never by one per thread or process. A cached verdict asks
nothing and costs nothing. A judgement under way when the window turns is charged to the new
window.

``ManualClock`` is a clock that moves only when told, for tests and simulations (shared across
processes when made with ``ManualClock.shared``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

#: Window lengths by name (``per:``), seconds.
WINDOWS: dict[str, float] = {"hour": 3600.0, "day": 86400.0}
#: The longest a judgement waits to learn whether the budget has room left; then it is refused.
DEFAULT_MAX_WAIT_S = 120.0
#: How often a waiting judgement looks at the clock again (the window may turn meanwhile).
_RECHECK_S = 0.5

# Slots of the state.
_WINDOW, _SPENT, _RESERVED, _IN_FLIGHT, _UNKNOWN = 0, 1, 2, 3, 4
_TOTAL_COST, _SETTLED, _JUDGED, _REFUSED, _REFUSED_ALL = 5, 6, 7, 8, 9
_SLOTS = 10
_NO_WINDOW = -1.0


def require_price(suite: Any, overrides: Mapping[str, Any] | None = None) -> None:
    """Raise ``ValueError`` when ``suite``'s judge checks would spend from a window without
    their model's price (their cost would never count): the run's judge settings
    (``tooltrail.score.run_judge``, ``overrides`` over the suite's ``judge:`` block) need a
    model and its price."""
    from tooltrail.judge.prices import price_of
    from tooltrail.score import run_judge_settings

    settings = run_judge_settings(suite, overrides)
    if settings is None:  # no judge check: nothing to spend
        return
    if settings.model is None or price_of(settings.prices, settings.model) is None:
        raise ValueError(
            "a judge budget per window needs the judge model's price: the suite's `prices:` "
            f"(or its judge: block's) for {settings.model or 'the judge model'!r}"
        )


class SpendState:
    """The numbers of one account and the condition that guards them; picklable into a
    ``spawn``ed process when made with :meth:`shared`."""

    def __init__(self, values: Any, condition: Any) -> None:
        self.values = values
        self.condition = condition

    @classmethod
    def local(cls) -> SpendState:
        """For the threads of one process."""
        values = [0.0] * _SLOTS
        values[_WINDOW] = _NO_WINDOW
        return cls(values, threading.Condition())

    @classmethod
    def shared(cls, context: Any) -> SpendState:
        """In shared memory, for processes of ``context`` (a multiprocessing context) started
        after this is made."""
        values = context.Array("d", _SLOTS, lock=False)
        values[_WINDOW] = _NO_WINDOW
        return cls(values, context.Condition())


@dataclass(frozen=True, slots=True)
class _Ticket:
    window: int
    #: The cost reserved, ``None`` when no cost was known yet.
    reserved: float | None


class SpendWindow:
    """``budget_usd`` per window of ``window_s`` seconds (``per`` names one: ``hour``, ``day``),
    for every holder of ``state`` (module docstring). ``clock``: seconds since the epoch."""

    def __init__(
        self,
        budget_usd: float,
        *,
        per: str = "hour",
        window_s: float | None = None,
        state: SpendState | None = None,
        clock: Callable[[], float] = time.time,
        origin: float = 0.0,
        max_wait_s: float = DEFAULT_MAX_WAIT_S,
    ) -> None:
        if isinstance(budget_usd, bool) or not budget_usd >= 0 or not math.isfinite(budget_usd):
            raise ValueError(
                f"a spend window's budget must be 0 or more US dollars, not {budget_usd!r}"
            )
        if window_s is None:
            if per not in WINDOWS:
                raise ValueError(f"a spend window is per hour or day, not {per!r}")
            window_s = WINDOWS[per]
        if not window_s > 0:
            raise ValueError(f"a spend window must last more than 0 seconds, not {window_s!r}")
        self.budget_usd = float(budget_usd)
        self.per = per
        self.window_s = float(window_s)
        self.state = state if state is not None else SpendState.local()
        self.clock = clock
        self.origin = origin
        self.max_wait_s = max_wait_s

    # -- the SpendAccount protocol ----------------------------------------------------------

    def reserve(self) -> _Ticket | None:
        values, condition = self.state.values, self.state.condition
        waited_until = time.monotonic() + self.max_wait_s
        with condition:
            while True:
                window = self._roll()
                spent = values[_SPENT]
                if spent >= self.budget_usd:
                    values[_REFUSED] += 1
                    values[_REFUSED_ALL] += 1
                    return None
                settled = values[_SETTLED]
                estimate = values[_TOTAL_COST] / settled if settled else None
                busy = values[_IN_FLIGHT] > 0
                unsure = values[_UNKNOWN] > 0 or (estimate is None and busy)
                if not unsure and spent + values[_RESERVED] < self.budget_usd:
                    values[_IN_FLIGHT] += 1
                    values[_JUDGED] += 1
                    if estimate is None:
                        values[_UNKNOWN] += 1
                    else:
                        values[_RESERVED] += estimate
                    return _Ticket(window, estimate)
                left = waited_until - time.monotonic()
                if left <= 0:
                    values[_REFUSED] += 1
                    values[_REFUSED_ALL] += 1
                    return None
                condition.wait(min(left, _RECHECK_S))

    def settle(self, ticket: Any, cost_usd: float) -> None:
        if not isinstance(ticket, _Ticket):
            return
        values, condition = self.state.values, self.state.condition
        cost = cost_usd if cost_usd > 0 and math.isfinite(cost_usd) else 0.0
        with condition:
            self._roll()
            values[_IN_FLIGHT] = max(0.0, values[_IN_FLIGHT] - 1)
            if ticket.reserved is None:
                values[_UNKNOWN] = max(0.0, values[_UNKNOWN] - 1)
            else:
                values[_RESERVED] = max(0.0, values[_RESERVED] - ticket.reserved)
            values[_SPENT] += cost
            values[_TOTAL_COST] += cost
            values[_SETTLED] += 1
            condition.notify_all()

    def refusal(self) -> str:
        stats = self.stats()
        return (
            f"the judge spend window of {self.budget_usd:g} USD per {self._per_words()} is "
            f"spent ({stats['judge_window_spent_usd']:.6g} USD since "
            f"{stats['judge_window_start']}): no judge is called until "
            f"{stats['judge_window_end']}"
        )

    # -- what /stats says -------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The current window: its start and end (UTC, ISO 8601), what it spent and what is
        left of its budget, judgements admitted and refused in it, and in flight now."""
        values, condition = self.state.values, self.state.condition
        with condition:
            window = self._roll()
            spent = values[_SPENT]
            judged, refused = values[_JUDGED], values[_REFUSED]
            in_flight, refused_all = values[_IN_FLIGHT], values[_REFUSED_ALL]
        start = self.origin + window * self.window_s
        return {
            "judge_window_budget_usd": self.budget_usd,
            "judge_window_s": self.window_s,
            "judge_window_start": _iso(start),
            "judge_window_end": _iso(start + self.window_s),
            "judge_window_spent_usd": round(spent, 6),
            "judge_window_remaining_usd": round(max(0.0, self.budget_usd - spent), 6),
            "judge_window_judged": int(judged),
            "judge_window_refused": int(refused),
            "judge_window_in_flight": int(in_flight),
            "judge_window_refused_total": int(refused_all),
        }

    def _roll(self) -> int:
        """The current window's index, starting it afresh when the clock has moved into a new
        one (called with the condition held)."""
        values = self.state.values
        window = math.floor((self.clock() - self.origin) / self.window_s)
        if values[_WINDOW] != window:
            values[_WINDOW] = float(window)
            values[_SPENT] = 0.0
            values[_JUDGED] = 0.0
            values[_REFUSED] = 0.0
            self.state.condition.notify_all()
        return window

    def _per_words(self) -> str:
        if self.window_s == WINDOWS.get(self.per):
            return self.per
        return f"{self.window_s:g} s"


def _iso(seconds: float) -> str:
    try:
        return datetime.fromtimestamp(seconds, tz=timezone.utc).isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError):
        return f"{seconds:.0f}"


class ManualClock:
    """Seconds that move only when told (:meth:`advance`), for a spend window under test. One
    made with :meth:`shared` is the same clock in every process started after it."""

    def __init__(self, start: float = 0.0, *, value: Any = None) -> None:
        self._value = value
        self._local = float(start)
        if value is not None:
            value.value = float(start)

    @classmethod
    def shared(cls, context: Any, start: float = 0.0) -> ManualClock:
        return cls(start, value=context.Value("d", start))

    def __call__(self) -> float:
        return float(self._value.value) if self._value is not None else self._local

    def advance(self, seconds: float) -> None:
        if self._value is not None:
            with self._value.get_lock():
                self._value.value += seconds
        else:
            self._local += seconds
