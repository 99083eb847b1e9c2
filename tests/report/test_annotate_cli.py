"""``tooltrail eval ... --annotate OUT --annotate-traces OUT`` on real ADK refund dumps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import CORPUS, refund_case, suite_yaml

from tooltrail.annotate import EVALUATION_SPAN_NAME
from tooltrail.cli import main
from tooltrail.otlp import read_log_records, read_spans

ADK = CORPUS / "google-adk"
RUNS = [
    str(ADK / f"{name}.otlp.jsonl")
    for name in ("a_refund_ok", "b_refund_skip_verify", "c_refund_wrong_amount")
]
SUITE = suite_yaml(
    refund_case(
        "required_tools",
        "expected_tool_arguments",
        match={"root_span_name": "invoke_workflow refund_agent"},
    ),
    name="refund-agent",
    version="1.0",
)


@pytest.fixture
def suite(tmp_path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return path


def run_eval(*args: str):
    return CliRunner().invoke(main, ["eval", *args, "--workers", "1", "--quiet"])


def test_annotate_writes_the_events_of_the_run(tmp_path, suite, monkeypatch):
    monkeypatch.delenv("TOOLTRAIL_EVALUATION_EXPLANATIONS", raising=False)
    events = tmp_path / "events.jsonl"
    result = run_eval(str(suite), *RUNS, "--annotate", str(events))
    assert result.exit_code == 1, result.output  # two of the three runs fail
    records = list(read_log_records(events))
    existing = {(s.trace_id, s.span_id) for s in read_spans(RUNS)}
    assert records and all((r.trace_id, r.span_id) in existing for r in records)
    [wrong] = [
        r
        for r in records
        if r.attributes["gen_ai.evaluation.name"] == "tool_arg_values:issue_refund"
        and r.attributes["gen_ai.evaluation.score.label"] == "fail"
    ]
    assert (wrong.trace_id, wrong.span_id) == (
        "e562ea0902561c76b362a32db16b4bd3",
        "0a8a013a65f28cce",
    )
    assert wrong.attributes["tooltrail.suite"] == "refund-agent"
    assert "gen_ai.evaluation.explanation" not in events.read_text()


def test_annotate_explanations_follow_the_environment_switch(tmp_path, suite, monkeypatch):
    monkeypatch.setenv("TOOLTRAIL_EVALUATION_EXPLANATIONS", "true")
    events = tmp_path / "events.jsonl"
    run_eval(str(suite), *RUNS, "--annotate", str(events))
    assert "gen_ai.evaluation.explanation" in events.read_text()


def test_annotate_traces_adds_one_evaluation_span_per_case(tmp_path, suite):
    copy = tmp_path / "annotated.jsonl"
    result = run_eval(str(suite), *RUNS, "--annotate-traces", str(copy))
    assert result.exit_code == 1, result.output
    spans = list(read_spans(copy))
    roots = {s.trace_id: s.span_id for s in spans if not s.parent_span_id}
    evaluations = [s for s in spans if s.name == EVALUATION_SPAN_NAME]
    assert len(evaluations) == 3
    assert all(e.parent_span_id == roots[e.trace_id] for e in evaluations)
    verdicts = {e.trace_id: e.attributes["tooltrail.passed"] for e in evaluations}
    assert verdicts == {
        "a167b3814626cfe5be2c86e28c1d7290": True,
        "ec45c34ffc4b3fe474d388783d6b79ee": False,
        "e562ea0902561c76b362a32db16b4bd3": False,
    }


def test_annotations_do_not_change_the_report(tmp_path, suite):
    plain = run_eval(str(suite), *RUNS, "--format", "json")
    annotated = run_eval(
        str(suite), *RUNS, "--format", "json", "--annotate", str(tmp_path / "e.jsonl")
    )
    assert json.loads(annotated.stdout) == json.loads(plain.stdout)
    assert annotated.exit_code == plain.exit_code


def test_an_unwritable_annotation_path_is_a_usage_error(tmp_path, suite):
    result = run_eval(str(suite), *RUNS, "--annotate", str(tmp_path / "missing" / "e.jsonl"))
    assert result.exit_code == 2
    assert "cannot write annotations" in result.output
