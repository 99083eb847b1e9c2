"""Live inline evaluation of a suite with judge checks: judged off the trace buffer's delivery
thread in a bounded queue, with the real OpenTelemetry SDK.

Every wait is on an event (a judge held until the test lets it go), with generous bounds: a
test that would block fails on its bound instead of hanging, and none depends on timing.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from fixtures import refund_case, refund_suite, wait_until
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from opentelemetry.sdk.trace import TracerProvider

from tooltrail.judge import JudgeOutcome, JudgeVerdict, use_judge
from tooltrail.live import InlineEvaluator, ToolArgsProcessor, TraceBuffer, install, tool
from tooltrail.pipeline.buffer import sinks_of

WAIT_S = 60.0

#: The refund policy's agent, its one required tool, and a judge over that tool's arguments.
SUITE = refund_suite(
    refund_case(
        "match",
        required_tools=["issue_refund"],
        evaluators=[
            {
                "name": "tool_args_judge",
                "config": {"tool": "issue_refund", "rubric": "The amount is the order's."},
            }
        ],
    )
)


class HeldJudge:
    """A judge that answers only once ``release`` is set, and says when it was asked."""

    def __init__(self) -> None:
        self.asked = threading.Event()
        self.release = threading.Event()
        self.prompts: list[str] = []
        self.concurrency = 2

    def judge(
        self, prompt: str, *, samples: int = 1, params: dict[str, Any] | None = None
    ) -> JudgeOutcome:
        self.prompts.append(prompt)
        self.asked.set()
        assert self.release.wait(WAIT_S), "the test never released the judge"
        verdict = JudgeVerdict(passed=True, score=1.0, reasoning="matches")
        return JudgeOutcome(verdict=verdict, model="test:held", attempts=1)


class Seen:
    """A trace sink ahead of the evaluator: which traces the buffer delivered."""

    def __init__(self) -> None:
        self.count = 0
        self.changed = threading.Condition()

    def __call__(self, trace: Any) -> None:
        with self.changed:
            self.count += 1
            self.changed.notify_all()

    def wait_for(self, n: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: self.count >= n, timeout=WAIT_S)


def agent_run(provider: TracerProvider, amount: float) -> None:
    tracer = provider.get_tracer("agent")
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"}
    with tracer.start_as_current_span("invoke_agent refund_agent", attributes=attributes):
        with tool("issue_refund", {"order_id": "ORD-7731", "amount": amount}, tracer=tracer):
            pass


def pipeline(evaluator: InlineEvaluator, seen: Seen) -> tuple[TracerProvider, TraceBuffer]:
    buffer = TraceBuffer(*sinks_of([seen]), evaluator, grace_s=0)
    provider = TracerProvider()
    provider.add_span_processor(ToolArgsProcessor(buffer))
    return provider, buffer


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_held_judge_does_not_hold_the_delivery_of_later_traces(tmp_path: Path) -> None:
    judge = HeldJudge()
    results = tmp_path / "results.jsonl"
    seen = Seen()
    with use_judge(judge):
        evaluator = InlineEvaluator(SUITE, results_path=results)
    provider, _ = pipeline(evaluator, seen)
    agent_run(provider, 49.99)
    assert judge.asked.wait(WAIT_S)
    # The judge holds the first trace; the buffer still delivers the next ones.
    agent_run(provider, 10.0)
    agent_run(provider, 20.0)
    assert seen.wait_for(3), "the delivery thread was held by the judge"
    assert evaluator.judge_stats()["judge_queue_in_progress"] >= 1
    judge.release.set()
    provider.shutdown()
    written = lines(results)
    assert len(written) == 3
    scores = [s for line in written for r in line["results"] for s in r["scores"]]
    judged = [s for s in scores if s["name"] == "tool_args_judge:issue_refund"]
    assert len(judged) == 3 and all(s["passed"] for s in judged)
    stats = evaluator.judge_stats()
    assert stats["judge_queue_judged"] == 3 and stats["judge_queue_full"] == 0


@pytest.mark.parametrize(
    "bound",
    [{"judge_queue": 1}, {"judge_queue": 10, "judge_queue_spans": 2}],
    ids=["traces", "spans"],
)
def test_a_full_queue_gives_error_scores_and_counts_them(
    tmp_path: Path, bound: dict[str, int]
) -> None:
    judge = HeldJudge()
    judge.concurrency = 1
    results = tmp_path / "results.jsonl"
    scored = Seen()  # counts the evaluator's results, as they are given
    judged: list[list[Any]] = []
    seen = Seen()

    def on_result(trace: Any, case_results: list[Any]) -> None:
        judged.append(case_results)
        scored(trace)

    with use_judge(judge):
        evaluator = InlineEvaluator(SUITE, results_path=results, on_result=on_result, **bound)
    provider, _ = pipeline(evaluator, seen)
    agent_run(provider, 49.99)  # taken by the one worker, held there
    assert judge.asked.wait(WAIT_S)
    agent_run(provider, 10.0)  # waits in the queue (its 2 spans fill a bound of 2 spans)
    agent_run(provider, 20.0)  # finds it full: judged now, with no model call
    assert scored.wait_for(1), "the full trace was not judged at once"
    (first,) = judged
    by_name = {s.name: s for r in first for s in r.scores}
    full = by_name["tool_args_judge:issue_refund"]
    assert full.passed is False and full.value == 0 and full.error == "JudgeSkipped"
    assert full.explanation == "Judge not called: judge queue full."
    assert by_name["required_tool:issue_refund"].passed is True  # scored as always
    assert evaluator.judge_stats()["judge_queue_full"] == 1
    assert len(judge.prompts) == 1  # the full trace asked no judge
    judge.release.set()
    provider.shutdown()
    assert len(lines(results)) == 3
    assert evaluator.judge_stats()["judge_queue_judged"] == 2


def test_install_from_the_environment_judges_with_the_model_off_the_agents_path(
    tmp_path: Path, judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    monkeypatch.setenv("TOOLTRAIL_JUDGE_MODEL", "openai:judge-model")
    monkeypatch.setenv("TOOLTRAIL_JUDGE_CACHE", "false")
    monkeypatch.setenv("TOOLTRAIL_JUDGE_CONCURRENCY", "1")
    judge_server.hold_until(1000, total=2, max_wait_s=WAIT_S)  # until the test's own request
    results = tmp_path / "results.jsonl"
    seen = Seen()
    provider = TracerProvider()
    installation = install(
        provider=provider,
        suite=SUITE,
        sinks=[seen],
        results=str(results),
        grace_ms=0,
        handle_sigterm=False,
    )
    assert installation is not None
    agent_run(provider, 49.99)
    wait_until(lambda: judge_server.count == 1, "the judge request")
    agent_run(provider, 10.0)  # exported and delivered while the judge holds the first
    assert seen.wait_for(2), "the delivery thread was held by the judge"
    assert judge_server.count == 1 and installation.judge_stats()["judge_queue_waiting"] == 1
    judge_server.release()
    provider.shutdown()
    written = lines(results)
    assert len(written) == 2
    for line in written:
        (score,) = [s for r in line["results"] for s in r["scores"] if "judge" in s["name"]]
        assert score["passed"] is True and score["judge"]["model"] == "openai:judge-model"
    stats = installation.judge_stats()
    assert stats["judge_calls"] == 2 and stats["judge_queue_judged"] == 2


def test_the_peers_judge_shapes_in_a_turn_are_judged_in_the_queue_too() -> None:
    from tooltrail import Expect, JudgeEvaluator, TestCase, ToolCallArgsJudgeEvaluator
    from tooltrail import Turn as ConversationTurn
    from tooltrail.suite import TestSuite

    for shape in (JudgeEvaluator("Polite."), ToolCallArgsJudgeEvaluator("book", "Morning.")):
        case = TestCase(id="c", turns=[ConversationTurn("hi", Expect(evaluators=[shape]))])
        evaluator = InlineEvaluator(TestSuite(name="s", cases=[case]))
        try:
            assert evaluator.judge_queue is not None
        finally:
            evaluator.shutdown()
