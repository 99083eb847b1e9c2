"""The score stage: a suite's cases compiled to checks (``plans``), what they need of traces
and of the run (``needs``), the runner that gives a case's row on a trace (``runner``, with
``rows`` on this thread and ``timed`` under time limits) and the run's judge (``run_judge``).

What it gives, rows and reports, is ``tooltrail.results`` (layer 0), read without this.
"""

from __future__ import annotations

from tooltrail.score.needs import (
    SuiteNeeds,
    asks_judge,
    evaluation_time_limit,
    reads_content,
    reads_usage,
    suite_needs,
)
from tooltrail.score.plans import CasePlan, CasePlans, compile_case
from tooltrail.score.run_judge import (
    RunJudge,
    add_totals,
    build_run_judge,
    check_judge,
    close_process_judges,
    installed,
    judging,
    parallel_map,
    process_judging,
    run_judge_settings,
)
from tooltrail.score.runner import aevaluate_suite, evaluate_cases, evaluate_suite, evaluate_trace

__all__ = [
    "CasePlan",
    "CasePlans",
    "RunJudge",
    "SuiteNeeds",
    "add_totals",
    "aevaluate_suite",
    "asks_judge",
    "build_run_judge",
    "check_judge",
    "close_process_judges",
    "compile_case",
    "evaluate_cases",
    "evaluate_suite",
    "evaluate_trace",
    "evaluation_time_limit",
    "installed",
    "judging",
    "parallel_map",
    "process_judging",
    "reads_content",
    "reads_usage",
    "run_judge_settings",
    "suite_needs",
]
