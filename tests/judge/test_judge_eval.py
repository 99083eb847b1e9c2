"""``tooltrail eval`` with judge checks against the scripted loopback judge (the real OpenAI
SDK over HTTP): each failure ends in its score and the suite goes on; the verdict cache,
requests in flight, and what the prompts carry (redaction), all seen by the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fixtures import ROOT
from judge_server import JudgeServer, judge_server_fixture, status, text, verdict  # noqa: F401
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tooltrail.otlp import json_line

REFUND_DUMP = ROOT / "examples" / "refund" / "runs.otlp.jsonl"
#: The four recorded refund runs, in the dump's order.
RUNS = ["correct", "skipped-verification", "wrong-amount", "looping"]


def suite_file(tmp_path: Path, *, judge: str, cases: str) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: judged\n"
        f"judge: {judge}\n"
        "prices:\n  gpt-test: {input: 1.0, output: 2.0}\n"
        f"cases:\n{cases}"
    )
    return path


ONE_JUDGE = """\
  - id: refund
    match: {agent_name: refund_agent}
    evaluators:
      - name: llm_judge
        config: {rubric: The reply confirms the refund.}
"""
TWO_JUDGES = (
    ONE_JUDGE
    + """\
      - name: llm_judge
        config: {rubric: The reply is polite., name: polite}
