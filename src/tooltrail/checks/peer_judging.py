"""agentic-evals' judge contract: a function of the evaluation context that returns a
``Score``, run under a ``RetryPolicy`` and ``samples``.

This is the contract of ``LLMJudgeEvaluator(name, judge_fn)``, not of tooltrail's judge engine
(``judge.runner``, which asks a model for a verdict on a prompt): the function calls whatever
it likes and grades itself. What this module adds is agentic-evals' reliability rules:

- at most ``max_attempts`` calls, waiting ``backoff_seconds * backoff_multiplier ** (n - 1)``
  (at most ``max_backoff_seconds``) before retry ``n``; only ``retry_on`` exceptions are
  retried, any other ends the judgement at once;
- a judgement that fails every attempt is an *unavailable* score: value 0, never passing,
  ``error="JudgeUnavailable"`` and ``metadata["judge_status"] == "unavailable"``;
- ``samples=N`` calls it N times: the value is the mean, the verdict (``metadata["verdict"]``,
  else the value) the most common one, a tie going to the lower-scoring verdict, and
  ``metadata["judge_agreement"]`` the share of samples that gave it.

Every score gets ``judge_status``, ``judge_attempts`` and ``judge_latency_ms`` in its metadata,
and a ``judge`` record (``Score.judge``) so that reports total these judgements with the
engine's (``results.JudgeSummary``): tokens and cost are those the function reported in its
score's metadata (``judge_input_tokens``, ``judge_output_tokens``, ``judge_cost_usd``).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from tooltrail.checks.peer_async import resolved
from tooltrail.checks.score import Score

#: The ``error`` of an unavailable judgement (as the engine's judge checks say it).
JUDGE_UNAVAILABLE = "JudgeUnavailable"
#: How many failure texts an unavailable score keeps.
_KEPT_ERRORS = 5


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a judge is asked again after a failure (agentic-evals' shape): at most
    ``max_attempts`` calls, waiting :meth:`delay` seconds before each retry; only
    ``retry_on`` exceptions are retried. The default is one attempt: retries are opt-in."""

    max_attempts: int = 1
    backoff_seconds: float = 0.0
    backoff_multiplier: float = 2.0
    max_backoff_seconds: float = 30.0
    retry_on: tuple[type[Exception], ...] = (Exception,)

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.backoff_seconds < 0 or self.max_backoff_seconds < 0:
            raise ValueError("backoff seconds must not be negative")
        if self.backoff_multiplier < 1:
            raise ValueError("backoff_multiplier must be at least 1")
        if not self.retry_on:
            raise ValueError("retry_on must name at least one exception type")

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1: before the second attempt)."""
        wait = self.backoff_seconds * self.backoff_multiplier ** (retry - 1)
        return float(min(wait, self.max_backoff_seconds))


@dataclass(slots=True)
class _Tried:
    """One sample's calls: the scores it gave, or the last error, and the failures' texts."""

    scores: list[Score] | None = None
    error: Exception | None = None
    attempts: int = 0
    errors: list[str] = field(default_factory=list)


class NotAScore(TypeError):
    """A judge function returned something other than a ``Score`` (not retried)."""


def _described(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _scores_of(result: Any, samples: int) -> list[Score]:
    if isinstance(result, Score):
        return [result]
    if (
        samples == 1
        and isinstance(result, (list, tuple))
        and result
        and all(isinstance(s, Score) for s in result)
    ):
        return list(result)
    what = "a single Score" if samples > 1 else "a Score or a list of Scores"
    raise NotAScore(f"the judge function returned {type(result).__name__}, not {what}")


def _failed(tried: _Tried, exc: Exception, policy: RetryPolicy) -> bool:
    """Record ``exc``; whether the sample is over (not retried, or attempts spent)."""
    tried.error = exc
    tried.errors.append(_described(exc))
    return (
        isinstance(exc, NotAScore)
        or not isinstance(exc, policy.retry_on)
        or tried.attempts >= policy.max_attempts
    )


def _sample(call: Callable[[], Any], policy: RetryPolicy, samples: int) -> _Tried:
    tried = _Tried()
    while True:
        tried.attempts += 1
        try:
            tried.scores, tried.error = _scores_of(resolved(call()), samples), None
            return tried
        except Exception as exc:  # recorded: a judge that raises is unavailable, not a crash
            if _failed(tried, exc, policy):
                return tried
        time.sleep(policy.delay(tried.attempts))


async def _asample(call: Callable[[], Any], policy: RetryPolicy, samples: int) -> _Tried:
    tried = _Tried()
    while True:
        tried.attempts += 1
        try:
            answer = call()
            if inspect.isawaitable(answer):
                answer = await answer
            tried.scores, tried.error = _scores_of(answer, samples), None
            return tried
        except Exception as exc:
            if _failed(tried, exc, policy):
                return tried
        await asyncio.sleep(policy.delay(tried.attempts))


def judged(
    fn: Callable[[Any], Any], context: Any, *, name: str, retry: RetryPolicy, samples: int
) -> list[Score]:
    """The scores of judge function ``fn`` on ``context`` under ``retry`` and ``samples``
    (see the module); never raises for what the function does."""
    started = time.monotonic()
    tries: list[_Tried] = []
    for _ in range(samples):
        tries.append(_sample(lambda: fn(context), retry, samples))
        if tries[-1].error is not None:
            break
    return _finished(tries, name=name, samples=samples, elapsed_s=time.monotonic() - started)


async def ajudged(
    fn: Callable[[Any], Any | Awaitable[Any]],
    context: Any,
    *,
    name: str,
    retry: RetryPolicy,
    samples: int,
) -> list[Score]:
    """:func:`judged`, awaiting an ``async def`` function on the running loop (a plain one
    runs on a worker thread)."""
    started = time.monotonic()

    def call() -> Any:
        if inspect.iscoroutinefunction(fn):
            return fn(context)
        return asyncio.to_thread(lambda: resolved(fn(context)))

    tries: list[_Tried] = []
    for _ in range(samples):
        tries.append(await _asample(call, retry, samples))
        if tries[-1].error is not None:
            break
    return _finished(tries, name=name, samples=samples, elapsed_s=time.monotonic() - started)


def _finished(tries: list[_Tried], *, name: str, samples: int, elapsed_s: float) -> list[Score]:
    attempts = sum(t.attempts for t in tries)
    latency_ms = round(elapsed_s * 1000, 3)
    last = tries[-1]
    if last.error is not None:
        errors = [text for t in tries for text in t.errors]
        message = _described(last.error)
        metadata: dict[str, Any] = {
            "judge_status": "unavailable",
            "judge_attempts": attempts,
            "judge_error": message,
            "judge_errors": errors[-_KEPT_ERRORS:],
            "judge_latency_ms": latency_ms,
        }
        if samples > 1:
            metadata["judge_samples"] = samples
            metadata["judge_completed_samples"] = len(tries) - 1
        score = Score.failing(
            name, name, f"Judge unavailable after {attempts} attempt(s): {message}.",
            error=JUDGE_UNAVAILABLE,
        )  # fmt: skip
        score.metadata = metadata
        score.judge = _record(name, attempts, elapsed_s, [], error=message)
        return [score]
    if samples == 1:
        scores = last.scores or []
        return [
            _stamped(score, attempts, latency_ms, elapsed_s, name, len(scores)) for score in scores
        ]
    return [
        _aggregate([t.scores[0] for t in tries if t.scores], attempts, latency_ms, elapsed_s, name)
    ]


def _stamped(
    score: Score, attempts: int, latency_ms: float, elapsed_s: float, name: str, share: int
) -> Score:
    metadata = {
        "judge_latency_ms": latency_ms,
        **(score.metadata or {}),
        "judge_status": "ok",
        "judge_attempts": attempts,
    }
    record = _record(name, attempts, elapsed_s / max(share, 1), [score])
    return replace(score, metadata=metadata, judge=record)


def _verdict_key(score: Score) -> Any:
    metadata = score.metadata or {}
    key = metadata.get("verdict", score.value)
    return key if isinstance(key, (str, int, float)) else str(key)


def _aggregate(
    samples: list[Score], attempts: int, latency_ms: float, elapsed_s: float, name: str
) -> Score:
    keys = [_verdict_key(s) for s in samples]
    counts = Counter(keys)
    top = max(counts.values())

    def mean_of(key: Any) -> float:
        values = [s.value for s, k in zip(samples, keys, strict=True) if k == key]
        return sum(values) / len(values)

    modal = min((key for key in counts if counts[key] == top), key=mean_of)
    shown = samples[keys.index(modal)]
    agreement = round(top / len(samples), 6)
    metadata = {
        key: value
        for key, value in (shown.metadata or {}).items()
        if key not in _USAGE_KEYS and key != "judge_latency_ms"
    }
    metadata.update(
        judge_status="ok",
        judge_attempts=attempts,
        judge_samples=len(samples),
        judge_verdicts=keys,
        judge_sample_values=[s.value for s in samples],
        judge_agreement=agreement,
        judge_latency_ms=latency_ms,
    )
    for key in _USAGE_KEYS:
        values = [(s.metadata or {}).get(key) for s in samples]
        if all(_number(v) is not None for v in values):
            total = sum(_number(v) or 0.0 for v in values)
            metadata[key] = total if key == "judge_cost_usd" else int(total)
    record = _record(name, attempts, elapsed_s, samples, agreement=agreement)
    return replace(
        shown,
        value=sum(s.value for s in samples) / len(samples),
        explanation=(
            f"{top} of {len(samples)} samples agreed on {modal!r} (agreement {agreement:.0%}): "
            f"{shown.explanation}"
        ),
        metadata=metadata,
        judge=record,
    )


_USAGE_KEYS = ("judge_cost_usd", "judge_input_tokens", "judge_output_tokens")


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return None


def _record(
    name: str,
    attempts: int,
    elapsed_s: float,
    scores: list[Score],
    *,
    agreement: float | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """The ``Score.judge`` record of a judgement (the shape of ``JudgeOutcome.record()``)."""
    reported = [s.metadata or {} for s in scores]
    costs = [_number(m.get("judge_cost_usd")) for m in reported]
    model = next((str(m["judge_model"]) for m in reported if m.get("judge_model")), None)
    return {
        "model": model or f"function:{name}",
        "attempts": attempts,
        "latency_s": round(elapsed_s, 6),
        "input_tokens": int(sum(_number(m.get("judge_input_tokens")) or 0 for m in reported)),
        "output_tokens": int(sum(_number(m.get("judge_output_tokens")) or 0 for m in reported)),
        "cost_usd": (
            sum(c for c in costs if c is not None) if any(c is not None for c in costs) else None
        ),
        "samples": len(scores),
        "agreement": agreement,
        "cached": False,
        "skipped": None,
        "error": error,
    }
