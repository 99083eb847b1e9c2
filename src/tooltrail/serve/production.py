"""``serve`` in production: its judge spend window, and the sampling counters of ``/stats``.

- **The spend window** (``--judge-budget USD --judge-budget-per hour|day``): one
  ``pipeline.spend_window.SpendWindow`` for the receiver, its numbers in a ``SpendState`` that
  is local with one process and in shared memory with ``--workers`` (made by the router, handed
  to every worker, read by the router for ``/stats``). It needs the judge model's price, which
  :func:`check_spend` asks for before anything starts.
- **Sampling counters**: per sampled check (``case/check``, ``tooltrail.sampling``), first
  verdicts it judged and sampled out. Workers publish them flat in their counter rows
  (``sampled_judged:case/check``, ``sampled_out:case/check``, after ``WORKER_STATS``);
  :func:`sampling_of` puts them back in ``/stats``'s ``sampling`` object.
"""

from __future__ import annotations

from typing import Any

from tooltrail.pipeline.spend_window import SpendState, SpendWindow, require_price
from tooltrail.sampling import sampled_checks
from tooltrail.serve.config import ServeConfig
from tooltrail.suite import TestSuite

JUDGED_PREFIX = "sampled_judged:"
OUT_PREFIX = "sampled_out:"


def has_window(config: ServeConfig) -> bool:
    """Whether ``config`` asks for a spend window (a budget per hour, day or given length)."""
    return config.judge_budget_per is not None or config.judge_budget_window_s is not None


def check_spend(config: ServeConfig, suite: TestSuite) -> None:
    """Raise ``ValueError`` for a spend window that cannot work: no budget, or judge checks
    whose model has no price (their cost would never count)."""
    if not has_window(config):
        return
    if config.judge_budget is None:
        raise ValueError("--judge-budget-per needs --judge-budget USD: the budget of each window")
    require_price(suite, config.judge_overrides())


def spend_window(config: ServeConfig, state: SpendState | None = None) -> SpendWindow | None:
    """The receiver's spend window (``None``: none asked for); ``state`` shared by workers."""
    if not has_window(config) or config.judge_budget is None:
        return None
    kwargs: dict[str, Any] = {}
    if config.judge_budget_clock is not None:
        kwargs["clock"] = config.judge_budget_clock
    return SpendWindow(
        config.judge_budget,
        per=config.judge_budget_per or "hour",
        window_s=config.judge_budget_window_s,
        state=state,
        **kwargs,
    )


def sampling_keys(suite: TestSuite) -> tuple[str, ...]:
    """The flat counter names of the suite's sampled checks, in suite order."""
    keys: list[str] = []
    for check in sampled_checks(suite.cases):
        keys += [JUDGED_PREFIX + check.key, OUT_PREFIX + check.key]
    return tuple(keys)


def flat_sampling(stats: dict[str, Any]) -> dict[str, int]:
    """``stats['sampling']`` (``InlineEvaluator.sampling_stats``) as flat counters."""
    flat: dict[str, int] = {}
    for key, counts in (stats.get("sampling") or {}).items():
        flat[JUDGED_PREFIX + key] = int(counts.get("judged", 0))
        flat[OUT_PREFIX + key] = int(counts.get("sampled_out", 0))
    return flat


def sampling_of(suite: TestSuite, flat: dict[str, Any]) -> dict[str, Any]:
    """The ``sampling`` object of ``/stats`` from flat counters (all workers added up)."""
    return {
        check.key: {
            "rate": check.sample.rate,
            "by": check.sample.by,
            "judged": int(flat.get(JUDGED_PREFIX + check.key, 0)),
            "sampled_out": int(flat.get(OUT_PREFIX + check.key, 0)),
        }
        for check in sampled_checks(suite.cases)
    }