"""
)


def run_eval(
    server: JudgeServer, suite: Path, dump: Path, *flags: str, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any], str]:
    """``tooltrail eval --format json`` in a child process: exit code, report, stderr."""
    child_env = dict(os.environ, OPENAI_BASE_URL=server.openai_url, **(env or {}))
    child_env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tooltrail.cli import main; main()",
            "eval",
            str(suite),
            str(dump),
            "--workers",
            "1",
            "--format",
            "json",
            "--quiet",
            *flags,
        ],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def scores(report: dict[str, Any]) -> list[tuple[str, str, bool, str | None]]:
    return [
        (row["label"], score["name"], score["passed"], score["error"])
        for row in report["cases"]
        for score in row["scores"]
    ]


def test_pass_fail_malformed_429_500_and_timeout_each_end_in_their_score(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.script(
        verdict(True),  # correct: confirms
        verdict(False, reasoning="rude"),  # correct: polite
        text("I think it passes"),  # skipped-verification: malformed, then again
        text("{not json"),
        status(429, {"Retry-After": "1"}),  # skipped-verification polite: rate limited once
        verdict(True),
        status(500),  # wrong-amount: a server error on both attempts
        status(500),
        verdict(True, delay_s=4),  # wrong-amount polite: slower than the timeout, twice
        verdict(True, delay_s=4),
    )
    suite = suite_file(
        tmp_path, judge='{model: "openai:gpt-test", retries: 1, timeout_s: 1.5}', cases=TWO_JUDGES
    )
    code, report, stderr = run_eval(
        judge_server, suite, REFUND_DUMP, "--no-judge-cache", "--judge-concurrency", "1"
    )
    assert code == 1, stderr
    got = scores(report)
    assert got[:2] == [("correct", "llm_judge", True, None), ("correct", "polite", False, None)]
    label, name, passed, error = got[2]
    assert (label, name, passed) == ("skipped-verification", "llm_judge", False) and error
    assert got[3] == ("skipped-verification", "polite", True, None)
    assert got[4][:3] == ("wrong-amount", "llm_judge", False) and got[4][3]
    assert got[5][:3] == ("wrong-amount", "polite", False) and got[5][3]
    assert got[6:] == [("looping", "llm_judge", True, None), ("looping", "polite", True, None)]
    explanations = [s["explanation"] for row in report["cases"] for s in row["scores"]]
    assert "not a verdict" in explanations[2].lower() or "malformed" in explanations[2].lower()
    assert "500" in explanations[4]
    assert "time" in explanations[5].lower()
    limited, retried = judge_server.requests[4], judge_server.requests[5]
    assert retried.at - limited.at >= 0.9  # Retry-After: 1 was honoured
    judged = report["cases"][0]["scores"][0]["judge"]
    assert judged["model"] == "openai:gpt-test" and judged["attempts"] == 1
    summary = report["summary"]["judge"]
    assert summary["judgements"] == 8 and summary["requests"] == 12
    assert summary["errors"] == 3


def test_a_second_run_over_the_same_dump_asks_nothing_and_scores_the_same(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    suite = suite_file(tmp_path, judge='{model: "openai:gpt-test"}', cases=TWO_JUDGES)
    cache = tmp_path / "verdicts.sqlite"
    judge_server.script(*(verdict(n % 3 != 0, score=n / 10) for n in range(8)))
    code, first, stderr = run_eval(judge_server, suite, REFUND_DUMP, "--judge-cache", str(cache))
    assert judge_server.count == 8, stderr
    code2, second, _ = run_eval(judge_server, suite, REFUND_DUMP, "--judge-cache", str(cache))
    assert judge_server.count == 8  # nothing asked the second time
    assert code2 == code
    strip = [
        [(s["name"], s["value"], s["passed"], s["explanation"]) for s in row["scores"]]
        for row in first["cases"]
    ]
    assert strip == [
        [(s["name"], s["value"], s["passed"], s["explanation"]) for s in row["scores"]]
        for row in second["cases"]
    ]
    assert second["summary"]["judge"]["cached"] == 8
    assert second["summary"]["judge"]["requests"] == 0
    assert first["summary"]["judge"]["cost_usd"] == pytest.approx(8 * (100 + 40) / 1e6)


def test_judge_requests_run_side_by_side_up_to_the_bound(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.hold_until(3, total=8, max_wait_s=20)
    suite = suite_file(tmp_path, judge='{model: "openai:gpt-test"}', cases=TWO_JUDGES)
    code, report, stderr = run_eval(
        judge_server, suite, REFUND_DUMP, "--no-judge-cache", "--judge-concurrency", "3"
    )
    assert code == 0, stderr
    assert judge_server.count == 8
    assert judge_server.peak_in_flight == 3


def test_a_spent_budget_shows_in_the_scores_left_and_the_summary(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    suite = suite_file(tmp_path, judge='{model: "openai:gpt-test"}', cases=ONE_JUDGE)
    code, report, _ = run_eval(
        judge_server,
        suite,
        REFUND_DUMP,
        "--no-judge-cache",
        "--judge-concurrency",
        "1",
        "--judge-budget",
        "0.0001",  # one judgement costs 0.00014
    )
    assert code == 1
    got = scores(report)
    assert got[0] == ("correct", "llm_judge", True, None)
    assert all(not passed and error for _, _, passed, error in got[1:])
    assert all("budget" in row["scores"][0]["explanation"] for row in report["cases"][1:])
    assert judge_server.count == 1
    assert report["summary"]["judge"]["skipped"] == 3


def record_secret_run(path: Path) -> None:
    """One agent run whose input, tool arguments, tool result and reply carry secrets."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("secret-agent")

    def messages(role: str, content: str) -> str:
        return json.dumps([{"role": role, "parts": [{"type": "text", "content": content}]}])

    with tracer.start_as_current_span(
        "invoke_agent support_agent",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support_agent",
            "gen_ai.input.messages": messages("user", "I am jane.doe@example.com; update me"),
        },
    ) as agent:
        with tracer.start_as_current_span(
            "execute_tool update_account",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "update_account",
                "gen_ai.tool.call.id": "call-1",
                "gen_ai.tool.call.arguments": json.dumps(
                    {"api_key": "sk-live-ARGSECRET", "owner": "jane.doe@example.com"}
                ),
                "gen_ai.tool.call.result": json.dumps(
                    {"card_number": "4111111111111111", "status": "updated"}
                ),
            },
        ):
            pass
        agent.set_attribute(
            "gen_ai.output.messages",
            messages("assistant", "Done. password: hunter2-REPLYSECRET"),
        )
    provider.shutdown()
    path.write_bytes(json_line(encode_spans(exporter.get_finished_spans())))


