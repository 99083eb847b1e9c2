"""The judge tier's engine: asking a model for a structured verdict on a prompt.

Layer 4 beside ``suite``: it knows nothing of traces or checks. ``outcome`` holds the types a
judge check sees (``Judge``, ``JudgeOutcome``, ``JudgeVerdict``); ``active`` the judge a run
uses by default; ``runner`` the engine (retries, samples, concurrency, budget) over a
``completion`` function or a model string's SDK (``providers``), with the verdict ``cache``;
``settings`` reads a ``judge:`` block and builds the runner. docs/judge.md tells the user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.lazy import lazy_exports

#: Public name -> the module that defines it, imported on first use (PEP 562): a check that
#: needs the judge's types (``outcome``, ``active``) does not load the runner, its cache and
#: asyncio.
_EXPORTS: dict[str, str] = {
    "active_judge": "tooltrail.judge.active",
    "build_judge": "tooltrail.judge.settings",
    "default_cache_path": "tooltrail.judge.cache",
    "Judge": "tooltrail.judge.outcome",
    "judge_for_model": "tooltrail.judge.active",
    "JudgeCacheError": "tooltrail.judge.config_errors",
    "JudgeConfigError": "tooltrail.judge.config_errors",
    "JudgeOutcome": "tooltrail.judge.outcome",
    "JudgeRunner": "tooltrail.judge.runner",
    "JudgeSettings": "tooltrail.judge.settings",
    "JudgeTotals": "tooltrail.judge.outcome",
    "JudgeVerdict": "tooltrail.judge.outcome",
    "MalformedVerdict": "tooltrail.judge.verdict",
    "ModelResolver": "tooltrail.judge.active",
    "override_settings": "tooltrail.judge.settings",
    "parse_verdict": "tooltrail.judge.verdict",
    "read_judge_settings": "tooltrail.judge.settings",
    "set_model_resolver": "tooltrail.judge.active",
    "use_judge": "tooltrail.judge.active",
    "use_model_resolver": "tooltrail.judge.active",
    "VERDICT_INSTRUCTIONS": "tooltrail.judge.verdict",
    "VerdictCache": "tooltrail.judge.cache",
}

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

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
