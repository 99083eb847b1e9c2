"""The judge flags ``eval`` and ``serve`` share, defined once: they override a suite's
``judge:`` block (``score.run_judge_settings``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

_OPTIONS = (
    click.option(
        "--judge-model",
        metavar="MODEL",
        help="The judge model of the suite's judge checks (openai:gpt-4o-mini, "
        "anthropic:claude-3-5-haiku-latest), over the suite's judge: block.",
    ),
    click.option(
        "--judge-cache",
        "judge_cache_path",
        metavar="PATH",
        type=click.Path(dir_okay=False, path_type=Path),
        help="The judge's verdict cache (SQLite) [default: the suite's, else the user cache dir].",
    ),
    click.option(
        "--no-judge-cache",
        is_flag=True,
        help="Ask the judge model every time: no verdict is read from or written to the cache.",
    ),
    click.option(
        "--judge-concurrency",
        type=click.IntRange(min=1),
        metavar="N",
        help="Judge requests in flight at once (in eval, also threads judging traces), per "
        "worker process [default: the suite's, else 4].",
    ),
    click.option(
        "--judge-budget",
        type=click.FloatRange(min=0),
        metavar="USD",
        help="Dollars of judge calls (at the suite's prices:) past which no judge is called, per "
        "worker process; the judge scores left are errors saying so.",
    ),
)


def judge_options(command: F) -> F:
    """``command`` with the judge flags, in the order ``--help`` lists them."""
    for option in reversed(_OPTIONS):
        command = option(command)
    return command


def judge_overrides(
    judge_model: str | None,
    judge_cache_path: Path | None,
    no_judge_cache: bool,
    judge_concurrency: int | None,
    judge_budget: float | None,
) -> dict[str, Any]:
    """The flags as overrides of the suite's judge settings (``None``: not given)."""
    return {
        "model": judge_model,
        "cache_path": None if judge_cache_path is None else str(judge_cache_path),
        "cache": False if no_judge_cache else None,
        "concurrency": judge_concurrency,
        "budget_usd": judge_budget,
    }
