"""Issue 35, done-when 5: every ``gen_ai.evaluation.result`` event carries its provenance
(``tooltrail.origins``: the check's version, a hash of its configuration, the judge model and
a hash of the prompt template, whether the trace was sampled) on the live, serve and
``eval --annotate`` paths, and the hash of a check changes when its configuration does (and
no other check's). Judges are the real openai client against the scripted judge server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures import wait_until
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from opentelemetry.sdk.trace import TracerProvider
from serve_helpers import LogsReceiver, attributes_of, post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of

from tooltrail.cli import main
from tooltrail.live import install, tool
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.origins import METRIC_FIELDS, Origins
from tooltrail.otlp import OtlpFileWriter, read_log_records
from tooltrail.sampling import in_sample
from tooltrail.score import evaluate_cases
from tooltrail.scores import EventOptions, evaluation_events
from tooltrail.serve import ServeConfig, start_in_thread
from tooltrail.suite import TestSuite
from tooltrail.suite.sample import Sample
from tooltrail.suite.vocabulary import CASE_TERMS
from tooltrail.version import __version__

SUITE = """\
name: provenance
version: "3.1"
judge: {model: "openai:judge-model"}
cases:
  - id: refund
    match: all
    required_tools: [issue_refund]
    forbidden_tools: [delete_account]
    evaluators:
      - name: tool_args_judge
        config: {tool: issue_refund, rubric: The amount is the order total.}
      - name: no_redundant_tool_calls
        sample: 0.5
"""
#: Every event of every path carries these.
EVERY = {
    "tooltrail.check.version",
    "tooltrail.check.config_hash",
    "tooltrail.sampled",
    "tooltrail.suite.version",
    "tooltrail.version",
}
JUDGED = {"tooltrail.judge.model", "tooltrail.judge.prompt_hash"}
TRACE_IDS = [f"{n + 1:032x}" for n in range(12)]


def refund_spans(trace_id: str) -> list[Any]:
    return agent_trace(
        trace_id,
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "issue_refund",
                "gen_ai.tool.call.arguments": json.dumps({"order_id": "ORD-1", "amount": 49.99}),
            }
        ],
    )


def assert_provenance(events: list[dict[str, Any]]) -> None:
    """Every event has every attribute; judge events name the judge; a sampled check's say
    its rate and that the trace was in its sample; the values are the suite's."""
    assert events
    names = set()
    for attributes in events:
        names.add(attributes["gen_ai.evaluation.name"])
        assert EVERY <= set(attributes), attributes["gen_ai.evaluation.name"]
        assert attributes["tooltrail.suite.version"] == "3.1"
        assert attributes["tooltrail.version"] == __version__
        assert len(attributes["tooltrail.check.config_hash"]) == 16
        if attributes["gen_ai.evaluation.name"].startswith("tool_args_judge"):
            assert JUDGED <= set(attributes)
            assert attributes["tooltrail.judge.model"] == "openai:judge-model"
        else:
            assert not JUDGED & set(attributes)
        if attributes["gen_ai.evaluation.name"] == "no_redundant_tool_calls":
            assert attributes["tooltrail.sample.rate"] == 0.5
            assert attributes["tooltrail.sampled"] is True
    assert {"tooltrail.case", "required_tool:issue_refund", "tool_args_judge:issue_refund"} <= names


@pytest.fixture
def judge_env(judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch) -> JudgeServer:
    monkeypatch.setenv("OPENAI_BASE_URL", judge_server.openai_url)
    return judge_server


def test_every_serve_event_carries_its_provenance(tmp_path: Path, judge_env: JudgeServer) -> None:
    logs = LogsReceiver()
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            scores_endpoint=logs.endpoint,
            judge_cache=False,
        )
    )
    try:
        port = receiver.http_port
        assert port is not None
        spans = [s for t in TRACE_IDS for s in refund_spans(t)]
        assert post(port, body_of(spans), PROTOBUF)[0] == 200
        stats = receiver.receiver.stats
        wait_until(lambda: stats()["traces_evaluated"] == len(TRACE_IDS), "every verdict")
        receiver.stop()
        events = [{**attributes_of(r), "trace_id": r.trace_id.hex()} for r in logs.records()]
    finally:
        logs.stop()
    assert_provenance(events)


