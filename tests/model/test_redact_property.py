"""Issue 22: no generated secret reaches any output, whatever its shape and position.

Hypothesis places a secret under a default key (spelled in any case, with ``_``, ``-`` or in
camelCase) in a tool call's arguments: as an object's value, or as ``key=value``,
``key="value"``, ``key: value`` or ``"key": "value"`` text, wrapped up to ten times in objects
and lists and (up to five times) in JSON text (with white space around it, or indented) or
Python-literal text, or in prose.
Each case goes through every output, in process: the trace is converted and evaluated as
everywhere else, then rendered as text, JSON with trajectories, JUnit, Markdown and HTML, read
back as a saved report, compared, turned into evaluation events (explanations on) and a
results line, and its spans redacted for ``--dump`` and tagged for ``--forward`` and encoded.
At least ``CASES`` cases a run, derandomized (the same cases every run). A few of the generated
cases then go through one real ``tooltrail serve`` over loopback: dump, forward and results
file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from serve_helpers import post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of
from test_serve_secrets import ForwardTarget

from tooltrail.convert import to_eval_trace
from tooltrail.otlp import encode_request
from tooltrail.otlp.write.encode import json_line
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.pipeline.inline import result_line
from tooltrail.redact import DEFAULT_KEYS, Redaction
from tooltrail.report import render_json, render_junit, render_markdown, render_text
from tooltrail.report.compare import (
    compare_reports,
    render_comparison_markdown,
    render_comparison_text,
)
from tooltrail.report.html import render_html
from tooltrail.report.saved import saved_report_of
from tooltrail.report.trajectory import _RawSpan, build_trajectory, failure_marks
from tooltrail.results import CaseResult, EvaluationReport
from tooltrail.score import evaluate_trace
from tooltrail.scores import EventOptions, evaluation_events
from tooltrail.serve import ServeConfig, start_in_thread
from tooltrail.serve.forward import tagged
from tooltrail.serve.redaction import redacted
from tooltrail.suite import TestSuite

#: Generated cases per run, at least.
CASES = 1000
RULES = Redaction()
SUITE_YAML = """\
name: secrets
cases:
  - id: login
    match: all
    expected_tool_arguments:
      login: {user: bob}
    turns:
      - expect:
          tool_calls_args:
            - {tool: login, args: {user: bob}, mode: exact}
"""


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.title() for part in rest)


KEYS = st.sampled_from(DEFAULT_KEYS).flatmap(
    lambda key: st.sampled_from(
        [key, key.upper(), key.replace("_", "-"), _camel(key), key.title().replace("_", "")]
    )
)
SECRETS = st.text(
    alphabet="abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ0123456789._@!-",
    min_size=8,
    max_size=14,
).map(lambda s: "Sx9" + s)
SPACE = st.sampled_from(["", " ", "  ", "\n", "\t ", " \n  "])
WRAPPERS = ["object", "list", "json", "json-indented", "literal", "prose"]
TEXT_WRAPPERS = {"json", "json-indented", "literal"}


def _wrap(value: Any, how: str, pad: str, name: str) -> Any:
    if how == "object":
        return {name: value, "user": "alice"}
    if how == "list":
        return ["alice", value]
    if how == "json":
        return pad + json.dumps(value) + pad
    if how == "json-indented":
        return pad + json.dumps(value, indent=2)
    if how == "literal":
        return pad + repr(value) + pad
    # prose around text, or around an object's JSON text
    text = value if isinstance(value, str) else json.dumps(value)
    return f"user=alice & note: see {text}"


@st.composite
def placed(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A secret and tool arguments holding it somewhere."""
    key, secret = draw(KEYS), draw(SECRETS)
    base = draw(st.sampled_from(["object", "equals", "quoted", "colon", "fragment"]))
    pad = draw(SPACE)
    value: Any = {
        "object": {key: secret, "user": "alice"},
        "equals": f"user=alice&{key}{pad}={pad}{secret}",
        "quoted": f"user='alice' {key}{pad}={pad}\"{secret}\"",
        "colon": f"{key}:{pad or ' '}{secret}",
        "fragment": f'"user": "alice", "{key}"{pad}:{pad}"{secret}"',  # JSON cut short
    }[base]
    texts = 0
    for how in draw(st.lists(st.sampled_from(WRAPPERS), max_size=10)):
        if how in TEXT_WRAPPERS:
            if texts == 5:  # each level escapes the one inside: five keep a case small
                continue
            texts += 1
        value = _wrap(value, how, draw(SPACE), draw(st.sampled_from(["payload", "data", "q"])))
    args = value if isinstance(value, dict) else {"payload": value, "user": "alice"}
    return secret, args


