"""The ``trail`` fixture's object: the spans a test emitted, the calls read from them, and
assertions that speak the core's check explanations followed by the calls actually made."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import Tracer

from tooltrail.checks.expectations import ForbiddenTool, RequiredTool, ToolArgValues, ToolOrder
from tooltrail.checks.plugins import PluginError, load_plugins
from tooltrail.checks.protocol import Check, CheckContext, run_checks
from tooltrail.checks.score import Score
from tooltrail.checks.turns import TurnArgs, TurnOrdered, expect_checks
from tooltrail.checks.view import CallView
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.pytest.agent_calls import Agent, is_async_agent
from tooltrail.pytest.capture import (
    ACTIVE_TESTS,
    SpanCapture,
    connect_global_provider,
    scoped_provider,
)
from tooltrail.pytest.messages import format_calls
from tooltrail.pytest.runs import (
    RunsResult,
    TrajectoryAssertionError,
    TrialsInconclusive,
    redaction,
    run_conversations,
    run_conversations_async,
)
from tooltrail.pytest.sdk_spans import trace_of_spans
from tooltrail.pytest.trials import session_confidence
from tooltrail.redact import redacted_explanations
from tooltrail.results import CaseResult
from tooltrail.score import evaluate_trace
from tooltrail.suite.case import Expect, Turn
from tooltrail.suite.case import TestCase as Case
from tooltrail.trials import check_confidence

if TYPE_CHECKING:
    import pytest

ArgsMode = Literal["subset", "exact"]
OrderMode = Literal["first_call", "subsequence"]
Expectation = Case | Expect | Turn | Sequence[Turn]


class Trail:
    """What the code under test did during one test, read from the spans it emitted.

    Spans reach the trail from :attr:`provider` (a tracer provider scoped to this test) and,
    unless disabled, from the global tracer provider. ``calls`` and ``trace`` are re-read
    whenever new spans arrived.
    """

    def __init__(
        self,
        test_id: str,
        *,
        runs: int | None = None,
        threshold: float | None = None,
        concurrency: int | None = None,
        confidence: float | None = None,
    ) -> None:
        self.test_id = test_id
        self.capture = SpanCapture()
        #: Defaults for :meth:`run_turns`, from ``@pytest.mark.tooltrail`` (``confidence``:
        #: also from the ``tooltrail_confidence`` option).
        self.runs = runs
        self.threshold = threshold
        self.concurrency = concurrency
        self.confidence = confidence
        self._check_scores: list[Score] = []
        self._run_results: list[RunsResult] = []
        self._provider: TracerProvider | None = None
        self._cached: tuple[int, EvalTrace] | None = None

    # -- what was captured ----------------------------------------------------------------

    @property
    def provider(self) -> TracerProvider:
        """An SDK tracer provider whose spans this trail captures (shut down after the test)."""
        if self._provider is None:
            self._provider = scoped_provider(self.capture)
        return self._provider

    @property
    def tracer(self) -> Tracer:
        """A tracer of :attr:`provider`, for code under test that takes one."""
        return self.provider.get_tracer("tooltrail.pytest")

    @property
    def spans(self) -> list[ReadableSpan]:
        """The ended spans captured so far, in end order."""
        return self.capture.spans()

    @property
    def trace(self) -> EvalTrace:
        """The trajectory read from the captured spans (one trace, or a conversation of them)."""
        count = len(self.capture)
        if self._cached is None or self._cached[0] != count:
            spans = self.capture.spans()
            self._cached = (len(spans), trace_of_spans(spans))
        return self._cached[1]

    @property
    def calls(self) -> list[ToolCall]:
        """The tool calls made so far, in trajectory order."""
        return self.trace.tool_calls

    def reset(self) -> None:
        """Forget the spans captured so far (e.g. those of a warm-up call)."""
        self.capture.clear()
        self._cached = None

    # -- checks ---------------------------------------------------------------------------

    def check(self, expectation: Expectation) -> list[Score]:
        """The core's scores for ``expectation`` on the captured trajectory; never raises.

        A ``TestCase`` is evaluated as everywhere else; a list of ``Turn`` is judged per turn;
        a single ``Expect`` (or ``Turn``) judges every call of the test as one turn.
        """
        trace = self.trace
        if isinstance(expectation, Case):
            return evaluate_trace(
                expectation, trace, label=self.test_id, redaction=redaction()
            ).scores
        if isinstance(expectation, Turn):
            expectation = expectation.expect
        if isinstance(expectation, Expect):
            scores: list[Score] = []
            run_checks(expect_checks(expectation), self._context(), scores)
            return redacted_explanations(redaction(), scores)
        turns = list(expectation)
        case = Case(id=self.test_id, turns=turns)
        return evaluate_trace(case, trace, label=self.test_id, redaction=redaction()).scores

    def assert_passes(self, expectation: Expectation) -> list[Score]:
        """:meth:`check`, failing with every failed score's explanation and the calls made."""
        __tracebackhide__ = True
        scores = self.check(expectation)
        self._record(scores)
        failed = [score for score in scores if score.failed]
        if failed:
            reasons = "\n".join(f"{score.name}: {score.explanation}" for score in failed)
            self._fail(reasons)
        return scores

    def assert_called(
        self, tool: str, args: dict[str, Any] | None = None, mode: ArgsMode = "subset"
    ) -> Score:
        """Some call of ``tool`` was made (with ``args``: a subset of, or exactly, its args)."""
        __tracebackhide__ = True
        check: Check
        if args is None:
            check = RequiredTool(tool)
        elif mode == "subset":
            check = ToolArgValues(tool, args)
        elif mode == "exact":
            check = TurnArgs(tool, args, "exact")
        else:
            raise ValueError(f"mode must be 'subset' or 'exact', not {mode!r}")
        return self._assert(check)

    def assert_not_called(self, tool: str) -> Score:
        """No call of ``tool`` was made."""
        __tracebackhide__ = True
        return self._assert(ForbiddenTool(tool))

    def assert_order(self, tools: Sequence[str], mode: OrderMode = "first_call") -> Score:
        """The tools were called in this order.

        ``first_call`` (the ``required_tool_order`` rule): each tool's first call comes after
        the previous tool's first call. ``subsequence`` (``tool_calls_ordered``): the list
        occurs in order in the calls, each entry consuming one call.
        """
        __tracebackhide__ = True
        order = list(tools)
        check: Check
        if mode == "first_call":
            check = ToolOrder(order)
        elif mode == "subsequence":
            check = TurnOrdered(order)
        else:
            raise ValueError(f"mode must be 'first_call' or 'subsequence', not {mode!r}")
        return self._assert(check)

    def _context(self) -> CheckContext:
        """What every assertion judges: all calls of the test, as turn 1 for per-turn checks."""
        trace = self.trace
        return CheckContext(
            trace=trace,
            view=CallView(trace.tool_calls),
            output=trace.output,
            turn=1,
            redaction=redaction(),
        )

    def _assert(self, check: Check) -> Score:
        __tracebackhide__ = True
        result = check.evaluate(self._context())
        score = result if isinstance(result, Score) else result[0]
        score = redacted_explanations(redaction(), [score])[0]
        self._record([score])
        if not score.passed:
            self._fail(score.explanation)
        return score

    def _fail(self, reasons: str) -> None:
        __tracebackhide__ = True
        raise TrajectoryAssertionError(f"{reasons}\n{format_calls(self.calls)}")

    def _record(self, scores: list[Score]) -> None:
        self._check_scores.extend(scores)

    # -- conversations, repeated ------------------------------------------------------------

    def run_turns(
        self,
        agent: Agent | Callable[[], Agent],
        turns: Sequence[Turn] | Case,
        *,
        runs: int | None = None,
        threshold: float | None = None,
        factory: bool = False,
        concurrency: int | None = None,
        confidence: float | None = None,
    ) -> RunsResult:
        """Run ``agent`` over ``turns`` ``runs`` times; fail unless passed/runs >= threshold.

        ``agent(user_message)`` is called once per turn (sync or async; async runs go
        concurrently, at most ``concurrency`` at a time). With ``factory=True``, ``agent()``
        is called first in each run to get that run's fresh agent. ``runs``/``threshold``
        default to ``@pytest.mark.tooltrail``, else one run that must pass. ``turns`` may be a
        ``TestCase`` whose turns and case expectations apply to each run. With a
        ``confidence`` (default: the marker's, else the ``tooltrail_confidence`` option), runs
        whose Wilson interval straddles the threshold raise ``TrialsInconclusive``.
        """
        __tracebackhide__ = True
        case, count, floor, limit = self._settings(turns, runs, threshold, concurrency)
        agents = _agents(agent, count, factory)
        concurrent = is_async_agent(agents[0])
        if concurrent and _loop_running():
            raise RuntimeError(
                "trail.run_turns cannot run an async agent inside a running event loop; "
                "use `await trail.arun_turns(...)` in an async test"
            )
        outcomes = run_conversations(
            agents,
            case,
            trace_of_spans,
            label=self.test_id,
            concurrent_async=concurrent,
            concurrency=limit,
        )
        return self._conclude(RunsResult(case, outcomes, floor, self._confidence(confidence)))

    async def arun_turns(
        self,
        agent: Agent | Callable[[], Agent],
        turns: Sequence[Turn] | Case,
        *,
        runs: int | None = None,
        threshold: float | None = None,
        factory: bool = False,
        concurrency: int | None = None,
        confidence: float | None = None,
    ) -> RunsResult:
        """:meth:`run_turns` for async tests: runs go concurrently on the running loop."""
        __tracebackhide__ = True
        case, count, floor, limit = self._settings(turns, runs, threshold, concurrency)
        agents = _agents(agent, count, factory)
        outcomes = await run_conversations_async(
            agents, case, trace_of_spans, label=self.test_id, concurrency=limit
        )
        return self._conclude(RunsResult(case, outcomes, floor, self._confidence(confidence)))

    def _confidence(self, confidence: float | None) -> float | None:
        """The confidence that decides these runs: the call's, else the trail's default."""
        chosen = confidence if confidence is not None else self.confidence
        return None if chosen is None else check_confidence(chosen)

    def _settings(
        self,
        turns: Sequence[Turn] | Case,
        runs: int | None,
        threshold: float | None,
        concurrency: int | None,
    ) -> tuple[Case, int, float | None, int | None]:
        if isinstance(turns, Case):
            case = turns
            count = runs or (case.runs if case.runs > 1 else None) or self.runs or 1
            floor = threshold if threshold is not None else case.threshold
        else:
            turn_list = list(turns)
            if not turn_list or not all(isinstance(turn, Turn) for turn in turn_list):
                raise TypeError("turns must be a non-empty list of tooltrail Turn objects")
            case = Case(id=self.test_id, turns=turn_list)
            count = runs or self.runs or 1
            floor = threshold
        if floor is None:
            floor = self.threshold
        if count < 1:
            raise ValueError(f"runs must be at least 1, not {count}")
        if floor is not None and not 0.0 <= floor <= 1.0:
            raise ValueError(f"threshold must be between 0 and 1, not {floor}")
        return case, count, floor, concurrency or self.concurrency

    def _conclude(self, result: RunsResult) -> RunsResult:
        __tracebackhide__ = True
        self._run_results.append(result)
        verdict = result.verdict
        if verdict == "inconclusive":
            raise TrialsInconclusive(result.failure_message())
        if verdict == "fail":
            raise TrajectoryAssertionError(result.failure_message())
        return result

    @property
    def results(self) -> list[CaseResult]:
        """This test's verdicts as report rows: one row for all its assertions, one per run.

        Rows of the first ``run_turns`` call have the test's node id as case id (later calls
        add ``#2``, ``#3``...); the assertions' row adds `` assertions`` when runs exist too.
        """
        rows: list[CaseResult] = []
        for index, runs in enumerate(self._run_results, 1):
            case_id = self._runs_case_id(index)
            for run in runs.runs:
                result = run.result
                rows.append(
                    CaseResult(
                        case_id,
                        result.passed,
                        result.scores,
                        result.trace_id,
                        f"{case_id} run {run.number}",
                    )
                )
        if self._check_scores:
            case_id = f"{self.test_id} assertions" if self._run_results else self.test_id
            passed = not any(score.failed for score in self._check_scores)
            trace_id = self.trace.trace_id or None
            rows.insert(0, CaseResult(case_id, passed, list(self._check_scores), trace_id))
        return rows

    def _runs_case_id(self, index: int) -> str:
        return self.test_id if index == 1 else f"{self.test_id} #{index}"

    def report_data(self) -> dict[str, Any]:
        """:attr:`results` as plain data, with each ``run_turns`` call's runs and threshold."""
        return {
            "rows": [row.to_dict() for row in self.results],
            "runs": [
                {
                    "case_id": self._runs_case_id(index),
                    "runs": len(r.runs),
                    "threshold": r.threshold,
                }
                for index, r in enumerate(self._run_results, 1)
            ],
        }

    def close(self) -> None:
        if self._provider is not None:
            self._provider.shutdown()
            self._provider = None


