"""In-process revisions: spans of a judged trace that end later (a background task) are
merged with it and judged again, within the window, the revision limit and the memory cap."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from test_evaluation_events import LogsReceiver, attributes_of

from tooltrail.live import InlineEvaluator, TraceBuffer, tool
from tooltrail.pipeline.evaluation_events import EvaluationEventEmitter, otlp_log_exporter
from tooltrail.pipeline.revisions import RevisionStore
from tooltrail.scores import CASE_SCORE_NAME, REVISION, SUPERSEDES_REVISION
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {
        "name": "background",
        "cases": [
            {"id": "lookup", "match": {"agent_name": "bg_agent"}, "required_tools": ["lookup"]}
        ],
    }
)
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bg_agent"}


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class Agent:
    """An agent whose ``lookup`` runs in a background task, after the agent span ended."""

    def __init__(self, buffer: TraceBuffer) -> None:
        provider = TracerProvider()
        provider.add_span_processor(buffer)
        self.tracer = provider.get_tracer("bg")

    def run(self) -> trace.Span:
        with self.tracer.start_as_current_span("invoke_agent bg_agent", attributes=AGENT) as agent:
            return agent

    def background_lookup(self, agent: trace.Span, tool_name: str = "lookup") -> None:
        with trace.use_span(agent, end_on_exit=False):
            with tool(tool_name, {"id": 1}, tracer=self.tracer):
                pass


def test_a_background_task_ending_after_the_verdict_revises_it(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=results)
    buffer = TraceBuffer(evaluator, grace_s=0.05)
    agent = Agent(buffer)
    root = agent.run()
    wait_for(lambda: evaluator.traces_evaluated == 1)
    agent.background_lookup(root)
    wait_for(lambda: evaluator.traces_revised == 1)
    buffer.shutdown()
    first, revised = lines_of(results)
    assert (first["revision"], first["verdict"], first["reason"]) == (0, "fail", "complete")
    assert (revised["revision"], revised["verdict"], revised["reason"]) == (1, "pass", "late")
    assert revised["partial"] is False and revised["trace_id"] == first["trace_id"]
    assert revised["changed"] == {
        "verdict": ["fail", "pass"],
        "calls": [0, 1],
        "scores": {"lookup/required_tool:lookup": [False, True]},
    }
    assert (evaluator.late_pieces, evaluator.verdicts_changed) == (1, 1)


def test_revised_events_say_which_revision_they_supersede(tmp_path: Path) -> None:
    receiver = LogsReceiver()
    try:
        emitter = EvaluationEventEmitter(
            otlp_log_exporter("grpc", endpoint=receiver.endpoint), batch=False
        )
        evaluator = InlineEvaluator(SUITE, on_result=[emitter])
        buffer = TraceBuffer(evaluator, grace_s=0.05)
        agent = Agent(buffer)
        root = agent.run()
        wait_for(lambda: evaluator.traces_evaluated == 1)
        agent.background_lookup(root)
        wait_for(lambda: evaluator.traces_revised == 1)
        buffer.shutdown()
        cases = [
            attributes_of(record)
            for _, _, record in receiver.records()
            if attributes_of(record)["gen_ai.evaluation.name"] == CASE_SCORE_NAME
        ]
    finally:
        receiver.stop()
    first, revised = cases
    assert REVISION not in first and first["gen_ai.evaluation.score.label"] == "fail"
    assert (revised[REVISION], revised[SUPERSEDES_REVISION]) == (1, 0)
    assert revised["gen_ai.evaluation.score.label"] == "pass"


def test_past_the_revision_limit_late_spans_are_named_once(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=results, max_revisions=1)
    buffer = TraceBuffer(evaluator, grace_s=0.05)
    agent = Agent(buffer)
    root = agent.run()
    wait_for(lambda: evaluator.traces_evaluated == 1)
    for n in range(3):
        agent.background_lookup(root, f"step{n}")
        wait_for(lambda n=n: evaluator.late_pieces == n + 1)
    buffer.shutdown()
    lines = lines_of(results)
    assert [x["revision"] for x in lines] == [0, 1, None]
    unjudged = lines[2]
    assert (unjudged["reason"], unjudged["why"], unjudged["verdict"]) == (
        "late_unjudged",
        "revision_limit",
        None,
    )
    assert (unjudged["late_spans"], evaluator.late_spans_unjudged) == (1, 2)


def test_past_the_window_late_spans_are_named_unjudged(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=results, revision_window_s=0.2)
    buffer = TraceBuffer(evaluator, grace_s=0.05)
    agent = Agent(buffer)
    root = agent.run()
    wait_for(lambda: evaluator.traces_evaluated == 1)
    time.sleep(0.3)
    agent.background_lookup(root)
    wait_for(lambda: evaluator.late_pieces == 1)
    buffer.shutdown()
    first, unjudged = lines_of(results)
    assert first["revision"] == 0
    assert (unjudged["reason"], unjudged["why"]) == ("late_unjudged", "window_passed")
    assert evaluator.revisions.traces_kept == 0


def test_the_memory_cap_lets_the_oldest_judged_trace_go(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=results, max_kept_spans=2)
    buffer = TraceBuffer(evaluator, grace_s=0.05)
    agent = Agent(buffer)
    roots = [agent.run() for _ in range(3)]  # one span each: the first is let go
    wait_for(lambda: evaluator.traces_evaluated == 3)
    store: RevisionStore = evaluator.revisions
    assert (store.items_kept, store.traces_kept, store.traces_evicted) == (2, 2, 1)
    agent.background_lookup(roots[0])
    agent.background_lookup(roots[2])
    wait_for(lambda: evaluator.late_pieces == 2)
    buffer.shutdown()
    by_trace: dict[str, list[Any]] = {}
    for line in lines_of(results):
        by_trace.setdefault(line["trace_id"], []).append((line["revision"], line["reason"]))
    ids = [f"{r.get_span_context().trace_id:032x}" for r in roots]
    assert by_trace[ids[0]] == [(0, "complete"), (None, "late_unjudged")]
    assert by_trace[ids[2]] == [(0, "complete"), (1, "late")]
    assert store.items_kept <= 2


def test_a_skipped_partial_piece_is_judged_with_the_piece_that_completes_it(
    tmp_path: Path,
) -> None:
    """``skip_partial``: the piece cut at ``max_age`` gets no line; the late piece that ends
    the root completes it, and the whole trace gets its first verdict."""
    results = tmp_path / "results.jsonl"
    evaluator = InlineEvaluator(SUITE, results_path=results, skip_partial=True)
    buffer = TraceBuffer(evaluator, grace_s=0, max_age_s=0.1)
    agent = Agent(buffer)
    root = agent.tracer.start_span("invoke_agent bg_agent", attributes=AGENT)
    agent.background_lookup(root)  # ends; the root has not
    wait_for(lambda: buffer.stats().traces_partial == 1)
    root.end()
    wait_for(lambda: evaluator.late_pieces == 1)
    buffer.shutdown()
    [line] = lines_of(results)
    assert (line["revision"], line["verdict"], line["reason"], line["partial"]) == (
        0,
        "pass",
        "late",
        False,
    )
