"""What a judge answers: the verdict a model gave, and the record of how it was obtained.

These are the two types shared by the judge engine (``judge.runner``: the client calls,
retries, samples, the cache, the budget) and the judge checks (``checks.judges``: prompts and
scores). A check asks a :class:`Judge` for an outcome and never sees the model client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(slots=True, frozen=True)
class JudgeVerdict:
    """One structured answer of a judge model: pass or fail, a score in [0, 1], its reasoning."""

    passed: bool
    score: float
    reasoning: str


@dataclass(slots=True, frozen=True)
class JudgeOutcome:
    """The result of judging one prompt, possibly over several samples.

    ``verdict`` is the majority verdict with the mean score (``None`` when no sample could be
    had: then ``error`` says why, and the check's score is an error that never passes).
    ``agreement`` is the share of samples that agree with the majority (``None`` for one
    sample). ``cost_usd`` is ``None`` when the model has no price. ``skipped`` names why no
    model was called at all (``"budget"``: the cost budget was spent).
    """

    verdict: JudgeVerdict | None
    model: str
    error: str | None = None
    attempts: int = 0
    latency_s: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    samples: tuple[JudgeVerdict, ...] = ()
    agreement: float | None = None
    cached: bool = False
    skipped: str | None = None

    def record(self) -> dict[str, Any]:
        """The outcome as plain JSON-ready data, for ``Score.judge`` and the reports."""
        return {
            "model": self.model,
            "attempts": self.attempts,
            "latency_s": round(self.latency_s, 6),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
            "samples": len(self.samples),
            "agreement": self.agreement,
            "cached": self.cached,
            "skipped": self.skipped,
            "error": self.error,
        }


class Judge(Protocol):
    """Anything that judges a prompt: the engine's runner, or a test's own object.

    ``params`` are the parameters that change the answer besides the prompt (the rubric's
    name, a temperature); they are part of the cache key.
    """

    def judge(
        self, prompt: str, *, samples: int = 1, params: dict[str, Any] | None = None
    ) -> JudgeOutcome: ...


@dataclass(slots=True)
class JudgeTotals:
    """What judging cost over one run: calls made, served from the cache, skipped, tokens."""

    calls: int = 0
    cached: int = 0
    skipped: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    models: set[str] = field(default_factory=set)

    def add(self, outcome: JudgeOutcome) -> None:
        """Count one outcome."""
        if outcome.skipped is not None:
            self.skipped += 1
            return
        if outcome.cached:
            self.cached += 1
        else:
            self.calls += outcome.attempts
        if outcome.error is not None:
            self.errors += 1
        self.input_tokens += outcome.input_tokens
        self.output_tokens += outcome.output_tokens
        if outcome.cost_usd is not None and not outcome.cached:
            self.cost_usd += outcome.cost_usd
        self.models.add(outcome.model)
