"""The judge tier's engine: asking a model for a structured verdict on a prompt.

Layer 4 beside ``suite``: it knows nothing of traces or checks. ``outcome`` holds the types a
judge check sees (``Judge``, ``JudgeOutcome``, ``JudgeVerdict``); ``active`` the judge a run
uses by default.
"""

from tooltrail.judge.active import (
    ModelResolver,
    active_judge,
    judge_for_model,
    set_model_resolver,
    use_judge,
)
from tooltrail.judge.outcome import Judge, JudgeOutcome, JudgeTotals, JudgeVerdict

__all__ = [
    "Judge",
    "JudgeOutcome",
    "JudgeTotals",
    "JudgeVerdict",
    "ModelResolver",
    "active_judge",
    "judge_for_model",
    "set_model_resolver",
    "use_judge",
]