def _agents(agent: Any, count: int, factory: bool) -> list[Agent]:
    if not callable(agent):
        raise TypeError(f"agent must be callable, not {type(agent).__name__}")
    if not factory:
        return [agent] * count
    made = [agent() for _ in range(count)]
    for one in made:
        if not callable(one):
            raise TypeError(f"the agent factory returned {type(one).__name__}, not a callable")
    return made


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@contextmanager
def open_trail(request: pytest.FixtureRequest) -> Iterator[Trail]:
    """The trail of one test: capturing from setup to teardown, with the marker's defaults."""
    marker = request.node.get_closest_marker("tooltrail")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    unknown = set(options) - {"runs", "threshold", "concurrency", "confidence"}
    if unknown or (marker is not None and marker.args):
        raise TypeError(
            "@pytest.mark.tooltrail takes only the keywords runs, threshold, concurrency and "
            f"confidence; got {sorted(unknown) or list(marker.args)}"  # type: ignore[union-attr]
        )
    if options.get("confidence") is not None:
        options["confidence"] = check_confidence(options["confidence"])
    else:
        options["confidence"] = session_confidence(request.config)
    try:  # installed plug-ins and TOOLTRAIL_PLUGINS, for checks a test names
        load_plugins()
    except PluginError as error:
        import pytest

        pytest.fail(str(error), pytrace=False)
    trail = Trail(request.node.nodeid, **options)
    if request.config.getini("tooltrail_global_provider"):
        connect_global_provider()
    ACTIVE_TESTS.push(trail.capture)
    try:
        yield trail
    finally:
        ACTIVE_TESTS.remove(trail.capture)
        trail.close()


__all__ = ["RunsResult", "Trail", "TrajectoryAssertionError", "TrialsInconclusive", "open_trail"]
