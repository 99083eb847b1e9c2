"""A compiled case on one trace, on this thread, and the row it gives: the path of a case whose
every check is tooltrail's own (``CasePlan.timed`` false), and what both paths share (a trace
whose content was not captured, each turn's context, the row with its explanations redacted).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from tooltrail.checks.agent_scope import scope_to_agent
from tooltrail.checks.protocol import Check, CheckContext, case_context, run_checks
from tooltrail.checks.score import Score
from tooltrail.checks.uncaptured import guarded
from tooltrail.checks.view import CallView
from tooltrail.model import EvalTrace
from tooltrail.redact import DEFAULT_REDACTION, Redaction, redacted_explanations
from tooltrail.results.rows import CaseResult
from tooltrail.score.plans import CasePlan


def uncaptured(plan: CasePlan, reason: str, no_reply: bool) -> CasePlan:
    """``plan`` for a trace whose calls' content was not captured: its checks that read the
    calls (and, with ``no_reply``, the reply) give error scores (``checks.uncaptured``)."""
    return replace(
        plan,
        checks=guarded(plan.checks, reason, no_reply),
        turns=[guarded(turn, reason, no_reply) for turn in plan.turns],
        scorers=guarded(plan.scorers, reason, no_reply),
    )


def checks_failed(error: str) -> Score:
    return Score.failing("checks", "checks", f"The checks could not run: {error}.", error=error)


def turn_contexts(plan: CasePlan, ctx: CheckContext) -> Iterator[tuple[list[Check], CheckContext]]:
    """Each turn's checks with the context of that turn (its calls only); may raise on a
    trace whose turns cannot be indexed, which costs the case one row."""
    for number, turn_checks in enumerate(plan.turns, start=1):
        if turn_checks:
            trace, view = ctx.trace, ctx.view.turn(number)
            agent = plan.case.turns[number - 1].scope
            if agent is not None:  # the turn's agent's calls only (``checks.agent_scope``)
                trace, view = scope_to_agent(trace, view, agent)
            turn_ctx = CheckContext(
                trace=trace,
                view=view,
                output=ctx.output,
                case=ctx.case,
                turn=number,
                redaction=ctx.redaction,
            )
            yield turn_checks, turn_ctx


def evaluate_plan(
    plan: CasePlan,
    trace: EvalTrace,
    view: CallView,
    output: str | None,
    label: str | None,
    redaction: Redaction | None = None,
) -> CaseResult:
    """Run a compiled case on ``trace`` with its call index ``view``, on this thread: only
    for a case whose every check is tooltrail's own (``CasePlan.timed`` is false)."""
    case = plan.case
    if trace.content_missing is not None:
        plan = uncaptured(plan, trace.content_missing, output is None and trace.output is None)
    ctx = case_context(case, trace, output, view, redaction)
    scores: list[Score] = []
    if plan.broken is not None:
        scores.append(checks_failed(plan.broken))
    else:
        try:
            run_checks(plan.checks, ctx, scores)
            for turn_checks, turn_ctx in turn_contexts(plan, ctx):
                run_checks(turn_checks, turn_ctx, scores)
        except Exception as exc:  # bad input must cost one row, not the run
            scores = [checks_failed(type(exc).__name__)]
    if plan.scorers:
        run_checks(plan.scorers, ctx, scores)
    return make_row(case.id, scores, trace, label, redaction)


def passed(scores: list[Score]) -> bool:
    """Whether no score fails the case (``Score.failed``)."""
    for score in scores:
        if score.failed:
            return False
    return True


def make_row(
    case_id: str,
    scores: list[Score],
    trace: EvalTrace,
    label: str | None,
    redaction: Redaction | None,
) -> CaseResult:
    """A case's row, its explanations redacted (``tooltrail.redact``) before they leave."""
    scores = redacted_explanations(redaction or DEFAULT_REDACTION, scores)
    return CaseResult(case_id, passed(scores), scores, trace.trace_id, label or case_id)
