"""tooltrail: check what an AI agent actually did, from its OpenTelemetry traces."""

from __future__ import annotations

from tooltrail.checks import Registry, Score, default_registry, scorer, values_equal
from tooltrail.evaluate import (
    CaseResult,
    EvaluationReport,
    EvaluationSample,
    MetricSummary,
    RunVerdict,
    Summary,
    evaluate_cases,
    evaluate_suite,
    evaluate_trace,
)
from tooltrail.model import EvalSpan, EvalTrace, ToolCall, parse_args
from tooltrail.report import (
    Gate,
    GateResult,
    render_json,
    render_junit,
    render_markdown,
    render_text,
    write_json,
    write_junit,
    write_markdown,
    write_text,
)
from tooltrail.suite import (
    EvaluatorConfig,
    Expect,
    Match,
    SuiteError,
    TestCase,
    TestSuite,
    ToolCallArgs,
    Turn,
)
from tooltrail.version import __version__

__all__ = [
    "CaseResult",
    "EvalSpan",
    "EvalTrace",
    "EvaluationReport",
    "EvaluationSample",
    "EvaluatorConfig",
    "Expect",
    "Gate",
    "GateResult",
    "Match",
    "MetricSummary",
    "Registry",
    "RunVerdict",
    "Score",
    "SuiteError",
    "Summary",
    "TestCase",
    "TestSuite",
    "ToolCall",
    "ToolCallArgs",
    "Turn",
    "__version__",
    "default_registry",
    "evaluate_cases",
    "evaluate_suite",
    "evaluate_trace",
    "parse_args",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_text",
    "scorer",
    "values_equal",
    "write_json",
    "write_junit",
    "write_markdown",
    "write_text",
]
