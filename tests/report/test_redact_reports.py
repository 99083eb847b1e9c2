"""Issue 22, item 1: a secret in a tool call's arguments reaches no report through a check's
explanation. The ``tool_arg_values`` explanation quotes the calls it saw; evaluation redacts
every explanation (``tooltrail.redact.redacted_explanations``) before a result leaves, so no
format, no saved report read back, no comparison, no evaluation event, no results file and no
pytest message holds the secret. Each test here failed before that redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from serve_helpers import post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.cli import main
from tooltrail.otlp import OtlpFileWriter, read_log_records
from tooltrail.serve import ServeConfig, start_in_thread

PASSWORD = "pw-7Qx93kLmZ"
API_KEY = "sk-live-4f9a8b7c6d5e"
SECRETS = (PASSWORD, API_KEY)
ARGS = {"user": "alice", "password": PASSWORD, "api_key": API_KEY}
#: The call was made with ``user: alice``; the policy wants ``bob``: the explanation quotes
#: the call's arguments, secrets included, as the check saw them.
SUITE = """\
name: logins
cases:
  - id: login
    match: all
    expected_tool_arguments:
      login: {user: bob}
"""
LOGIN = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "login",
    "gen_ai.tool.call.arguments": json.dumps(ARGS),
}


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {where}"


@pytest.fixture
def run(tmp_path: Path) -> tuple[Path, Path]:
    """A suite file and an OTLP dump whose one trace calls ``login`` with secrets."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    dump = tmp_path / "run.otlp.jsonl"
    with OtlpFileWriter(dump) as writer:
        writer.write_spans(agent_trace(tool_attributes=[LOGIN]))
    return suite, dump


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 1, result.output  # the one row fails
    return result.output


def eval_out(run: tuple[Path, Path], out: Path, *args: str) -> str:
    suite, dump = run
    cli("eval", str(suite), str(dump), "--workers", "1", "-q", "--out", str(out), *args)
    return out.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "args",
    [
        ("--format", "text"),
        ("--format", "json"),
        ("--format", "json", "--trajectories"),
        ("--format", "junit"),
        ("--format", "markdown"),
        ("--format", "html"),
    ],
    ids=lambda a: "-".join(x.lstrip("-") for x in a),
)
def test_no_report_format_quotes_a_secret_from_an_explanation(
    run: tuple[Path, Path], tmp_path: Path, args: tuple[str, ...]
) -> None:
    text = eval_out(run, tmp_path / "report", *args)
    assert "alice" in text and "REDACTED" in text  # the explanation is there, redacted
    assert_no_secret(text, " ".join(args))


def test_the_report_command_renders_no_secret(run: tuple[Path, Path], tmp_path: Path) -> None:
    saved = tmp_path / "report.json"
    eval_out(run, saved, "--format", "json", "--trajectories")
    for fmt in ("text", "html", "markdown", "junit"):
        out = tmp_path / f"again.{fmt}"
        CliRunner().invoke(main, ["report", str(saved), "--format", fmt, "--out", str(out)])
        text = out.read_text(encoding="utf-8")
        assert "alice" in text, fmt
        assert_no_secret(text, f"tooltrail report --format {fmt}")


def older_report(path: Path) -> Path:
    """A JSON report as an older tooltrail wrote it: the explanation and the reply quote the
    secrets, and so does a trajectory's nested argument text."""
    explanation = f"Tool 'login' was called with [{ARGS!r}], not {{'user': 'bob'}}."
    score = {
        "name": "tool_arg_values:login",
        "metric": "tool_arg_values",
        "value": 0.0,
        "passed": False,
        "explanation": explanation,
        "span_ids": ["b1"],
    }
    span = {
        "span_id": "b1",
        "parent_span_id": "a1",
        "name": "execute_tool login",
        "kind": "tool",
        "tool_name": "login",
        "error": f"login failed: password={PASSWORD}",
        "arguments": json.dumps({"user": "alice", "payload": " " + json.dumps(ARGS)}),
    }
    trajectory = {"trace_ids": ["t1"], "reply": f"Logged in, api_key: {API_KEY}", "spans": [span]}
    row = {
        "case_id": "login",
        "passed": False,
        "scores": [score],
        "trace_id": "t1",
        "label": "login",
        "trajectory": trajectory,
    }
    summary = {"passed_cases": 0, "total_cases": 1, "average_score": 0.0, "metrics": {}}
    report = {
        "schema_version": 1,
        "suite": {"name": "logins", "version": ""},
        "summary": summary,
        "cases": [row],
    }
    path.write_text(json.dumps(report), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "markdown", "html"])
