"""The judge tier's engine: asking a model for a structured verdict on a prompt.

Layer 4 beside ``suite``: it knows nothing of traces or checks. ``outcome`` holds the types a
judge check sees (``Judge``, ``JudgeOutcome``, ``JudgeVerdict``); ``active`` the judge a run
uses by default; ``runner`` the engine (retries, samples, concurrency, budget) over a
``completion`` function or a model string's SDK (``providers``), with the verdict ``cache``;
``settings`` reads a ``judge:`` block and builds the runner. docs/judge.md tells the user.
"""

from tooltrail.judge.active import (
    ModelResolver,
    active_judge,
    judge_for_model,
    set_model_resolver,
    use_judge,
    use_model_resolver,
)
from tooltrail.judge.cache import VerdictCache, default_cache_path
from tooltrail.judge.config_errors import JudgeCacheError, JudgeConfigError
from tooltrail.judge.outcome import Judge, JudgeOutcome, JudgeTotals, JudgeVerdict
from tooltrail.judge.runner import JudgeRunner
from tooltrail.judge.settings import (
    JudgeSettings,
    build_judge,
    override_settings,
    read_judge_settings,
)
from tooltrail.judge.verdict import VERDICT_INSTRUCTIONS, MalformedVerdict, parse_verdict

__all__ = [
    "VERDICT_INSTRUCTIONS",
    "Judge",
    "JudgeCacheError",
    "JudgeConfigError",
    "JudgeOutcome",
    "JudgeRunner",
    "JudgeSettings",
    "JudgeTotals",
    "JudgeVerdict",
    "MalformedVerdict",
    "ModelResolver",
    "VerdictCache",
    "active_judge",
    "build_judge",
    "default_cache_path",
    "judge_for_model",
    "override_settings",
    "parse_verdict",
    "read_judge_settings",
    "set_model_resolver",
    "use_judge",
    "use_model_resolver",
]
