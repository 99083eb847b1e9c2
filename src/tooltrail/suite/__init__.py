"""Test cases, policies and suites: which expectations apply to which trace."""

from __future__ import annotations

from tooltrail.suite.argrules import ArgSource, CompareArgs
from tooltrail.suite.case import (
    EvaluatorConfig,
    Expect,
    JudgeConfig,
    TestCase,
    ToolCallArgs,
    ToolCallArgsConfig,
    Turn,
)
from tooltrail.suite.contains import ContainsOptions
from tooltrail.suite.match import Match
from tooltrail.suite.reference import Reference
from tooltrail.suite.suite_error import SuiteError
from tooltrail.suite.testsuite import TestSuite

__all__ = [
    "ArgSource",
    "CompareArgs",
    "ContainsOptions",
    "EvaluatorConfig",
    "Expect",
    "JudgeConfig",
    "Match",
    "Reference",
    "SuiteError",
    "TestCase",
    "TestSuite",
    "ToolCallArgs",
    "ToolCallArgsConfig",
    "Turn",
]
