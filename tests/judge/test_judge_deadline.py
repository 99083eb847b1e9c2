"""A judgement has a deadline: whatever the judge does (never answers, asks for a long wait,
blocks in a completion function), each judgement ends within ``deadline_s`` of its start, every
attempt and wait counted, and a run of them ends with error scores. The SDK is the real one,
the server the scripted one on loopback; every wait in these tests ends on a condition."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fixtures import ROOT, wait_until
from judge_server import JudgeServer, judge_server_fixture, never, status, verdict  # noqa: F401
from test_judge_engine import openai_runner
from test_judge_eval import run_eval, scores

from tooltrail.judge import JudgeConfigError, JudgeRunner, build_judge, read_judge_settings
from tooltrail.judge.runner import default_deadline_s

#: What a judgement may take beyond its deadline: returning, and the runner's bookkeeping.
SLACK_S = 1.0


def test_a_server_that_never_answers_costs_one_deadline_not_every_timeout(
    judge_server: JudgeServer,
) -> None:
    judge_server.default = never()
    runner = openai_runner(judge_server, retries=2, timeout_s=30.0, deadline_s=1.0)
    started = time.monotonic()
    outcome = runner.judge("p")
    took = time.monotonic() - started
    assert outcome.verdict is None and outcome.attempts == 1
    assert outcome.error == (
        "judge unavailable after 1 attempt: the judgement's deadline of 1 s passed waiting "
        "for an answer"
    )
    assert 1.0 <= took <= 1.0 + SLACK_S  # not the 30 s of one attempt's own time limit
    assert outcome.latency_s <= 1.0 + SLACK_S
    runner.close()


def test_a_wait_that_would_end_past_the_deadline_is_not_waited(
    judge_server: JudgeServer,
) -> None:
    judge_server.script(status(429, {"Retry-After": "30"}), verdict(True))
    runner = openai_runner(judge_server, retries=2, deadline_s=5.0)
    outcome = runner.judge("p")
    assert outcome.error == (
        "judge unavailable after 1 attempt: HTTP 429: scripted status 429 (no time is left for "
        "another attempt before the judgement's deadline of 5 s)"
    )
    assert outcome.latency_s < 5.0 and judge_server.count == 1


def test_every_attempt_and_wait_counts_toward_one_deadline(judge_server: JudgeServer) -> None:
    judge_server.script(status(503), status(503), never())
    runner = openai_runner(judge_server, retries=5, backoff_s=0.2, deadline_s=2.0)
    outcome = runner.judge("p")
    assert outcome.attempts == 3 and judge_server.count == 3
    assert outcome.error == (
        "judge unavailable after 3 attempts: the judgement's deadline of 2 s passed waiting for "
        "an answer"
    )
    assert outcome.latency_s <= 2.0 + SLACK_S
    first, _, third = judge_server.requests
    assert third.at - first.at >= 0.2 + 0.4  # both waits were waited, inside the deadline


def test_a_completion_function_that_never_returns_ends_at_the_deadline_and_keeps_its_slot() -> None:
    released = threading.Event()
    calls: list[str] = []

    def stuck(prompt: str) -> str:
        calls.append(prompt)
        if prompt == "stuck":
            released.wait()  # a plain function cannot be interrupted
        return '{"passed": true, "score": 1, "reasoning": "ok"}'

    runner = JudgeRunner(stuck, model="stuck", concurrency=1, deadline_s=0.5)
    first = runner.judge("stuck")
    assert first.error == (
        "judge unavailable after 1 attempt: the judgement's deadline of 0.5 s passed waiting "
        "for an answer"
    )
    # The call left behind still holds the one place among the requests in flight.
    second = runner.judge("next")
    assert second.attempts == 0 and calls == ["stuck"]
    assert second.error == (
        "judge unavailable after 0 attempts: the judgement's deadline of 0.5 s passed waiting "
        "for a free request slot"
    )
    released.set()  # the stuck call ends and gives its place back
    wait_until(
        lambda: not any(t.name == "tooltrail-judge-attempt" for t in threading.enumerate()),
        "the call left behind to end",
    )
    third = runner.judge("next")
    assert third.verdict is not None and third.verdict.passed and calls == ["stuck", "next"]


def test_without_deadline_s_the_bound_is_every_attempt_and_default_wait() -> None:
    assert default_deadline_s() == 3 * (30 + 1) + 0.5 + 1.0 == 94.5
    runner = JudgeRunner(lambda prompt: "", model="m", retries=1, timeout_s=10.0)
    assert runner.deadline_for() == 2 * 11 + 0.5
    assert runner.deadline_for(samples=3) == 3 * (2 * 11 + 0.5)
    assert JudgeRunner(lambda p: "", model="m", deadline_s=7).deadline_for(samples=3) == 7


def test_deadline_s_is_a_setting_read_strictly() -> None:
    settings = read_judge_settings({"model": "openai:m", "deadline_s": 12})
    assert settings.deadline_s == 12.0 and isinstance(settings.deadline_s, float)
    assert read_judge_settings({"deadline_s": None}).deadline_s is None
    with pytest.raises(JudgeConfigError, match=r"judge.deadline_s must be a number of seconds"):
        read_judge_settings({"deadline_s": 0})
    with pytest.raises(JudgeConfigError, match=r"judge.deadline_s must be .* not '5'"):
        read_judge_settings({"deadline_s": "5"})
    with pytest.raises(JudgeConfigError, match=r"unknown key 'deadline' \(did you mean 'dead"):
        read_judge_settings({"deadline": 5})
    runner = build_judge(settings, completion=lambda prompt: "")
    assert runner.deadline_s == 12.0
    runner.close()


def test_eval_on_six_judgements_against_a_judge_that_never_answers_ends_within_the_bound(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    """The documented bound of a run: at most ``deadline_s`` per judgement. examples/judge is
    two runs of three judge checks: 6 judgements, here one at a time (the slowest way)."""
    judge_server.default = never()
    deadline_s = 1.5
    suite = tmp_path / "suite.yaml"
    text = (ROOT / "examples" / "judge" / "suite.yaml").read_text()
    block = "  retries: 2\n  timeout_s: 30\n"
    assert block in text
    suite.write_text(text.replace(block, f"{block}  deadline_s: {deadline_s}\n"))
    started = time.monotonic()
    code, report, stderr = run_eval(
        judge_server,
        suite,
        ROOT / "examples" / "judge" / "runs.otlp.jsonl",
        "--no-judge-cache",
        "--judge-concurrency",
        "1",
    )
    took = time.monotonic() - started
    assert code == 1, stderr
    judged = [s for row in report["cases"] for s in row["scores"] if s.get("judge")]
    assert len(judged) == 6
    assert all(s["error"] == "JudgeUnavailable" and not s["passed"] for s in judged)
    assert all(f"deadline of {deadline_s:g} s passed" in s["explanation"] for s in judged)
    assert all(s["judge"]["latency_s"] <= deadline_s + SLACK_S for s in judged)
    assert report["summary"]["judge"]["errors"] == 6
    print(f"eval, 6 judgements, a judge that never answers, deadline {deadline_s} s: {took:.1f} s")
    # 6 deadlines and the command's own start and reading; without the deadline one
    # judgement alone would take 3 attempts of 30 s.
    assert took <= 6 * deadline_s + 20
    assert [name for _, name, _, _ in scores(report)].count("llm_judge") == 2


def test_a_run_without_deadline_s_is_bounded_by_the_attempts_it_allows(
    judge_server: JudgeServer,
) -> None:
    judge_server.default = never()
    runner = openai_runner(judge_server, retries=1, timeout_s=0.5, backoff_s=0.1)
    outcome = runner.judge("p")
    assert outcome.attempts == 2
    assert outcome.error == "judge unavailable after 2 attempts: timed out after 0.5 s"
    assert outcome.latency_s <= runner.deadline_for() == 2 * 1.5 + 0.1
