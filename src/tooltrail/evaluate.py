"""Run a case's checks on a trace, and roll many such results up into a report.

``evaluate_trace`` is the one (case, trace) evaluation every path shares (live processor,
receiver, batch CLI, pytest plugin); ``evaluate_suite`` pairs samples with cases;
``EvaluationReport.from_results`` merges results computed anywhere (workers, machines).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields, replace
from itertools import islice
from operator import attrgetter
from typing import TYPE_CHECKING, Any, SupportsIndex

from tooltrail.checks.agent_scope import scope_to_agent
from tooltrail.checks.expectations import case_checks
from tooltrail.checks.protocol import Check, CheckContext, case_context, run_checks
from tooltrail.checks.registry import Registry, default_registry, is_builtin
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
from tooltrail.checks.turns import expect_checks
from tooltrail.checks.uncaptured import guarded
from tooltrail.checks.view import CallView, tally
from tooltrail.hints import did_you_mean
from tooltrail.model import EvalTrace
from tooltrail.redact import DEFAULT_REDACTION, Redaction, redacted_explanations
from tooltrail.suite.errors import SuiteError
from tooltrail.suite.gate import meets
from tooltrail.trials import Trials

if TYPE_CHECKING:
    from tooltrail.suite.case import TestCase
    from tooltrail.suite.testsuite import TestSuite

#: Version of the ``EvaluationReport.to_dict`` layout; bumped on incompatible changes.
SCHEMA_VERSION = 1


class ReportError(ValueError):
    """A serialized report cannot be read back."""


@dataclass(slots=True)
class EvaluationSample:
    """One recorded run to judge: which case, the agent's reply, and its trace."""

    case_id: str
    output: str | None = None
    trace: EvalTrace | None = None
    #: Row label in reports; defaults to the case id (numbered when a case has several runs).
    label: str | None = None


@dataclass(slots=True)
class CaseResult:
    """One (case, trace) evaluation: a report row."""

    case_id: str
    passed: bool
    scores: list[Score]
    trace_id: str | None = None
    #: Row label shown in reports; defaults to ``case_id``.
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            self.label = self.case_id

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """Pickled as its field values, rebuilt by one positional call, as ``Score`` is (see
        ``Score.__reduce_ex__``: the batch pass pickles every row once or twice and reads
        spilled rows back on every walk). A subclass pickles as it always did."""
        if self.__class__ is not CaseResult:
            return object.__reduce_ex__(self, protocol)
        return CaseResult, _row_values(self)

    @property
    def failures(self) -> list[Score]:
        """The scores that make this row fail (``Score.failed``), in order."""
        return [s for s in self.scores if s.failed]

    def failure_messages(self) -> list[str]:
        """``"name: explanation"`` per failure; per-turn names start with ``turn{n}:``."""
        return [f"{s.name}: {s.explanation}" for s in self.failures]

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "label": self.label,
            "trace_id": self.trace_id,
            "passed": self.passed,
            "scores": [s.to_dict() for s in self.scores],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        return cls(
            case_id=str(data["case_id"]),
            passed=bool(data["passed"]),
            scores=[Score.from_dict(s) for s in data.get("scores", [])],
            trace_id=data.get("trace_id"),
            label=str(data.get("label") or data["case_id"]),
        )


#: A row's field values in ``__init__``'s order (every field is an argument of it), for
#: ``CaseResult.__reduce_ex__``.
_row_values = attrgetter(*(f.name for f in fields(CaseResult)))


@dataclass(slots=True)
class MetricSummary:
    """Passed and total non-skipped scores of one metric over every row."""

    passed: int = 0
    total: int = 0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass(slots=True)
