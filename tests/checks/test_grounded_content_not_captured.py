"""A rubric that grounds the reply in the tool results (``grounded_in_tool_results``) on a run
whose calls record no result: ``ContentNotCaptured``, and no judge is asked to judge
"(not recorded)". The README's refund runs are such runs (the live path records arguments, not
results); a corpus run that records its results is still judged. Through ``tooltrail eval``
and the scripted judge server (the real OpenAI SDK)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixtures import CORPUS, REFUND_DUMP, ROOT
from judge_double import ScriptedJudge
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401

from tooltrail.judge import use_judge
from tooltrail.model import EvalTrace, ToolCall, Turn
from tooltrail.score import evaluate_trace
from tooltrail.suite.case import EvaluatorConfig, TestCase

NOT_CAPTURED = "Content not captured: the trace records no tool result to ground the reply in."


def suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: grounded\n"
        "cases:\n"
        "  - id: refund\n"
        "    match: {agent_name: refund_agent}\n"
        "    evaluators:\n"
        "      - name: llm_judge\n"
        "        config: {rubric: grounded_in_tool_results}\n"
        "      - name: trajectory_judge\n"
        "        config: {rubric: grounded_in_tool_results}\n"
    )
    return path


def run_eval(server: JudgeServer, suite: Path, dump: Path) -> dict[str, Any]:
    done = subprocess.run(
        [
            sys.executable, "-c", "from tooltrail.cli import main; main()", "eval", str(suite),
            str(dump), "--workers", "1", "--format", "json", "--quiet", "--judge-model",
            "openai:gpt-test", "--no-judge-cache",
        ],
        env=dict(os.environ, OPENAI_BASE_URL=server.openai_url, PYTHONPATH=str(ROOT / "src")),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.stdout, done.stderr
    return dict(json.loads(done.stdout))


def test_the_readme_refund_runs_give_content_not_captured_and_ask_no_judge(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    report = run_eval(judge_server, suite(tmp_path), REFUND_DUMP)
    scores = [score for row in report["cases"] for score in row["scores"]]
    assert len(scores) == 8  # four runs, two judge checks each
    assert {(s["error"], s["explanation"], s["passed"]) for s in scores} == {
        ("ContentNotCaptured", NOT_CAPTURED, False)
    }
    assert judge_server.count == 0


def test_a_run_that_records_its_tool_results_is_judged(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    report = run_eval(judge_server, suite(tmp_path), CORPUS / "strands" / "a_refund_ok.otlp.jsonl")
    scores = report["cases"][0]["scores"]
    assert [(s["name"], s["error"], s["passed"]) for s in scores] == [
        ("llm_judge", None, True),
        ("trajectory_judge", None, True),
    ]
    assert judge_server.count == 2
    assert all("Result: (not recorded)" not in r.prompt for r in judge_server.requests)


def grounded(*rubrics: str) -> TestCase:
    return TestCase(
        id="c",
        evaluators=[
            EvaluatorConfig(name=check, config={"rubric": rubric, "name": f"{check}:{rubric}"})
            for rubric in rubrics
            for check in ("llm_judge", "trajectory_judge")
        ],
    )


def test_a_failed_call_records_its_error_and_so_grounds_the_reply_too() -> None:
    trace = EvalTrace(
        trace_id="t",
        output="The refund failed.",
        tool_calls=[
            ToolCall(
                name="issue_refund",
                args={"amount": 5},
                status="error",
                error="card declined",
                turn=1,
            )
        ],  # fmt: skip
        turns=[Turn(1, input="Refund me", reply="The refund failed.")],
    )
    judge = ScriptedJudge()
    with use_judge(judge):
        judged = evaluate_trace(grounded("grounded_in_tool_results"), trace)
        assert [s.error for s in judged.scores] == [None, None]
        assert len(judge.prompts) == 2
        trace.tool_calls[0].error = None  # the call records nothing now
        unrecorded = evaluate_trace(grounded("grounded_in_tool_results", "task_completed"), trace)
    assert [(s.error, s.explanation) for s in unrecorded.scores[:2]] == [
        ("ContentNotCaptured", NOT_CAPTURED)
    ] * 2
    assert [s.error for s in unrecorded.scores[2:]] == [None, None]  # task_completed: judged
    assert len(judge.prompts) == 4