def test_every_live_event_carries_its_provenance(
    judge_env: JudgeServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    logs = LogsReceiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", logs.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "grpc")
    provider = TracerProvider()
    try:
        installation = install(
            provider=provider,
            suite=str(write_suite(tmp_path, SUITE)),
            evaluation_events=True,
            judge_cache=False,
            grace_ms=0,
            handle_sigterm=False,
        )
        assert installation is not None
        tracer = provider.get_tracer("agent")
        for _ in range(6):
            with tracer.start_as_current_span(
                "invoke_agent refund_agent", attributes={"gen_ai.agent.name": "refund_agent"}
            ):
                with tool("issue_refund", {"order_id": "ORD-1"}, tracer=tracer):
                    pass
        provider.shutdown()
        events = [{**attributes_of(r), "trace_id": r.trace_id.hex()} for r in logs.records()]
    finally:
        logs.stop()
    assert_provenance(events)


def test_every_annotated_event_of_eval_carries_its_provenance(
    tmp_path: Path, judge_env: JudgeServer
) -> None:
    dump = tmp_path / "traces.jsonl"
    writer = OtlpFileWriter(dump)
    for trace_id in TRACE_IDS:
        writer.write_spans(refund_spans(trace_id))
    writer.close()
    events_file = tmp_path / "events.jsonl"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            "--workers",
            "1",
            str(write_suite(tmp_path, SUITE)),
            str(dump),
            "--no-judge-cache",
            "--annotate",
            str(events_file),
        ],
    )
    assert result.exit_code == 0, result.output
    events = [
        {**r.attributes, "trace_id": r.trace_id} for r in read_log_records([str(events_file)])
    ]
    assert_provenance(events)
    # eval samples as serve and live do: the sampled check is scored on the traces of its
    # sample, and only those (the others get a skipped score and no event)
    scored = {e["trace_id"] for e in events if "tooltrail.sample.rate" in e}
    in_its_sample = {t for t in TRACE_IDS if in_sample(EvalTrace(t, tool_calls=[]), Sample(0.5))}
    assert scored == in_its_sample
    assert 0 < len(in_its_sample) < len(TRACE_IDS)


def hashes(suite_text: str, tmp_path: Path) -> dict[str, str]:
    """Each event's configuration hash by evaluation name, for one trace."""
    path = tmp_path / "suite.yaml"
    path.write_text(suite_text)
    suite = TestSuite.load(path)
    trace = EvalTrace(
        "ab" * 16,
        tool_calls=[ToolCall(name="issue_refund", args={"a": 1}, span_id="cd" * 8)],
        metadata={"root_span_id": "ef" * 8},
    )
    results = evaluate_cases(suite.cases, trace)  # no judge installed: the judge's is an error
    options = EventOptions(origins=Origins(suite))
    return {
        e.attributes["gen_ai.evaluation.name"]: (
            e.attributes["tooltrail.check.config_hash"],
            e.attributes.get("tooltrail.judge.prompt_hash"),
            e.attributes["tooltrail.check.version"],
        )
        for e in evaluation_events(trace, results, options=options)
    }


def test_a_checks_hash_changes_with_its_configuration_and_no_other(tmp_path: Path) -> None:
    before = hashes(SUITE, tmp_path)
    rubric = hashes(
        SUITE.replace("The amount is the order total.", "Refund at most $50."), tmp_path
    )
    assert rubric["tool_args_judge:issue_refund"][0] != before["tool_args_judge:issue_refund"][0]
    assert rubric["tool_args_judge:issue_refund"][1] != before["tool_args_judge:issue_refund"][1]
    for name in ("required_tool:issue_refund", "forbidden_tool:delete_account"):
        assert rubric[name] == before[name]
    forbidden = hashes(SUITE.replace("[delete_account]", "[delete_account, wipe]"), tmp_path)
    assert (
        forbidden["forbidden_tool:delete_account"][0] != before["forbidden_tool:delete_account"][0]
    )
    assert forbidden["required_tool:issue_refund"] == before["required_tool:issue_refund"]
    assert forbidden["tool_args_judge:issue_refund"] == before["tool_args_judge:issue_refund"]
    assert forbidden["tooltrail.case"][0] != before["tooltrail.case"][0]  # the whole case
    sample = hashes(SUITE.replace("sample: 0.5", "sample: 0.6"), tmp_path)
    assert sample["no_redundant_tool_calls"][0] != before["no_redundant_tool_calls"][0]
    assert sample["required_tool:issue_refund"] == before["required_tool:issue_refund"]
    version = hashes(SUITE.replace('version: "3.1"', 'version: "4"'), tmp_path)
    assert {v[2] for v in version.values()} == {"4"}
    assert {v[0] for v in version.values()} == {v[0] for v in before.values()}
    # The same configuration gives the same hash, in any process: it is a pure digest.
    assert hashes(SUITE, tmp_path) == before


def test_the_field_of_each_metric_is_the_field_its_checks_are_built_from() -> None:
    """``origins.METRIC_FIELDS`` against the checks: a case setting one field gives scores of
    that field's metric only."""
    values: dict[str, Any] = {
        "expected_contains": ["x"],
        "required_tools": ["a"],
        "forbidden_tools": ["b"],
        "required_tool_arguments": {"a": ["k"]},
        "expected_tool_arguments": {"a": {"k": 1}},
        "args_from": {"a": {"k": "user"}},
        "required_tool_order": ["a", "c"],
        "max_turns": 3,
        "max_latency_ms": 10,
        "max_tool_calls": 3,
        "max_llm_calls": 3,
        "max_tokens": 4,
        "max_cost_usd": 1.0,
    }
    assert set(METRIC_FIELDS.values()) <= {term.key for term in CASE_TERMS}
    trace = EvalTrace("t", tool_calls=[ToolCall(name="a", args={"k": 1})], metadata={})
    for metric, field in METRIC_FIELDS.items():
        case = {"id": "c", field: values[field]}
        if field == "max_cost_usd":
            case["prices"] = {"m": {"input": 1, "output": 1}}
        suite = TestSuite.from_dict({"name": "n", "cases": [case]})
        (row,) = evaluate_cases(suite.cases, trace)
        assert {score.metric for score in row.scores} == {metric}, field