class RunVerdict:
    """A case's verdict over all its rows: passed runs / max(runs, rows) >= threshold."""

    case_id: str
    passed_runs: int
    runs: int
    #: ``None``: every run must pass.
    threshold: float | None
    passed: bool
    #: Whether the case asked for repeated runs (``runs > 1`` or a threshold): reports show it.
    repeated: bool = False
    #: The case's rows (its recorded runs; ``runs`` may count more, a missing run failing).
    recorded: int = 0
    #: Changes of outcome (pass to fail, fail to pass) between consecutive rows, in row order.
    flips: int = 0

    @property
    def trials(self) -> Trials:
        """The runs' figures (``tooltrail.trials``: pass@k, pass^k, flip rate, interval)."""
        return Trials(
            runs=self.runs, passed=self.passed_runs, recorded=self.recorded, flips=self.flips
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "case_id": self.case_id,
            "passed_runs": self.passed_runs,
            "runs": self.runs,
            "threshold": self.threshold,
            "passed": self.passed,
            "repeated": self.repeated,
        }
        if self.repeated:  # (a report without repeated cases, byte for byte as before)
            data["trials"] = self.trials.to_dict(self.threshold)
        return data


@dataclass(slots=True)
class Summary:
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    passed_cases: int = 0
    total_cases: int = 0
    pass_rate: float = 0.0
    #: Mean value of every non-skipped score.
    average_score: float = 0.0
    #: One verdict per case that has rows, in order of first row.
    runs: list[RunVerdict] = field(default_factory=list)
    #: What the judge checks' judgements cost (``None``: no score was a judge's).
    judge: JudgeSummary | None = None
    #: The length of the longest row label (``None``: not counted), counted on the summary's
    #: walk over the rows so that the text report need not walk them once more for its
    #: column width: rows read back from disk cost a third of that report's time a walk.
    #: A layout aid, not part of what the summary says: not compared, not serialized.
    longest_label: int | None = field(default=None, compare=False)
    #: Failing rows with a failing score that is an error (``None``: not counted), counted on
    #: the summary's walk for the JUnit report's ``errors`` count, for the same reason.
    error_rows: int | None = field(default=None, compare=False)


@dataclass(slots=True)
class JudgeSummary:
    """The judgements behind the rows' judge scores (each score's ``judge`` record): model
    requests made, answers from the cache, judgements not made (a spent budget), errors,
    tokens and dollars. ``unpriced`` lists the models with no price in the suite's
    ``prices:`` (their tokens are counted, their cost is not)."""

    judgements: int = 0
    requests: int = 0
    cached: int = 0
    skipped: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    models: list[str] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)

    def add(self, record: dict[str, Any]) -> None:
        """Count one score's ``judge`` record (``JudgeOutcome.record()``)."""
        self.judgements += 1
        model = str(record.get("model", ""))
        if model not in self.models:
            self.models.append(model)
        if record.get("skipped"):
            self.skipped += 1
            return
        if record.get("error"):
            self.errors += 1
        if record.get("cached"):
            self.cached += 1
        else:
            self.requests += int(record.get("attempts") or 0)
            cost = record.get("cost_usd")
            if isinstance(cost, (int, float)):
                self.cost_usd += cost
            elif (record.get("input_tokens") or record.get("output_tokens")) and (
                model not in self.unpriced
            ):
                self.unpriced.append(model)
        self.input_tokens += int(record.get("input_tokens") or 0)
        self.output_tokens += int(record.get("output_tokens") or 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judgements": self.judgements,
            "requests": self.requests,
            "cached": self.cached,
            "skipped": self.skipped,
            "errors": self.errors,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 9),
            "models": list(self.models),
            "unpriced": list(self.unpriced),
        }

    def line(self) -> str:
        """One line for the text reports: ``judge: 3 judgements, 2 requests (1 cached), ...``."""
        cost = f"${self.cost_usd:.6f}"
        if self.unpriced:
            cost += f" (no price for {', '.join(self.unpriced)})"
        text = (
            f"judge: {self.judgements} judgements, {self.requests} requests "
            f"({self.cached} cached), {self.input_tokens} input + {self.output_tokens} output "
            f"tokens, {cost}"
        )
        if self.errors:
            text += f"; {self.errors} errors"
        if self.skipped:
            text += f"; {self.skipped} not judged: the judge budget was spent"
        return text


