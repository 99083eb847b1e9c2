"""A compiled case on one trace as steps of ``checks.timelimit``: the path of a case with a
check that is not tooltrail's own (``CasePlan.timed``), run under the case's time limit off
this thread, the steps of several cases of one trace in one hand-off.
"""

from __future__ import annotations

from dataclasses import dataclass

from tooltrail.checks.protocol import case_context
from tooltrail.checks.score import Score
from tooltrail.checks.timelimit import (
    DEFAULT_CHECK_TIMEOUT_S,
    NotRun,
    Outcome,
    Raised,
    Step,
    TimedOut,
    outcome_score,
    run_steps,
)
from tooltrail.checks.view import CallView
from tooltrail.model import EvalTrace
from tooltrail.redact import Redaction
from tooltrail.results.rows import CaseResult
from tooltrail.score.plans import CasePlan
from tooltrail.score.rows import checks_failed, make_row, turn_contexts, uncaptured


@dataclass(slots=True)
class CaseRun:
    """One case's checks on one trace, as steps of ``checks.timelimit``: its fields' and
    turns' checks (``builtins`` of them), then its scorers."""

    plan: CasePlan
    label: str | None
    steps: list[Step]
    builtins: int
    #: Why the fields' and turns' checks cannot run (an exception type name), else ``None``.
    broken: str | None


def prepare(
    plan: CasePlan,
    trace: EvalTrace,
    view: CallView,
    output: str | None,
    label: str | None,
    redaction: Redaction | None = None,
) -> CaseRun:
    """The steps of a compiled case on ``trace`` with its call index ``view``."""
    case = plan.case
    if trace.content_missing is not None:
        plan = uncaptured(plan, trace.content_missing, output is None and trace.output is None)
    limit = case.check_timeout if case.check_timeout is not None else DEFAULT_CHECK_TIMEOUT_S
    ctx = case_context(case, trace, output, view, redaction)
    steps: list[Step] = []
    broken = plan.broken
    if broken is None:
        try:
            steps = [(check, ctx, None) for check in plan.checks]
            for turn_checks, turn_ctx in turn_contexts(plan, ctx):
                steps.extend((check, turn_ctx, None) for check in turn_checks)
        except Exception as exc:  # bad input must cost one row, not the run
            steps, broken = [], type(exc).__name__
    builtins = len(steps)
    steps.extend(
        (check, ctx, None if builtin else limit)
        for check, builtin in zip(plan.scorers, plan.builtin_scorers, strict=True)
    )
    return CaseRun(plan=plan, label=label, steps=steps, builtins=builtins, broken=broken)


def run_all(
    runs: list[CaseRun], trace: EvalTrace, redaction: Redaction | None = None
) -> list[CaseResult]:
    """Run the steps of every run in one hand-off (``run_steps``), then make each row."""
    if len(runs) == 1:
        outcomes = run_steps(runs[0].steps)
    else:
        outcomes = run_steps([step for run in runs for step in run.steps])
    results = []
    at = 0
    for run in runs:
        count = len(run.steps)
        results.append(case_row(run, outcomes[at : at + count], trace, redaction))
        at += count
    return results


def case_row(
    run: CaseRun, outcomes: list[Outcome], trace: EvalTrace, redaction: Redaction | None
) -> CaseResult:
    """The row of one case from its steps' outcomes; never raises."""
    case = run.plan.case
    steps = run.steps
    builtins = run.builtins
    scores: list[Score] = []
    if run.broken is not None:
        scores.append(checks_failed(run.broken))
    else:
        try:
            for index in range(builtins):
                outcome = outcomes[index]
                kind = outcome.__class__
                if kind is Score:
                    scores.append(outcome)  # type: ignore[arg-type]
                elif kind is Raised:  # a built-in check's bug: the row says so, once
                    scores = [checks_failed(type(outcome.error).__name__)]  # type: ignore[union-attr]
                    break
                elif kind is TimedOut or kind is NotRun:
                    scores.append(outcome_score(steps[index][0], outcome))  # type: ignore[arg-type]
                else:
                    scores.extend(outcome)  # type: ignore[arg-type]
        except Exception as exc:  # bad input must cost one row, not the run
            scores = [checks_failed(type(exc).__name__)]
    for index in range(builtins, len(steps)):
        outcome = outcomes[index]
        kind = outcome.__class__
        if kind is list:
            scores.extend(outcome)  # type: ignore[arg-type]
        elif kind is Score:
            scores.append(outcome)  # type: ignore[arg-type]
        else:  # a scorer's SystemExit and the like, a time limit
            scores.append(outcome_score(steps[index][0], outcome))  # type: ignore[arg-type]
    return make_row(case.id, scores, trace, run.label, redaction)