def test_no_redacted_value_reaches_the_judge(tmp_path: Path, judge_server: JudgeServer) -> None:
    dump = tmp_path / "secret.otlp.jsonl"
    record_secret_run(dump)
    suite = suite_file(
        tmp_path,
        judge='{model: "openai:gpt-test"}',
        cases="""\
  - id: support
    match: {agent_name: support_agent}
    evaluators:
      - name: llm_judge
        config: {rubric: The reply confirms the update.}
      - name: tool_args_judge
        config: {tool: update_account, rubric: The owner is a customer.}
      - name: trajectory_judge
        config: {rubric: task_completed}
""",
    )
    code, report, stderr = run_eval(
        judge_server,
        suite,
        dump,
        "--no-judge-cache",
        env={"TOOLTRAIL_REDACT_VALUE_PATTERNS": json.dumps([r"[\w.]+@example\.com"])},
    )
    assert code == 0, stderr
    prompts = [request.prompt for request in judge_server.requests]
    assert len(prompts) == 3
    assert "update_account" in prompts[2] and "updated" in prompts[2]  # content was sent
    for secret in ("sk-live-ARGSECRET", "4111111111111111", "hunter2", "jane.doe@example.com"):
        assert all(secret not in prompt for prompt in prompts), secret
    assert all("[REDACTED]" in prompt for prompt in prompts)


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "markdown", "html"])
def test_a_suite_without_judges_reports_nothing_of_judges(tmp_path: Path, fmt: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tooltrail.cli import main; main()",
            "eval",
            str(ROOT / "examples" / "refund" / "suite.yaml"),
            str(REFUND_DUMP),
            "--workers",
            "1",
            "--format",
            fmt,
            "--quiet",
        ],
        env=dict(os.environ, PYTHONPATH=str(ROOT / "src")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr  # the refund example fails three runs
    assert "judge" not in done.stdout.lower()


def test_the_judge_line_is_in_every_report_format(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    suite = suite_file(tmp_path, judge='{model: "openai:gpt-test"}', cases=ONE_JUDGE)
    line = "judge: 4 judgements, 4 requests (0 cached), 400 input + 80 output tokens, $0.000560"
    for fmt in ("text", "markdown", "html"):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "from tooltrail.cli import main; main()",
                "eval",
                str(suite),
                str(REFUND_DUMP),
                "--workers",
                "1",
                "--format",
                fmt,
                "--quiet",
                "--no-judge-cache",
            ],
            env=dict(
                os.environ, OPENAI_BASE_URL=judge_server.openai_url, PYTHONPATH=str(ROOT / "src")
            ),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert line in done.stdout, (fmt, done.stdout, done.stderr)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from tooltrail.cli import main; main()",
            "eval",
            str(suite),
            str(REFUND_DUMP),
            "--workers",
            "1",
            "--format",
            "junit",
            "--quiet",
            "--no-judge-cache",
        ],
        env=dict(os.environ, OPENAI_BASE_URL=judge_server.openai_url, PYTHONPATH=str(ROOT / "src")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert '<property name="judge.cost_usd" value="0.00056" />' in done.stdout
    assert '<property name="judge.input_tokens" value="400" />' in done.stdout


def test_pytest_agent_eval_judge_yaml_asks_the_model_it_names(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    cases = """\
  - id: refund
    match: {agent_name: refund_agent}
    turns:
      - user: I want a refund for order ORD-7731.
        expect:
          judge: {rubric: Confirms the refund., model: "openai:gpt-other"}
          tool_calls_args:
            - tool: issue_refund
              judge: {rubric: The amount is 49.99.}
"""
    suite = suite_file(tmp_path, judge='{model: "openai:gpt-test"}', cases=cases)
    judge_server.script(*(verdict(True) for _ in range(4)))
    code, report, stderr = run_eval(
        judge_server, suite, REFUND_DUMP, "--no-judge-cache", "--judge-concurrency", "1"
    )
    assert code == 0, stderr
    names = [s["name"] for s in report["cases"][0]["scores"]]
    assert names[-2:] == ["turn1:tool_args_judge:issue_refund", "turn1:llm_judge"]
    models = [request.body["model"] for request in judge_server.requests]
    assert models[:2] == ["gpt-test", "gpt-other"]  # the run's model, then the turn's own
    assert report["summary"]["judge"]["models"] == ["openai:gpt-test", "openai:gpt-other"]


def test_worker_processes_build_their_own_judge_and_the_totals_add_up(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    cases = (
        ONE_JUDGE
        + """\
  - id: booking
    match: {agent_name: booking_agent}
    evaluators:
      - name: llm_judge
        config: {rubric: The reply confirms the booking.}
"""
    )
    suite = suite_file(tmp_path, judge='{model: "openai:gpt-test"}', cases=cases)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    (dumps / "a.otlp.jsonl").write_bytes(REFUND_DUMP.read_bytes())
    (dumps / "b.otlp.jsonl").write_bytes((ROOT / "examples/judge/runs.otlp.jsonl").read_bytes())
    child_env = dict(os.environ, OPENAI_BASE_URL=judge_server.openai_url)
    child_env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "eval", str(suite),
         str(dumps), "--workers", "2", "--format", "json", "--quiet", "--no-judge-cache"],
        env=child_env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert len(report["cases"]) == 6
    summary = report["summary"]["judge"]
    assert summary["judgements"] == 6 and summary["requests"] == judge_server.count == 6
    assert summary["cost_usd"] == pytest.approx(6 * (100 + 40) / 1e6)
