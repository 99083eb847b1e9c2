"""A judge for tests of the judge checks: answers from a script and keeps every prompt it got.

It implements the ``Judge`` protocol only; the real engine (client, retries, cache) has its
own tests against a scripted server.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tooltrail.judge import JudgeOutcome, JudgeVerdict


def verdict(passed: bool, score: float | None = None, reasoning: str = "ok") -> JudgeOutcome:
    """An outcome with one verdict, as a model that answered would give."""
    value = (1.0 if passed else 0.0) if score is None else score
    return JudgeOutcome(
        verdict=JudgeVerdict(passed=passed, score=value, reasoning=reasoning),
        model="test:judge",
        attempts=1,
        latency_s=0.25,
        input_tokens=100,
        output_tokens=20,
        cost_usd=0.001,
    )


@dataclass
class Request:
    prompt: str
    samples: int
    params: dict[str, Any] | None


@dataclass
class ScriptedJudge:
    """Answers each request with the next outcome of ``script`` (the last one repeats)."""

    script: list[JudgeOutcome] = field(default_factory=lambda: [verdict(True)])
    requests: list[Request] = field(default_factory=list)

    def judge(
        self, prompt: str, *, samples: int = 1, params: dict[str, Any] | None = None
    ) -> JudgeOutcome:
        self.requests.append(Request(prompt, samples, params))
        index = min(len(self.requests), len(self.script)) - 1
        return self.script[index]

    @property
    def prompts(self) -> list[str]:
        return [request.prompt for request in self.requests]