def tool_spans(args: dict[str, Any]) -> list[Any]:
    """A trace whose tool calls carry ``args`` as GenAI JSON text and as an OpenInference
    Python literal."""
    return agent_trace(
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "login",
                "gen_ai.tool.call.arguments": json.dumps(args),
            },
            {
                "span.name": "login",
                "openinference.span.kind": "TOOL",
                "tool.name": "login",
                "input.value": repr(args),
            },
        ]
    )


def every_output(args: dict[str, Any], suite: TestSuite) -> dict[str, str]:
    """Every text a case's trace becomes, in process, by the name of its output."""
    spans = tool_spans(args)
    trace = to_eval_trace(spans)
    [case] = suite.cases
    row = evaluate_trace(case, trace)
    report = EvaluationReport.from_results(suite, [row])
    trajectory = build_trajectory(trace, [_RawSpan.of(s) for s in spans], RULES)
    trajectory.marks = failure_marks(trace, row)
    trajectories = {0: trajectory}
    base = EvaluationReport.from_results(suite, [CaseResult("login", True, [], row.trace_id)])
    comparison = compare_reports(base, report)
    json_text = render_json(report, trajectories=trajectories)
    again = saved_report_of(json_text, "report.json", RULES)
    events = evaluation_events(trace, [row], options=EventOptions(explanations=True))
    completed = CompletedTrace(trace_id=int(trace.trace_id, 16), spans=[])
    return {
        "explanations": "\n".join(s.explanation for s in row.scores),
        "text": render_text(report),
        "json": json_text,
        "junit": render_junit(report),
        "markdown": render_markdown(report),
        "html": render_html(report, trajectories=trajectories),
        "report": render_html(again.report, trajectories=again.trajectories)
        + render_text(again.report),
        "compare": render_comparison_text(comparison)
        + render_comparison_markdown(comparison)
        + render_html(report, comparison=comparison),
        "events": repr([e.attributes for e in events]),
        "results": result_line(completed, trace, [row], explanations=True).decode(),
        "dump": json_line(encode_request(redacted(RULES, spans))).decode(),
        "forward": encode_request(tagged(spans, RULES)).SerializeToString().decode("latin-1"),
    }


def _suite(tmp: Path) -> TestSuite:
    return TestSuite.load(write_suite(tmp, SUITE_YAML))


def test_no_generated_secret_reaches_any_output(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    seen: list[tuple[str, dict[str, Any]]] = []

    @settings(
        max_examples=CASES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(placed())
    def check(case: tuple[str, dict[str, Any]]) -> None:
        secret, args = case
        seen.append(case)
        outputs = every_output(args, suite)
        assert "alice" in outputs["explanations"]  # the explanation quotes the call
        for where, text in outputs.items():
            assert secret not in text, (where, args)

    check()
    assert len(seen) >= CASES
    SERVED.extend(seen[:: len(seen) // 6][:6])


#: A few of the generated cases, for the run through a real receiver.
SERVED: list[tuple[str, dict[str, Any]]] = []


def test_generated_secrets_leave_a_real_serve_redacted(tmp_path: Path) -> None:
    """Dump, forward and results file (explanations on) of one receiver over loopback."""
    cases = SERVED or _fallback_cases()
    target = ForwardTarget()
    dump, results = tmp_path / "dump.jsonl", tmp_path / "results.jsonl"
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(tmp_path, SUITE_YAML),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            dump=dump,
            forward=target.endpoint,
            results=results,
            explanations=True,
        )
    )
    try:
        assert receiver.http_port is not None
        for _, args in cases:
            status, _, _ = post(receiver.http_port, body_of(tool_spans(args)), PROTOBUF)
            assert status == 200
    finally:
        stats = receiver.stop()
        target.stop()
    assert stats["traces_evaluated"] == len(cases)
    outputs = {
        "dump": dump.read_bytes(),
        "forward": b"".join(target.bodies),
        "results": results.read_bytes(),
    }
    assert b"alice" in outputs["results"]
    for secret, args in cases:
        for where, data in outputs.items():
            assert secret.encode() not in data, (where, args)


def _fallback_cases() -> list[tuple[str, dict[str, Any]]]:
    """When this test runs alone: six cases of the generator, found the same way each run."""
    found: list[tuple[str, dict[str, Any]]] = []

    @settings(max_examples=6, derandomize=True, database=None, deadline=None)
    @given(placed())
    def collect(case: tuple[str, dict[str, Any]]) -> None:
        found.append(case)

    collect()
    return found
