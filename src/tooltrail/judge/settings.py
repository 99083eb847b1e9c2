"""A judge's settings, read strictly from a plain mapping (a suite file's ``judge:`` block or
CLI flags), and the runner they build.

Every key is optional except ``model`` (for a judge built from settings). Unknown keys are an
error with a did-you-mean; so is a value of the wrong type.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from tooltrail.hints import did_you_mean
from tooltrail.judge.cache import VerdictCache, default_cache_path
from tooltrail.judge.completion import CompletionFn, FunctionCompletion
from tooltrail.judge.config_errors import JudgeConfigError
from tooltrail.judge.prices import PriceTable, check_price
from tooltrail.judge.providers import completion_for_model
from tooltrail.judge.runner import (
    DEFAULT_CONCURRENCY,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    JudgeRunner,
)


@dataclass(slots=True, frozen=True)
class JudgeSettings:
    """How to call a judge. ``model`` is a model string (``openai:gpt-4o-mini``)."""

    model: str | None = None
    #: An OpenAI-compatible or Anthropic endpoint; else the SDK's environment variable.
    base_url: str | None = None
    retries: int = DEFAULT_RETRIES
    timeout_s: float = DEFAULT_TIMEOUT_S
    #: Seconds one judgement may take in all (attempts, waits, samples); ``None``: every
    #: attempt's ``timeout_s`` and every default wait added up (``runner.default_deadline_s``).
    deadline_s: float | None = None
    #: The model's sampling temperature; ``None``: not sent (the model's default).
    temperature: float | None = None
    #: The most tokens an answer may take; ``None``: not sent to OpenAI, 1024 to Anthropic.
    max_tokens: int | None = None
    #: Answers asked per judgement when a check does not say (majority, mean, agreement).
    samples: int = 1
    concurrency: int = DEFAULT_CONCURRENCY
    cache: bool = True
    #: The cache's SQLite file; ``None``: :func:`~tooltrail.judge.cache.default_cache_path`.
    cache_path: str | None = None
    budget_usd: float | None = None
    #: model -> ``{"input": ..., "output": ...}`` US dollars per million tokens.
    prices: PriceTable | None = None


#: key -> (what it must be, in words; the test)
_RULES: dict[str, tuple[str, Any]] = {
    "model": ("a string such as 'openai:gpt-4o-mini'", lambda v: isinstance(v, str) and v),
    "base_url": ("a URL string", lambda v: isinstance(v, str) and v),
    "retries": ("a whole number, 0 or more", lambda v: _int(v) and v >= 0),
    "timeout_s": ("a number of seconds, more than 0", lambda v: _number(v) and v > 0),
    "deadline_s": ("a number of seconds, more than 0", lambda v: _number(v) and v > 0),
    "temperature": ("a number from 0 to 2", lambda v: _number(v) and 0 <= v <= 2),
    "max_tokens": ("a whole number, 1 or more", lambda v: _int(v) and v >= 1),
    "samples": ("a whole number, 1 or more", lambda v: _int(v) and v >= 1),
    "concurrency": ("a whole number, 1 or more", lambda v: _int(v) and v >= 1),
    "cache": ("true or false", lambda v: isinstance(v, bool)),
    "cache_path": ("a file path string", lambda v: isinstance(v, str) and v),
    "budget_usd": ("a number of US dollars, 0 or more", lambda v: _number(v) and v >= 0),
    "prices": ("a mapping of model names to {input, output}", lambda v: isinstance(v, Mapping)),
}
FIELDS = tuple(f.name for f in fields(JudgeSettings))
assert set(_RULES) == set(FIELDS)
#: Keys whose ``null`` means "not set" (the default).
_MAY_BE_NULL = frozenset(
    {"base_url", "cache_path", "budget_usd", "prices", "model", "deadline_s", "temperature"}
    | {"max_tokens"}
)
#: Keys read as floats (a whole number given is the same number of seconds or dollars).
_FLOATS = frozenset({"timeout_s", "deadline_s", "temperature", "budget_usd"})


def read_judge_settings(raw: Any, *, where: str = "judge") -> JudgeSettings:
    """The settings ``raw`` gives, or :class:`JudgeConfigError` naming ``where`` and the key."""
    if not isinstance(raw, Mapping):
        raise JudgeConfigError(f"{where} must be a mapping of settings, not {raw!r}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in _RULES:
            raise JudgeConfigError(
                f"{where}: unknown key {key!r}{did_you_mean(str(key), FIELDS)}; "
                f"known: {', '.join(FIELDS)}"
            )
        if value is None and key in _MAY_BE_NULL:
            continue
        must, ok = _RULES[key]
        if not ok(value):
            raise JudgeConfigError(f"{where}.{key} must be {must}, not {value!r}")
        values[key] = float(value) if key in _FLOATS else value
    if "prices" in values:
        for model, entry in values["prices"].items():
            try:
                check_price(entry, str(model))
            except ValueError as exc:
                raise JudgeConfigError(f"{where}.prices: {exc}") from None
    return JudgeSettings(**values)


def override_settings(
    settings: JudgeSettings, overrides: Mapping[str, Any], *, where: str = "judge"
) -> JudgeSettings:
    """``settings`` with ``overrides`` over them (CLI flags over a suite's ``judge:`` block),
    each checked as :func:`read_judge_settings` checks it. A ``None`` value leaves that setting
    as it is (a flag not given)."""
    given = {key: value for key, value in overrides.items() if value is not None}
    checked = read_judge_settings(given, where=where)
    return replace(settings, **{key: getattr(checked, key) for key in given})


def build_judge(settings: JudgeSettings, *, completion: CompletionFn | None = None) -> JudgeRunner:
    """The runner ``settings`` describe. ``completion`` (a Python completion function) stands
    for ``settings.model``, which then only names it in outcomes and prices."""
    if completion is not None:
        client: Any = FunctionCompletion(completion, model=settings.model)
    elif settings.model is None:
        raise JudgeConfigError(
            "no judge model: set one (for example 'openai:gpt-4o-mini') or pass a completion "
            "function"
        )
    else:
        client = completion_for_model(
            settings.model,
            base_url=settings.base_url,
            timeout_s=settings.timeout_s,
            temperature=settings.temperature,
            max_tokens=settings.max_tokens,
        )
    cache = None
    if settings.cache:
        path = Path(settings.cache_path) if settings.cache_path else default_cache_path()
        cache = VerdictCache(path)
    return JudgeRunner(
        client,
        retries=settings.retries,
        timeout_s=settings.timeout_s,
        concurrency=settings.concurrency,
        samples=settings.samples,
        cache=cache,
        budget_usd=settings.budget_usd,
        prices=settings.prices,
        deadline_s=settings.deadline_s,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
    )


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
