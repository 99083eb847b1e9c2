"""Trajectory checks and scorers over an ``EvalTrace`` (docs/checks.md is the contract).

Every check follows one protocol (``checks.protocol``): an object whose fields are its
configuration, with ``evaluate(ctx) -> Score | list[Score]``.
"""

from __future__ import annotations

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
