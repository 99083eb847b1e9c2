"""The pytest plugin's judge: settings from the command line and the ini file, installed for the
session so that judge checks (a YAML turn's ``judge:``, ``Expect(judge=...)``, a
``tool_calls_args`` entry's ``judge:``, ``llm_judge`` evaluators) ask the configured model.

Nothing is built unless a judge option is given: a session without one imports nothing of the
judge tier. The judge is built with ``tooltrail.score.judging`` (the run's runner and the
resolver of models that checks name) in ``pytest_configure`` and closed in
``pytest_unconfigure``; each pytest-xdist worker builds its own.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

import pytest

#: (command-line option, ini name, judge settings key, type, help).
OPTIONS: tuple[tuple[str | None, str, str, Any, str], ...] = (
    ("--tooltrail-judge-model", "tooltrail_judge_model", "model", str,
     "the judge model of judge checks (openai:gpt-4o-mini, anthropic:claude-haiku-4-5)"),
    (None, "tooltrail_judge_base_url", "base_url", str,
     "the judge model's endpoint (an OpenAI-compatible server) [default: the SDK's variable]"),
    (None, "tooltrail_judge_retries", "retries", int,
     "attempts after the first, for a judge failure that may pass [default: 2]"),
    (None, "tooltrail_judge_timeout", "timeout_s", float,
     "seconds one judge attempt may take [default: 30]"),
    ("--tooltrail-judge-cache", "tooltrail_judge_cache", "cache_path", str,
     "the judge's verdict cache file (SQLite) [default: the user cache dir]"),
    ("--tooltrail-judge-concurrency", "tooltrail_judge_concurrency", "concurrency", int,
     "judge requests in flight at once [default: 4]"),
    ("--tooltrail-judge-budget", "tooltrail_judge_budget_usd", "budget_usd", float,
     "US dollars of judge calls past which no judge is called (needs the model's price)"),
)  # fmt: skip
NO_CACHE_OPTION = "--tooltrail-no-judge-cache"
NO_CACHE_INI = "tooltrail_judge_no_cache"
_stack_key = pytest.StashKey[ExitStack]()


def add_options(group: Any, parser: pytest.Parser) -> None:
    """The judge's command-line options and ini values (the command line wins)."""
    for option, ini, _key, kind, text in OPTIONS:
        if option is not None:
            group.addoption(option, dest=ini, type=kind, default=None, help=text)
        parser.addini(ini, type="string", default=None, help=text)
    group.addoption(
        NO_CACHE_OPTION,
        dest=NO_CACHE_INI,
        action="store_true",
        default=False,
        help="ask the judge model every time: no verdict read from or written to the cache",
    )
    parser.addini(NO_CACHE_INI, type="bool", default=False, help="as " + NO_CACHE_OPTION)


def given_settings(config: pytest.Config) -> dict[str, Any]:
    """The judge settings the session was given (command line over ini), by settings key."""
    values: dict[str, Any] = {}
    for option, ini, key, kind, _text in OPTIONS:
        value = config.getoption(ini, None) if option is not None else None
        if value is None:
            raw = config.getini(ini)
            if raw not in (None, ""):
                try:
                    value = kind(str(raw).strip())
                except ValueError:
                    what = "a whole number" if kind is int else "a number"
                    raise pytest.UsageError(f"ini {ini} must be {what}, not {raw!r}") from None
        if value is not None:
            values[key] = value
    if config.getoption(NO_CACHE_INI, False) or config.getini(NO_CACHE_INI):
        values["cache"] = False
    return values


def install(config: pytest.Config) -> None:
    """Build the session's judge from the options given, and install it; nothing without one.
    A bad setting is a usage error naming it, before any test runs."""
    values = given_settings(config)
    if not values:
        return
    from tooltrail.judge import JudgeConfigError, read_judge_settings
    from tooltrail.score import judging

    stack = ExitStack()
    try:
        # Builds the runner now: a missing SDK or a bad model string fails here.
        stack.enter_context(judging(read_judge_settings(values)))
    except JudgeConfigError as exc:
        stack.close()
        raise pytest.UsageError(f"tooltrail judge: {exc}") from None
    config.stash[_stack_key] = stack


def uninstall(config: pytest.Config) -> None:
    """Close the session's judge (its clients and cache)."""
    stack = config.stash.get(_stack_key, None)
    if stack is not None:
        del config.stash[_stack_key]
        stack.close()
