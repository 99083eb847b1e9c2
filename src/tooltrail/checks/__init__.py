"""Trajectory checks and scorers over an ``EvalTrace`` (docs/checks.md is the contract).

Every check follows one protocol (``checks.protocol``): an object whose fields are its
configuration, with ``evaluate(ctx) -> Score | list[Score]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.lazy import lazy_exports

#: Public name -> the module that defines it, imported on first use (PEP 562): a run whose
#: suite asks no judge loads none of the judge tier (``checks.judge_shapes``, asyncio, the
#: judge's runner), which was a fifth of ``tooltrail eval``'s start-up.
_EXPORTS: dict[str, str] = {
    "args_contain": "tooltrail.equality",
    "args_fingerprint": "tooltrail.equality",
    "ArgsComparator": "tooltrail.checks.reference",
    "ArgsFrom": "tooltrail.checks.provenance",
    "BUILTIN_RUBRICS": "tooltrail.checks.rubrics",
    "CallView": "tooltrail.checks.view",
    "case_checks": "tooltrail.checks.expectations",
    "case_context": "tooltrail.checks.protocol",
    "Check": "tooltrail.checks.protocol",
    "CheckContext": "tooltrail.checks.protocol",
    "CheckLookup": "tooltrail.checks.entries",
    "CheckNeeds": "tooltrail.checks.protocol",
    "CheckNeedsError": "tooltrail.checks.needs",
    "CheckResult": "tooltrail.checks.protocol",
    "ClaimsSuccessAfterError": "tooltrail.checks.tool_errors",
    "config_error": "tooltrail.checks.score",
    "ConfiguredCheck": "tooltrail.checks.registry",
    "Contains": "tooltrail.checks.expectations",
    "default_registry": "tooltrail.checks.registry",
    "did_you_mean": "tooltrail.checks.registry",
    "expect_checks": "tooltrail.checks.turns",
    "ForbiddenTool": "tooltrail.checks.expectations",
    "FunctionCheck": "tooltrail.checks.entries",
    "is_subsequence": "tooltrail.checks.turns",
    "JudgeEvaluator": "tooltrail.checks.judge_shapes",
    "LlmJudge": "tooltrail.checks.judges",
    "LLMJudgeEvaluator": "tooltrail.checks.judge_shapes",
    "LLMRubricEvaluator": "tooltrail.checks.judge_shapes",
    "make_rubric": "tooltrail.checks.rubrics",
    "MaxCost": "tooltrail.checks.budgets",
    "MaxLatency": "tooltrail.checks.budgets",
    "MaxLlmCalls": "tooltrail.checks.budgets",
    "MaxTokens": "tooltrail.checks.budgets",
    "MaxToolCalls": "tooltrail.checks.budgets",
    "needs_of": "tooltrail.checks.needs",
    "NoRedundantToolCalls": "tooltrail.checks.scorers",
    "Registry": "tooltrail.checks.registry",
    "RequiredTool": "tooltrail.checks.expectations",
    "RetryPolicy": "tooltrail.checks.judge_shapes",
    "Rubric": "tooltrail.checks.rubrics",
    "run_checks": "tooltrail.checks.protocol",
    "Score": "tooltrail.checks.score",
    "scorer": "tooltrail.checks.registry",
    "ScorerEntry": "tooltrail.checks.entries",
    "ScorerFn": "tooltrail.checks.entries",
    "ToolArgs": "tooltrail.checks.expectations",
    "ToolArgsJudge": "tooltrail.checks.judges",
    "ToolArgValues": "tooltrail.checks.expectations",
    "ToolCallArgsJudgeEvaluator": "tooltrail.checks.judge_shapes",
    "ToolCallPrecision": "tooltrail.checks.scorers",
    "ToolCallRecall": "tooltrail.checks.scorers",
    "ToolErrors": "tooltrail.checks.tool_errors",
    "ToolErrorsRecovered": "tooltrail.checks.tool_errors",
    "ToolOrder": "tooltrail.checks.expectations",
    "trace_turn_count": "tooltrail.checks.expectations",
    "trace_view": "tooltrail.checks.view",
    "TrajectoryJudge": "tooltrail.checks.judges",
    "TrajectoryMatch": "tooltrail.checks.scorers",
    "TrajectorySimilarity": "tooltrail.checks.similarity",
    "TurnArgs": "tooltrail.checks.turns",
    "TurnCount": "tooltrail.checks.expectations",
    "TurnExcludes": "tooltrail.checks.turns",
    "TurnIncludes": "tooltrail.checks.turns",
    "TurnMaxLatency": "tooltrail.checks.budgets",
    "TurnOrdered": "tooltrail.checks.turns",
    "values_equal": "tooltrail.equality",
}

if TYPE_CHECKING:
    from tooltrail.checks.budgets import (
        MaxCost,
        MaxLatency,
        MaxLlmCalls,
        MaxTokens,
        MaxToolCalls,
        TurnMaxLatency,
    )
    from tooltrail.checks.entries import CheckLookup, FunctionCheck, ScorerEntry, ScorerFn
    from tooltrail.checks.expectations import (
        Contains,
        ForbiddenTool,
        RequiredTool,
        ToolArgs,
        ToolArgValues,
        ToolOrder,
        TurnCount,
        case_checks,
        trace_turn_count,
    )
    from tooltrail.checks.judge_shapes import (
        JudgeEvaluator,
        LLMJudgeEvaluator,
        LLMRubricEvaluator,
        RetryPolicy,
        ToolCallArgsJudgeEvaluator,
    )
    from tooltrail.checks.judges import LlmJudge, ToolArgsJudge, TrajectoryJudge
    from tooltrail.checks.needs import CheckNeedsError, needs_of
    from tooltrail.checks.protocol import (
        Check,
        CheckContext,
        CheckNeeds,
        CheckResult,
        case_context,
        run_checks,
    )
    from tooltrail.checks.provenance import ArgsFrom
    from tooltrail.checks.reference import ArgsComparator
    from tooltrail.checks.registry import (
        ConfiguredCheck,
        Registry,
        default_registry,
        did_you_mean,
        scorer,
    )
    from tooltrail.checks.rubrics import BUILTIN_RUBRICS, Rubric, make_rubric
    from tooltrail.checks.score import Score, config_error
    from tooltrail.checks.scorers import (
        NoRedundantToolCalls,
        ToolCallPrecision,
        ToolCallRecall,
        TrajectoryMatch,
    )
    from tooltrail.checks.similarity import TrajectorySimilarity
    from tooltrail.checks.tool_errors import (
        ClaimsSuccessAfterError,
        ToolErrors,
        ToolErrorsRecovered,
    )
    from tooltrail.checks.turns import (
        TurnArgs,
        TurnExcludes,
        TurnIncludes,
        TurnOrdered,
        expect_checks,
        is_subsequence,
    )
    from tooltrail.checks.view import CallView, trace_view
    from tooltrail.equality import args_contain, args_fingerprint, values_equal

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "BUILTIN_RUBRICS",
    "ArgsComparator",
    "ArgsFrom",
    "CallView",
    "Check",
    "CheckContext",
    "CheckLookup",
    "CheckNeeds",
    "CheckNeedsError",
    "CheckResult",
    "ClaimsSuccessAfterError",
    "ConfiguredCheck",
    "Contains",
    "ForbiddenTool",
    "FunctionCheck",
    "MaxCost",
    "MaxLatency",
    "MaxLlmCalls",
    "MaxTokens",
    "MaxToolCalls",
    "NoRedundantToolCalls",
    "Registry",
    "RequiredTool",
    "Score",
    "ScorerEntry",
    "ScorerFn",
    "ToolArgValues",
    "ToolArgs",
    "ToolCallPrecision",
    "ToolCallRecall",
    "ToolErrors",
    "ToolErrorsRecovered",
    "ToolOrder",
    "TrajectoryMatch",
    "TrajectorySimilarity",
    "TurnArgs",
    "TurnCount",
    "TurnExcludes",
    "TurnIncludes",
    "TurnMaxLatency",
    "TurnOrdered",
    "args_contain",
    "args_fingerprint",
    "case_checks",
    "case_context",
    "config_error",
    "default_registry",
    "did_you_mean",
    "expect_checks",
    "is_subsequence",
    "needs_of",
    "run_checks",
    "scorer",
    "trace_turn_count",
    "trace_view",
    "JudgeEvaluator",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "LlmJudge",
    "RetryPolicy",
    "Rubric",
    "ToolArgsJudge",
    "ToolCallArgsJudgeEvaluator",
    "TrajectoryJudge",
    "make_rubric",
    "values_equal",
]