def test_a_report_written_by_an_older_version_is_redacted_as_it_is_read(
    tmp_path: Path, fmt: str
) -> None:
    saved = older_report(tmp_path / "old.json")
    out = tmp_path / f"again.{fmt}"
    result = CliRunner().invoke(main, ["report", str(saved), "--format", fmt, "--out", str(out)])
    assert result.exit_code in (0, 1), result.output
    text = out.read_text(encoding="utf-8")
    assert "alice" in text
    assert_no_secret(text, f"tooltrail report --format {fmt}")


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_compare_shows_no_secret(run: tuple[Path, Path], tmp_path: Path, fmt: str) -> None:
    new = tmp_path / "new.json"
    eval_out(run, new, "--format", "json")
    old = older_report(tmp_path / "old.json")
    result = CliRunner().invoke(main, ["compare", str(old), str(new), "--format", fmt])
    assert "login" in result.output, result.output
    assert_no_secret(result.output, f"compare --format {fmt}")


def test_annotate_events_carry_no_secret(
    run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLTRAIL_EVALUATION_EXPLANATIONS", "true")
    suite, dump = run
    events = tmp_path / "events.jsonl"
    cli("eval", str(suite), str(dump), "--workers", "1", "-q", "--annotate", str(events))
    explanations = [
        str(r.attributes.get("gen_ai.evaluation.explanation")) for r in read_log_records(events)
    ]
    assert any("alice" in e for e in explanations), explanations
    assert_no_secret(events.read_text(encoding="utf-8"), "the annotation events")


def test_configured_keys_are_redacted_in_explanations_too(
    run: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TOOLTRAIL_REDACT_KEYS`` (the live variable) applies to explanations as to arguments."""
    monkeypatch.setenv("TOOLTRAIL_REDACT_KEYS", "user")
    text = eval_out(run, tmp_path / "report.txt", "--format", "text")
    assert "tool_arg_values:login" in text
    assert "alice" not in text
    assert_no_secret(text, "the text report")


def test_serve_results_file_with_explanations_holds_no_secret(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            explanations=True,
        )
    )
    try:
        assert receiver.http_port is not None
        status, _, _ = post(receiver.http_port, body_of(agent_trace(tool_attributes=[LOGIN])),
                            PROTOBUF)  # fmt: skip
        assert status == 200
    finally:
        stats = receiver.stop()
    assert stats["traces_evaluated"] == 1
    text = results.read_text(encoding="utf-8")
    assert "alice" in text and "[REDACTED]" in text
    assert_no_secret(text, "the results file")


pytest_plugins = ["pytester"]

PYTEST_SAMPLE = f"""
import json

ARGS = {ARGS!r}


def login(tracer):
    attributes = {{
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "login",
        "gen_ai.tool.call.arguments": json.dumps(ARGS),
    }}
    with tracer.start_as_current_span("execute_tool login", attributes=attributes):
        pass


def test_wrong_user(trail):
    login(trail.tracer)
    trail.assert_called("login", args={{"user": "bob"}})


def test_wrong_user_exact(trail):
    login(trail.tracer)
    trail.assert_called("login", args={{"user": "bob"}}, mode="exact")
"""


def test_pytest_plugin_messages_hold_no_secret(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makepyfile(test_sample=PYTEST_SAMPLE)
    recorder = pytester.inline_run("-p", "no:hypothesispytest")
    failures = recorder.getfailures()
    assert len(failures) == 2
    for failure in failures:
        text = str(failure.longrepr)
        assert "alice" in text and "Calls made" in text, text
        assert_no_secret(text, failure.nodeid)


def test_the_annotated_trace_copy_is_redacted(run: tuple[Path, Path], tmp_path: Path) -> None:
    """``--annotate-traces`` copies the input's spans: tool spans are copied redacted, as
    ``serve --dump`` writes them."""
    suite, dump = run
    copy = tmp_path / "annotated.jsonl"
    cli("eval", str(suite), str(dump), "--workers", "1", "-q", "--annotate-traces", str(copy))
    text = copy.read_text(encoding="utf-8")
    assert "alice" in text and "[REDACTED]" in text and "tooltrail.evaluation" in text
    assert_no_secret(text, "the annotated trace copy")
