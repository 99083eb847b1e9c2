"""Trajectory checks and scorers: pure functions of an ``EvalTrace`` (CHECKS.md is the contract)."""

from __future__ import annotations

from tooltrail.checks.expectations import expectation_scores, trace_turn_count
from tooltrail.checks.registry import (
    Registry,
    ScorerEntry,
    ScorerFn,
    default_registry,
    did_you_mean,
    scorer,
)
from tooltrail.checks.score import Score, config_error
from tooltrail.checks.turns import expect_scores, is_subsequence, turn_scores
from tooltrail.checks.view import CallView, trace_view
from tooltrail.equality import args_contain, args_fingerprint, values_equal

__all__ = [
    "CallView",
    "Registry",
    "Score",
    "ScorerEntry",
    "ScorerFn",
    "args_contain",
    "args_fingerprint",
    "config_error",
    "default_registry",
    "did_you_mean",
    "expect_scores",
    "expectation_scores",
    "is_subsequence",
    "scorer",
    "trace_turn_count",
    "trace_view",
    "turn_scores",
    "values_equal",
]
