"""Running an agent over a conversation N times and judging each run with the core's checks.

A run passes when its case passes (every turn's ``Expect`` and any case expectation); the test
passes when passed runs / runs >= threshold (inclusive; every run when no threshold is set).
With a ``confidence`` (the marker's, the ini option's), the runs are a sample: a test whose
Wilson interval straddles the threshold is *inconclusive* (``tooltrail.trials``), raised as
``TrialsInconclusive``, and the session exits 75 when nothing else failed.
The failure message names each failing run and the turn-labelled reasons, with the calls that
run made, and summarises the runs that passed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from tooltrail.checks.score import Score
from tooltrail.model import AgentSpan, EvalSpan, EvalTrace, Handoff, ToolCall
from tooltrail.model import Turn as TraceTurn
from tooltrail.pytest.agent_calls import (
    Agent,
    TurnRecord,
    run_turns_async,
    run_turns_sync,
)
from tooltrail.pytest.messages import format_turn_calls
from tooltrail.redact import Redaction
from tooltrail.report.trials import text_lines
from tooltrail.results import CaseResult, RunVerdict
from tooltrail.score import evaluate_trace
from tooltrail.settings import redaction_from_env
from tooltrail.suite.case import TestCase
from tooltrail.trials import Trials, Verdict, count_flips, meets

#: Turns SDK spans into the trajectory (``tooltrail.pytest.trail.trace_of_spans``).
SpanConverter = Callable[[list[ReadableSpan]], EvalTrace]


def redaction() -> Redaction:
    """The rules (``TOOLTRAIL_REDACT_*``) the plug-in's messages and scores are redacted with."""
    return redaction_from_env()


class TrajectoryAssertionError(AssertionError):
    """A trail assertion failed; the message holds the check explanations and the calls made,
    secrets redacted (``Redaction.redact_text``)."""

    def __init__(self, message: str = "") -> None:
        super().__init__(redaction().redact_text(message))


class TrialsInconclusive(TrajectoryAssertionError):
    """The runs cannot tell whether the agent meets the threshold: their Wilson interval
    straddles it (``RunsResult.verdict``). The test is reported *inconclusive*, and a session
    whose only failures are these exits 75, which CI may take as "rerun"."""


@dataclass(slots=True)
class RunOutcome:
    """One run of the conversation: its trajectory and the core's verdict on it."""

    number: int
    trace: EvalTrace
    result: CaseResult

    @property
    def passed(self) -> bool:
        return self.result.passed


@dataclass(slots=True)
class RunsResult:
    """Every run of one ``run_turns`` call and the threshold verdict over them."""

    case: TestCase
    runs: list[RunOutcome]
    #: ``None``: every run must pass.
    threshold: float | None
    #: The Wilson interval's confidence that decides the test (``None``: the threshold alone).
    confidence: float | None = None

    @property
    def passed_runs(self) -> int:
        return sum(run.passed for run in self.runs)

    @property
    def passed(self) -> bool:
        """Whether passed runs / runs >= threshold (the plain verdict, whatever the
        confidence)."""
        floor = 1.0 if self.threshold is None else self.threshold
        return meets(self.passed_runs, len(self.runs), floor)

    @property
    def trials(self) -> Trials:
        """The runs' figures: pass@k, pass^k, flip rate (in run order), Wilson interval."""
        outcomes = [run.passed for run in self.runs]
        return Trials(
            runs=len(outcomes),
            passed=sum(outcomes),
            recorded=len(outcomes),
            flips=count_flips(outcomes),
        )

    @property
    def verdict(self) -> Verdict:
        """``pass`` or ``fail`` as ``passed``; with a ``confidence``, ``inconclusive`` when the
        runs' Wilson interval straddles the threshold."""
        if self.confidence is None:
            return "pass" if self.passed else "fail"
        return self.trials.verdict(self.threshold, self.confidence)

    def run_verdict(self, case_id: str) -> RunVerdict:
        """These runs as a report's runs verdict of ``case_id``."""
        trials = self.trials
        return RunVerdict(
            case_id=case_id,
            passed_runs=trials.passed,
            runs=trials.runs,
            threshold=self.threshold,
            passed=self.passed,
            repeated=True,
            recorded=trials.recorded,
            flips=trials.flips,
        )

    @property
    def results(self) -> list[CaseResult]:
        return [run.result for run in self.runs]

    def summary(self) -> str:
        """``3/5 runs passed; threshold 0.8 needs 4/5`` (or ``...; every run must pass``)."""
        total = len(self.runs)
        if self.threshold is None:
            rule = "every run must pass"
        else:
            rule = (
                f"threshold {self.threshold:g} needs {runs_needed(self.threshold, total)}/{total}"
            )
        return f"{self.passed_runs}/{total} runs passed; {rule}"

    def failure_message(self) -> str:
        """Each failing run with its turn-labelled reasons and calls; passing runs summarised.

        Failing runs with the same reasons and the same calls share one block
        (``runs 1, 3 failed:``), so five identical failures read as one.
        """
        turn_count = len(self.case.turns)
        blocks: dict[tuple[str, ...], list[int]] = {}
        lines = [self.summary()]
        if self.confidence is not None:  # the interval that decided, and the other figures
            lines += text_lines(self.run_verdict(self.case.id), confidence=self.confidence)
        for run in self.runs:
            if run.passed:
                continue
            reasons = [f"    {message}" for message in run.result.failure_messages()]
            calls = format_turn_calls(run.trace.tool_calls, turn_count)
            block = (*reasons, "    calls made:", *(f"      {line}" for line in calls))
            blocks.setdefault(block, []).append(run.number)
        for block, numbers in blocks.items():
            label = "run" if len(numbers) == 1 else "runs"
            lines.append(f"{label} {', '.join(map(str, numbers))} failed:")
            lines.extend(block)
        passed = [str(run.number) for run in self.runs if run.passed]
        lines.append(f"passed runs: {', '.join(passed) if passed else 'none'}")
        return "\n".join(lines)


