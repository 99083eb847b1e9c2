"""tooltrail: check what an AI agent actually did, from its OpenTelemetry traces.

The public API is imported on first use (PEP 562): ``import tooltrail`` and the command line
load nothing of the pipeline until a name is asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.lazy import lazy_exports
from tooltrail.version import __version__

#: Public name -> the module that defines it.
_EXPORTS: dict[str, str] = {
    "CaseResult": "tooltrail.evaluate",
    "default_registry": "tooltrail.checks",
    "EvalSpan": "tooltrail.model",
    "EvalTrace": "tooltrail.model",
    "evaluate_cases": "tooltrail.evaluate",
    "evaluate_suite": "tooltrail.evaluate",
    "evaluate_trace": "tooltrail.evaluate",
    "EvaluationReport": "tooltrail.evaluate",
    "EvaluationSample": "tooltrail.evaluate",
    "EvaluatorConfig": "tooltrail.suite",
    "Expect": "tooltrail.suite",
    "Gate": "tooltrail.suite.gate",
    "GateResult": "tooltrail.suite.gate",
    "Match": "tooltrail.suite",
    "MetricSummary": "tooltrail.evaluate",
    "parse_args": "tooltrail.model",
    "Registry": "tooltrail.checks",
    "render_json": "tooltrail.report",
    "render_junit": "tooltrail.report",
    "render_markdown": "tooltrail.report",
    "render_text": "tooltrail.report",
    "RunVerdict": "tooltrail.evaluate",
    "Score": "tooltrail.checks",
    "scorer": "tooltrail.checks",
    "SuiteError": "tooltrail.suite",
    "Summary": "tooltrail.evaluate",
    "TestCase": "tooltrail.suite",
    "TestSuite": "tooltrail.suite",
    "ToolCall": "tooltrail.model",
    "ToolCallArgs": "tooltrail.suite",
    "Turn": "tooltrail.suite",
    "values_equal": "tooltrail.checks",
    "write_json": "tooltrail.report",
    "write_junit": "tooltrail.report",
    "write_markdown": "tooltrail.report",
    "write_text": "tooltrail.report",
    "JudgeConfig": "tooltrail.suite",
    "ToolCallArgsConfig": "tooltrail.suite",
    "JudgeEvaluator": "tooltrail.checks",
    "ToolCallArgsJudgeEvaluator": "tooltrail.checks",
    "LLMJudgeEvaluator": "tooltrail.checks",
    "LLMRubricEvaluator": "tooltrail.checks",
    "RetryPolicy": "tooltrail.checks",
    "Rubric": "tooltrail.checks",
    "make_rubric": "tooltrail.checks",
    "use_judge": "tooltrail.judge",
}

if TYPE_CHECKING:
    from tooltrail.checks import (
        JudgeEvaluator,
        LLMJudgeEvaluator,
        LLMRubricEvaluator,
        Registry,
        RetryPolicy,
        Rubric,
        Score,
        ToolCallArgsJudgeEvaluator,
        default_registry,
        make_rubric,
        scorer,
        values_equal,
    )
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
    from tooltrail.judge import use_judge
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
        JudgeConfig,
        Match,
        SuiteError,
        TestCase,
        TestSuite,
        ToolCallArgs,
        ToolCallArgsConfig,
        Turn,
    )


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

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
    "JudgeConfig",
    "ToolCallArgsConfig",
    "JudgeEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "RetryPolicy",
    "Rubric",
    "make_rubric",
    "use_judge",
]