@dataclass(slots=True)
class EvaluationReport:
    """Rows of (case, trace) results for one suite, and their roll-up."""

    suite_name: str
    suite_version: str
    #: The rows in report order: a list, or any re-iterable sequence (rows read back from disk).
    cases: Sequence[CaseResult]
    summary: Summary

    @property
    def passed(self) -> bool:
        """Whether every case passed (a repeated case by its runs threshold)."""
        return all(verdict.passed for verdict in self.summary.runs)

    @classmethod
    def from_results(
        cls, suite: TestSuite | None, results: Iterable[CaseResult]
    ) -> EvaluationReport:
        """A report over results computed anywhere, in the order given; the summary is derived.

        A ``Sequence`` is kept as it is, not copied: a batch run's rows may be read back from
        disk on each walk (``SpilledRows``), which the summary walks once."""
        rows = results if isinstance(results, Sequence) else list(results)
        cases = {c.id: c for c in suite.cases} if suite is not None else {}
        return cls(
            suite_name=suite.name if suite is not None else "",
            suite_version=suite.version if suite is not None else "",
            cases=rows,
            summary=summarize(rows, cases),
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data with stable field names and ``schema_version``."""
        summary = self.summary
        return {
            "schema_version": SCHEMA_VERSION,
            "suite": {"name": self.suite_name, "version": self.suite_version},
            "passed": self.passed,
            "summary": {
                "passed_cases": summary.passed_cases,
                "total_cases": summary.total_cases,
                "pass_rate": summary.pass_rate,
                "average_score": summary.average_score,
                "metrics": {
                    name: {"passed": m.passed, "total": m.total}
                    for name, m in summary.metrics.items()
                },
                "runs": [verdict.to_dict() for verdict in summary.runs],
                **({"judge": summary.judge.to_dict()} if summary.judge is not None else {}),
            },
            "cases": [row.to_dict() for row in self.cases],
        }

    @classmethod
    def from_dict(cls, data: Any) -> EvaluationReport:
        """Read a report written by :meth:`to_dict` (e.g. for ``tooltrail gate``)."""
        if not isinstance(data, dict):
            raise ReportError("a report must be a JSON object")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ReportError(
                f"unsupported report schema_version {version!r} (this tooltrail reads "
                f"{SCHEMA_VERSION})"
            )
        try:
            rows = [CaseResult.from_dict(row) for row in data.get("cases", [])]
            suite = data.get("suite") or {}
            runs = [
                RunVerdict(
                    case_id=str(r["case_id"]),
                    passed_runs=int(r["passed_runs"]),
                    runs=int(r["runs"]),
                    threshold=r.get("threshold"),
                    passed=bool(r["passed"]),
                    repeated=bool(r.get("repeated", False)),
                )
                for r in (data.get("summary") or {}).get("runs", [])
            ]
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ReportError(f"malformed report: {type(exc).__name__}: {exc}") from None
        summary = summarize(rows, {})
        if runs:  # keep the recorded thresholds: the suite is not at hand
            counted = {verdict.case_id: verdict for verdict in summary.runs}
            for verdict in runs:  # the flips are the rows' own, in their order
                found = counted.get(verdict.case_id)
                if found is not None:
                    verdict.recorded, verdict.flips = found.recorded, found.flips
            summary.runs = runs
        return cls(str(suite.get("name", "")), str(suite.get("version", "")), rows, summary)


@dataclass(slots=True, frozen=True)
class _CasePlan:
    """A case compiled to checks: its fields', each turn's, then its scorers', in report order."""

    case: TestCase
    checks: list[Check]
    #: Turn ``n``'s checks at index ``n - 1``.
    turns: list[list[Check]]
    scorers: list[Check]
    #: Per scorer: whether it is one of tooltrail's own (no time limit: see ``_prepare``).
    builtin_scorers: list[bool]
    #: The exception type name when the case's fields could not be compiled to checks.
    broken: str | None = None
    #: Whether a scorer of the case is not tooltrail's own: the case's checks then run
    #: through ``checks.timelimit``, that scorer under the case's time limit. Worked out once
    #: per plan, not on every trace ``evaluate_cases`` is given.
    timed: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timed", not all(self.builtin_scorers))


def _plan(case: TestCase, registry: Registry | None) -> _CasePlan:
    """The checks of ``case``; scorers are looked up in ``registry`` (default: the
    process-wide one)."""
    broken = None
    try:
        checks = case_checks(case)
        turns = [expect_checks(turn.expect) for turn in case.turns]
    except Exception as exc:  # bad input must cost one row, not the run
        checks, turns, broken = [], [], type(exc).__name__
    scorers: list[Check] = []
    if case.evaluators:
        build = (registry if registry is not None else default_registry()).build
        scorers = [build(evaluator) for evaluator in case.evaluators]
    return _CasePlan(
        case=case,
        checks=checks,
        turns=turns,
        scorers=scorers,
        builtin_scorers=[is_builtin(scorer) for scorer in scorers],
        broken=broken,
    )


class CasePlans:
    """Each case compiled to its checks once, for every trace a run evaluates it on.

    Compiling a case (``case_checks``, each turn's checks, the registry building its scorers)
    cost about a quarter of ``evaluate_cases`` when done per trace (the batch pass, one policy:
    profiled at 5% of ``tooltrail eval``'s CPU). A plan is keyed by the case *object*, not its
    id: two suites, or two cases of one suite, may share an id with different expectations.
    The plan holds its case, so the object's ``id()`` cannot be reused while it is cached.
    Cases must not be changed while the plans are in use; keep one ``CasePlans`` for one run
    (a batch task) and let it go with it. Scorers are built once per case, as
    ``evaluate_suite`` always did: a scorer object must not keep state between traces.
    Threads may share one (a task's judged traces): two that compile a case at once make
    two equal plans, and one of them is kept.
    """

    __slots__ = ("registry", "_plans")

    def __init__(self, registry: Registry | None = None) -> None:
        #: Where the cases' scorers are looked up (``None``: the process-wide registry).
        self.registry = registry
        self._plans: dict[int, _CasePlan] = {}

    def of(self, case: TestCase) -> _CasePlan:
        """The compiled ``case``: compiled on first use, then the same plan."""
        plan = self._plans.get(id(case))
        if plan is None or plan.case is not case:
            plan = self._plans[id(case)] = _plan(case, self.registry)
        return plan


def reads_usage(cases: Iterable[TestCase], registry: Registry | None = None) -> bool:
    """Whether a check of ``cases`` (its fields', its turns', its scorers') reads what a trace
    used: a check whose ``reads_usage`` is true (``checks.budgets``; a plug-in check may say so
    too). Traces must then be converted with ``usage=True`` (``tooltrail.convert``)."""
    return _any_check_says(cases, registry, "reads_usage")


def reads_content(cases: Iterable[TestCase], registry: Registry | None = None) -> bool:
    """Whether a check of ``cases`` reads what was said and returned: a check whose
    ``reads_content`` is true (a judge of replies or tool results). Traces must then be
    converted with ``content=True`` (``tooltrail.convert``)."""
    return _any_check_says(cases, registry, "reads_content")


def asks_judge(cases: Iterable[TestCase], registry: Registry | None = None) -> bool:
    """Whether a check of ``cases`` asks a judge model (``checks.judges``): only then does a
    run build its judge (``tooltrail.judging``)."""
    return _any_check_says(cases, registry, "asks_judge")


def _any_check_says(cases: Iterable[TestCase], registry: Registry | None, flag: str) -> bool:
    for case in cases:
        plan = _plan(case, registry)
        for check in (*plan.checks, *(c for turn in plan.turns for c in turn), *plan.scorers):
            if getattr(check, flag, False) is True:
                return True
    return False


def evaluation_time_limit(cases: Iterable[TestCase], registry: Registry | None = None) -> float:
    """The longest one trace's evaluation can take because of time limits: every check under
    one (not tooltrail's own) of every case running up to its case's ``check_timeout``.
    Whoever watches an evaluation for being stuck (``serve``'s trace buffer) waits longer."""
    total = 0.0
    for case in cases:
        plan = _plan(case, registry)
        timed = sum(1 for builtin in plan.builtin_scorers if not builtin)
        if timed:
            limit = case.check_timeout
            total += timed * (limit if limit is not None else DEFAULT_CHECK_TIMEOUT_S)
    return total


def _uncaptured(plan: _CasePlan, reason: str, no_reply: bool) -> _CasePlan:
    """``plan`` for a trace whose calls' content was not captured: its checks that read the
    calls (and, with ``no_reply``, the reply) give error scores (``checks.uncaptured``)."""
    return replace(
        plan,
        checks=guarded(plan.checks, reason, no_reply),
        turns=[guarded(turn, reason, no_reply) for turn in plan.turns],
        scorers=guarded(plan.scorers, reason, no_reply),
    )


def _checks_failed(error: str) -> Score:
    return Score.failing("checks", "checks", f"The checks could not run: {error}.", error=error)


def _turn_contexts(
    plan: _CasePlan, ctx: CheckContext
) -> Iterator[tuple[list[Check], CheckContext]]:
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


def _evaluate(
    plan: _CasePlan,
    trace: EvalTrace,
    view: CallView,
    output: str | None,
    label: str | None,
    redaction: Redaction | None = None,
) -> CaseResult:
    """Run a compiled case on ``trace`` with its call index ``view``, on this thread: only
    for a case whose every check is tooltrail's own (``_CasePlan.timed`` is false)."""
    case = plan.case
    if trace.content_missing is not None:
        plan = _uncaptured(plan, trace.content_missing, output is None and trace.output is None)
    ctx = case_context(case, trace, output, view, redaction)
    scores: list[Score] = []
    if plan.broken is not None:
        scores.append(_checks_failed(plan.broken))
    else:
        try:
            run_checks(plan.checks, ctx, scores)
            for turn_checks, turn_ctx in _turn_contexts(plan, ctx):
                run_checks(turn_checks, turn_ctx, scores)
        except Exception as exc:  # bad input must cost one row, not the run
            scores = [_checks_failed(type(exc).__name__)]
    if plan.scorers:
        run_checks(plan.scorers, ctx, scores)
    return _row(case.id, scores, trace, label, redaction)


def _passed(scores: list[Score]) -> bool:
    """Whether no score fails the case (``Score.failed``)."""
    for score in scores:
        if score.failed:
            return False
    return True


@dataclass(slots=True)
class _Run:
    """One case's checks on one trace, as steps of ``checks.timelimit``: its fields' and
    turns' checks (``builtins`` of them), then its scorers."""

    plan: _CasePlan
    label: str | None
    steps: list[Step]
    builtins: int
    #: Why the fields' and turns' checks cannot run (an exception type name), else ``None``.
    broken: str | None


def _prepare(
    plan: _CasePlan,
    trace: EvalTrace,
    view: CallView,
    output: str | None,
    label: str | None,
    redaction: Redaction | None = None,
) -> _Run:
    """The steps of a compiled case on ``trace`` with its call index ``view``."""
    case = plan.case
    if trace.content_missing is not None:
        plan = _uncaptured(plan, trace.content_missing, output is None and trace.output is None)
    limit = case.check_timeout if case.check_timeout is not None else DEFAULT_CHECK_TIMEOUT_S
    ctx = case_context(case, trace, output, view, redaction)
    steps: list[Step] = []
    broken = plan.broken
    if broken is None:
        try:
            steps = [(check, ctx, None) for check in plan.checks]
            for turn_checks, turn_ctx in _turn_contexts(plan, ctx):
                steps.extend((check, turn_ctx, None) for check in turn_checks)
        except Exception as exc:  # bad input must cost one row, not the run
            steps, broken = [], type(exc).__name__
    builtins = len(steps)
    steps.extend(
        (check, ctx, None if builtin else limit)
        for check, builtin in zip(plan.scorers, plan.builtin_scorers, strict=True)
    )
    return _Run(plan=plan, label=label, steps=steps, builtins=builtins, broken=broken)


def _run_all(
    runs: list[_Run], trace: EvalTrace, redaction: Redaction | None = None
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
        results.append(_result(run, outcomes[at : at + count], trace, redaction))
        at += count
    return results


def _result(
    run: _Run, outcomes: list[Outcome], trace: EvalTrace, redaction: Redaction | None
) -> CaseResult:
    """The row of one case from its steps' outcomes; never raises."""
    case = run.plan.case
    steps = run.steps
    builtins = run.builtins
    scores: list[Score] = []
    if run.broken is not None:
        scores.append(_checks_failed(run.broken))
    else:
        try:
            for index in range(builtins):
                outcome = outcomes[index]
                kind = outcome.__class__
                if kind is Score:
                    scores.append(outcome)  # type: ignore[arg-type]
                elif kind is Raised:  # a built-in check's bug: the row says so, once
                    scores = [_checks_failed(type(outcome.error).__name__)]  # type: ignore[union-attr]
                    break
                elif kind is TimedOut or kind is NotRun:
                    scores.append(outcome_score(steps[index][0], outcome))  # type: ignore[arg-type]
                else:
                    scores.extend(outcome)  # type: ignore[arg-type]
        except Exception as exc:  # bad input must cost one row, not the run
            scores = [_checks_failed(type(exc).__name__)]
    for index in range(builtins, len(steps)):
        outcome = outcomes[index]
        kind = outcome.__class__
        if kind is list:
            scores.extend(outcome)  # type: ignore[arg-type]
        elif kind is Score:
            scores.append(outcome)  # type: ignore[arg-type]
        else:  # a scorer's SystemExit and the like, a time limit
            scores.append(outcome_score(steps[index][0], outcome))  # type: ignore[arg-type]
    return _row(case.id, scores, trace, run.label, redaction)


def _row(
    case_id: str,
    scores: list[Score],
    trace: EvalTrace,
    label: str | None,
    redaction: Redaction | None,
) -> CaseResult:
    """A case's row, its explanations redacted (``tooltrail.redact``) before they leave."""
    scores = redacted_explanations(redaction or DEFAULT_REDACTION, scores)
    return CaseResult(case_id, _passed(scores), scores, trace.trace_id, label or case_id)


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
    plan = _plan(case, registry)
    view = CallView(trace.tool_calls)
    if not plan.timed:
        return _evaluate(plan, trace, view, output, label, redaction)
    return _run_all([_prepare(plan, trace, view, output, label, redaction)], trace, redaction)[0]


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
        compiled = [_plan(case, registry) for case in cases]
    else:
        compiled = [plans.of(case) for case in cases]
    if not any(plan.timed for plan in compiled):  # tooltrail's own checks only: no hand-off
        return [_evaluate(plan, trace, view, output, None, redaction) for plan in compiled]
    runs = [_prepare(plan, trace, view, output, None, redaction) for plan in compiled]
    return _run_all(runs, trace, redaction)


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
    plans: dict[str, _CasePlan] = {}  # each case compiled once for the whole run
    seen: dict[str, int] = {}
    rows = []
    for sample in samples:
        case_id = sample.case_id
        plan = plans.get(case_id)
        if plan is None:
            plan = plans[case_id] = _plan(cases[case_id], registry)
        label = sample.label
        if label is None and counts[case_id] > 1:
            seen[case_id] = seen.get(case_id, 0) + 1
            label = f"{case_id} run {seen[case_id]}"
        trace = sample.trace if sample.trace is not None else EvalTrace(trace_id="")
        view = CallView(trace.tool_calls)
        if plan.timed:
            run = _prepare(plan, trace, view, sample.output, label, redaction)
            rows.extend(_run_all([run], trace, redaction))
        else:
            rows.append(_evaluate(plan, trace, view, sample.output, label, redaction))
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


def summarize(rows: Iterable[CaseResult], cases: dict[str, TestCase]) -> Summary:
    """The roll-up of docs/checks.md: metrics over non-skipped scores, keys sorted; case counts;
    mean score; one runs verdict per case (``cases`` supplies runs/threshold).

    One walk over ``rows``, a block at a time, so rows read lazily from disk are not all held."""
    summarizer = Summarizer(cases)
    walk = iter(rows)
    while block := list(islice(walk, SUMMARY_BLOCK)):
        summarizer.add(block)
    return summarizer.summary()


class Summarizer:
    """``summarize`` fed a block of rows at a time, in report order: a report that writes its
    rows before its roll-up (the text report) counts them as it writes them, in the same walk
    (rows read back from disk are unpickled on every walk: ``batch.spill``)."""

    def __init__(self, cases: dict[str, TestCase]) -> None:
        self._cases = cases
        # case id -> [passed rows, rows, flips, the last row's outcome], by first row
        self._by_case: dict[str, list[int]] = {}
        self._totals: dict[str, int] = {}
        self._passes: dict[str, int] = {}
        self._total_value = 0.0
        self._counted = 0
        self._judged: JudgeSummary | None = None
        self._longest_label = 0
        self._error_rows = 0

    def add(self, block: Sequence[CaseResult]) -> None:
        """Count the rows of ``block``, the next ones in report order."""
        if not block:
            return
        self._longest_label = max(self._longest_label, max([len(row.label) for row in block]))
        by_case = self._by_case
        for row in block:
            passed = row.passed
            counts = by_case.get(row.case_id)
            if counts is None:
                counts = by_case[row.case_id] = [0, 0, 0, passed]
            elif counts[3] != passed:  # the outcome flipped since the case's previous row
                counts[2] += 1
                counts[3] = passed
            if passed:
                counts[0] += 1
            elif any([s.error for s in row.scores]) and any(s.error for s in row.failures):
                self._error_rows += 1  # (errors are rare: the property only on such rows)
            counts[1] += 1
        # Counted at C speed: this runs over every score of a batch (millions in a nightly run).
        scores = [score for row in block for score in row.scores if not score.skipped]
        records = [score.judge for score in scores if score.judge is not None]
        if records:
            judged = self._judged = self._judged or JudgeSummary()
            for record in records:
                judged.add(record)
        tally(self._totals, [score.metric for score in scores])
        tally(self._passes, [score.metric for score in scores if score.passed])
        values = [score.value for score in scores]
        if not math.isfinite(sum(values)):  # a NaN or infinite value is left out of the mean
            values = [v for v in values if math.isfinite(v)]
        # Continues the sum: the same additions in the same order, whatever the blocks.
        self._total_value = sum(values, self._total_value)
        self._counted += len(values)

    def summary(self) -> Summary:
        """The roll-up of the rows added so far."""
        totals, passes, by_case = self._totals, self._passes, self._by_case
        metrics = {
            name: MetricSummary(passes.get(name, 0), totals[name]) for name in sorted(totals)
        }
        passed_rows = sum([counts[0] for counts in by_case.values()])
        total = sum([counts[1] for counts in by_case.values()])
        verdicts = []
        for case_id, (passed_runs, case_rows, flips, _) in by_case.items():
            case = self._cases.get(case_id)
            wanted_runs = case.runs if case is not None else 1
            threshold = case.threshold if case is not None else None
            runs = max(wanted_runs, case_rows)
            verdicts.append(
                RunVerdict(
                    case_id=case_id,
                    passed_runs=passed_runs,
                    runs=runs,
                    threshold=threshold,
                    passed=meets(passed_runs, runs, 1.0 if threshold is None else threshold),
                    repeated=case is not None and (case.runs > 1 or case.threshold is not None),
                    recorded=case_rows,
                    flips=flips,
                )
            )
        return Summary(
            metrics=metrics,
            passed_cases=passed_rows,
            total_cases=total,
            pass_rate=passed_rows / total if total else 0.0,
            average_score=self._total_value / self._counted if self._counted else 0.0,
            runs=verdicts,
            judge=_judge_copy(self._judged),
            longest_label=self._longest_label,
            error_rows=self._error_rows,
        )


def _judge_copy(judged: JudgeSummary | None) -> JudgeSummary | None:
    """A summary's own copy: more rows added later do not change a summary already made."""
    if judged is None:
        return None
    return replace(judged, models=list(judged.models), unpriced=list(judged.unpriced))


#: Rows summarized at a time (a block of rows read back from disk is 512).
SUMMARY_BLOCK = 4096