def runs_needed(threshold: float, runs: int) -> int:
    """The fewest passed runs out of ``runs`` that meet ``threshold`` (exact arithmetic)."""
    return min(runs, max(0, math.ceil(Fraction(repr(float(threshold))) * runs)))


def run_conversations(
    agents: Sequence[Agent],
    case: TestCase,
    converter: SpanConverter,
    *,
    label: str,
    concurrent_async: bool,
    concurrency: int | None,
) -> list[RunOutcome]:
    """Run each agent (one per run) over the case's turns; async agents may run concurrently."""
    users = [turn.user for turn in case.turns]
    if concurrent_async:
        records = asyncio.run(_gather(agents, users, concurrency))
    else:
        records = [run_turns_sync(agent, users) for agent in agents]
    return judge_runs(records, case, converter, label=label)


async def run_conversations_async(
    agents: Sequence[Agent],
    case: TestCase,
    converter: SpanConverter,
    *,
    label: str,
    concurrency: int | None,
) -> list[RunOutcome]:
    """:func:`run_conversations` for a caller already inside an event loop."""
    records = await _gather(agents, [turn.user for turn in case.turns], concurrency)
    return judge_runs(records, case, converter, label=label)


async def _gather(
    agents: Sequence[Agent], users: list[str], concurrency: int | None
) -> list[list[TurnRecord]]:
    limit = asyncio.Semaphore(concurrency if concurrency and concurrency > 0 else len(agents) or 1)

    async def one(agent: Agent) -> list[TurnRecord]:
        async with limit:
            return await run_turns_async(agent, users)

    # Each task runs in its own copy of the context, so each run captures only its own spans.
    return list(await asyncio.gather(*(one(agent) for agent in agents)))


def judge_runs(
    records: Sequence[list[TurnRecord]],
    case: TestCase,
    converter: SpanConverter,
    *,
    label: str,
) -> list[RunOutcome]:
    outcomes = []
    for number, run_records in enumerate(records, 1):
        trace = run_trace(run_records, converter, number, [turn.user for turn in case.turns])
        result = judge_run(case, trace, run_records, label=f"{label} run {number}")
        outcomes.append(RunOutcome(number, trace, result))
    return outcomes


def run_trace(
    records: list[TurnRecord],
    converter: SpanConverter,
    number: int,
    users: Sequence[str] = (),
) -> EvalTrace:
    """One run's trajectory: each turn's calls (returned, else read from its spans), in order,
    and each turn's user message (``users``) and reply, for the judge checks."""
    spans: list[EvalSpan] = []
    turns: list[TraceTurn] = []
    calls: list[ToolCall] = []
    trace_ids: list[str] = []
    agent_spans: list[AgentSpan] = []
    handoffs: list[Handoff] = []
    output: str | None = None
    for record in records:
        turn_trace = converter(record.spans) if record.spans else None
        if turn_trace is not None and record.returned_calls is None:  # its agents, handoffs
            agent_spans += [
                dataclasses.replace(a, turn=record.number) for a in turn_trace.agent_spans
            ]
            before = len(calls)
            handoffs += [
                dataclasses.replace(
                    h,
                    turn=record.number,
                    position=h.position + before,
                    call=None if h.call is None else h.call + before,
                )
                for h in turn_trace.handoffs
            ]
        if record.returned_calls is not None:
            turn_calls = record.returned_calls
        elif turn_trace is not None:
            turn_calls = [
                dataclasses.replace(call, turn=record.number) for call in turn_trace.tool_calls
            ]
            spans.extend(turn_trace.spans)
        else:
            turn_calls = []
        calls.extend(turn_calls)
        if turn_trace is not None:
            trace_ids.extend(turn_trace.metadata.get("trace_ids") or [turn_trace.trace_id])
        reply = (
            record.output
            if record.output is not None
            else (turn_trace.output if turn_trace is not None else None)
        )
        if reply is not None:
            output = reply
        user = users[record.number - 1] if 0 < record.number <= len(users) else None
        turns.append(TraceTurn(record.number, input=user, reply=reply))
    metadata: dict[str, Any] = {"turn_count": len(records), "run": number, "trace_ids": trace_ids}
    return EvalTrace(
        trace_id=trace_ids[0] if trace_ids else f"run-{number}",
        spans=spans,
        metadata=metadata,
        output=output,
        tool_calls=calls,
        turns=turns,
        agent_spans=agent_spans,
        handoffs=handoffs,
    )


def judge_run(
    case: TestCase, trace: EvalTrace, records: list[TurnRecord], *, label: str
) -> CaseResult:
    """The core's verdict on one run; an agent that raised fails the run at that turn.

    Expectations of the turn that raised, and of the turns after it, are left out: the
    agent's error is the reason those turns did not do what they should.
    """
    result = evaluate_trace(case, trace, label=label, redaction=redaction())
    failed = next((record for record in records if record.error is not None), None)
    if failed is None:
        return result
    result.scores = [s for s in result.scores if s.turn is None or s.turn < failed.number]
    result.scores.append(
        Score.failing(
            f"turn{failed.number}:agent_error",
            "agent_error",
            f"The agent raised {failed.error}",
            error=(failed.error or "").split(":", 1)[0],
            turn=failed.number,
        )
    )
    result.passed = False
    return result
