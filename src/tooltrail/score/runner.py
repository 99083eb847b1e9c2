"""Run a case's checks on a trace: ``evaluate_trace`` is the one (case, trace) evaluation every
path shares (live processor, receiver, batch CLI, pytest plugin); ``evaluate_cases`` runs many
cases on one trace; ``evaluate_suite`` pairs samples with cases. Rows and reports are
``tooltrail.results``; ``EvaluationReport.from_results`` merges rows computed anywhere.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from tooltrail.checks.registry import Registry, default_registry
from tooltrail.checks.view import CallView
from tooltrail.hints import did_you_mean
from tooltrail.model import EvalTrace
from tooltrail.redact import Redaction
from tooltrail.results.report import EvaluationReport
from tooltrail.results.rows import CaseResult, EvaluationSample
from tooltrail.results.summary import summarize
from tooltrail.score.plans import CasePlan, CasePlans, compile_case
from tooltrail.score.rows import evaluate_plan
from tooltrail.score.timed import prepare, run_all
from tooltrail.suite.suite_error import SuiteError

if TYPE_CHECKING:
    from tooltrail.suite.case import TestCase
    from tooltrail.suite.testsuite import TestSuite


def evaluate_trace(
    case: TestCase,
    trace: EvalTrace,
    output: str | None = None,
    registry: Registry | None = None,
    *,
    label: str | None = None,
    redaction: Redaction | None = None,
) -> CaseResult:
    """Run every expectation and scorer of ``case`` on ``trace``; never raises.

    ``output`` is the agent's reply for ``expected_contains`` (default: ``trace.output``).
    Each check that is not tooltrail's own (a plug-in, a function, a registered comparator)
    runs under the case's ``check_timeout`` (``checks.timelimit``).
    ``redaction``: the rules explanations, and what judge checks send, are redacted with
    (default ``redact.DEFAULT_REDACTION``).
    """
    plan = compile_case(case, registry)
    view = CallView(trace.tool_calls)
    if not plan.timed:
        return evaluate_plan(plan, trace, view, output, label, redaction)
    return run_all([prepare(plan, trace, view, output, label, redaction)], trace, redaction)[0]


def evaluate_cases(
    cases: Iterable[TestCase],
    trace: EvalTrace,
    output: str | None = None,
    registry: Registry | None = None,
    *,
    redaction: Redaction | None = None,
    plans: CasePlans | None = None,
) -> list[CaseResult]:
    """``evaluate_trace`` for each case on one trace, in order, sharing one call index between
    them: the names, counts and duplicate calls (the canonical-argument fingerprints, the
    costliest part of a trace's evaluation) are worked out once per trace, not once per case.
    When a case has a check under a time limit, the checks of every case go through
    ``checks.timelimit`` together (off the main thread, in one hand-off to a worker thread).

    Nothing is kept on the trace afterwards. Use it where one trace meets several cases or
    policies (the receiver, the live processor, the batch pass). ``redaction``: as for
    ``evaluate_trace``. ``plans``: the cases compiled once for many traces (``CasePlans``,
    whose registry then applies instead of ``registry``); without it each case is compiled
    for this trace alone.
    """
    view = CallView(trace.tool_calls)
    if plans is None:
        compiled = [compile_case(case, registry) for case in cases]
    else:
        compiled = [plans.of(case) for case in cases]
    if not any(plan.timed for plan in compiled):  # tooltrail's own checks only: no hand-off
        return [evaluate_plan(plan, trace, view, output, None, redaction) for plan in compiled]
    runs = [prepare(plan, trace, view, output, None, redaction) for plan in compiled]
    return run_all(runs, trace, redaction)


def evaluate_suite(
    suite: TestSuite,
    samples: Iterable[EvaluationSample],
    registry: Registry | None = None,
    *,
    redaction: Redaction | None = None,
) -> EvaluationReport:
    """Evaluate each sample against the case it names; rows keep the samples' order.

    A sample naming a case the suite lacks raises ``SuiteError`` before anything runs.
    """
    samples = list(samples)
    cases = {case.id: case for case in suite.cases}
    counts: dict[str, int] = {}
    for index, sample in enumerate(samples):
        if sample.case_id not in cases:
            raise SuiteError(
                f"sample {index} names case {sample.case_id!r}, which suite {suite.name!r} "
                f"does not have{did_you_mean(sample.case_id, cases)}"
            )
        counts[sample.case_id] = counts.get(sample.case_id, 0) + 1
    registry = registry if registry is not None else default_registry()
    plans: dict[str, CasePlan] = {}  # each case compiled once for the whole run
    seen: dict[str, int] = {}
    rows = []
    for sample in samples:
        case_id = sample.case_id
        plan = plans.get(case_id)
        if plan is None:
            plan = plans[case_id] = compile_case(cases[case_id], registry)
        label = sample.label
        if label is None and counts[case_id] > 1:
            seen[case_id] = seen.get(case_id, 0) + 1
            label = f"{case_id} run {seen[case_id]}"
        trace = sample.trace if sample.trace is not None else EvalTrace(trace_id="")
        view = CallView(trace.tool_calls)
        if plan.timed:
            run = prepare(plan, trace, view, sample.output, label, redaction)
            rows.extend(run_all([run], trace, redaction))
        else:
            rows.append(evaluate_plan(plan, trace, view, sample.output, label, redaction))
    return EvaluationReport(suite.name, suite.version, rows, summarize(rows, cases))


async def aevaluate_suite(
    suite: TestSuite,
    samples: Iterable[EvaluationSample],
    registry: Registry | None = None,
    *,
    redaction: Redaction | None = None,
    max_concurrency: int | None = None,
) -> EvaluationReport:
    """``evaluate_suite`` for async code (agentic-evals' ``aevaluate_suite``): the evaluation
    runs on a worker thread, so the running loop is not blocked, and the ``async def`` judge
    functions and evaluators it meets are awaited on this loop (``checks.peer_async``), where
    the clients they made belong. ``max_concurrency`` is taken for agentic-evals' signature;
    the samples are evaluated in order, as ``evaluate_suite`` does."""
    import asyncio

    from tooltrail.checks.peer_async import awaiting_on

    rows = list(samples)
    with awaiting_on(asyncio.get_running_loop()):
        return await asyncio.to_thread(evaluate_suite, suite, rows, registry, redaction=redaction)
