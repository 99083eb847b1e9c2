"""Transcripts (chat logs of runs) as input: recognised by content, read by the message reader
into the same ``EvalTrace`` as the run's telemetry, so ``tooltrail eval`` gives the same verdicts
on a run's transcript, in every provider's shape, as on the run recorded as OTLP.

The runs are the Agno recordings of ``tests/data/recorded`` (``recordings/record_agno.py``);
their transcripts are written from the recordings' truth files (what the scripted model asked
for and the tools returned), in each shape of ``tests/message_shapes.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures import DATA
from message_shapes import SHAPES, Call, Conversation, Turn, expected_result

from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.convert.transcripts import is_transcript_file
from tooltrail.otlp import Diagnostic

RECORDED = DATA / "recorded" / "agno-openinference"
SCENARIOS = ["a_refund_ok", "f_tool_error_retry", "g_parallel_calls", "e_two_turns"]
SUITE = """\
name: transcript-parity
cases:
  - id: every-run
    match: all
    expected_contains: ["$49.99"]
    required_tools: [lookup_order, verify_identity, issue_refund]
    required_tool_order: [lookup_order, verify_identity, issue_refund]
    expected_tool_arguments:
      issue_refund: {order_id: ORD-7731, amount: 49.99}
    max_turns: 1
    evaluators:
      - {name: tool_call_precision, threshold: 1.0}
      - {name: no_redundant_tool_calls, threshold: 1.0}
"""


def _truth(scenario: str) -> dict[str, Any]:
    return json.loads((RECORDED / f"{scenario}.truth.json").read_text())


def conversation(truth: dict[str, Any]) -> Conversation:
    """The recorded run as a conversation: a step per model response (calls of one parallel
    group together), the failed call's result the text its tool raised."""
    turns = []
    for turn in truth["turns"]:
        steps: list[list[Call]] = []
        for call in turn["calls"]:
            made = Call(
                name=call["tool"],
                call_id=call["call_id"],
                args=call["args"],
                result=call["result"] if call["status"] == "ok" else call["error"],
                error=call["status"] == "error",
            )
            group = call["parallel_group"]
            if steps and group is not None and steps[-1][-1].call_id in _grouped(turn, group):
                steps[-1].append(made)
            else:
                steps.append([made])
        turns.append(Turn(turn["user"], tuple(tuple(s) for s in steps), turn["reply"]))
    return Conversation(tuple(turns), system="You are a helpful assistant.")


def _grouped(turn: dict[str, Any], group: int) -> set[str]:
    return {c["call_id"] for c in turn["calls"] if c["parallel_group"] == group}


def _scores(args: list[str], tmp_path: Path) -> list[list[tuple[str, bool, float]]]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        [
            "eval",
            str(suite),
            *args,
            "--group",
            "conversation",
            "--format",
            "json",
            "--out",
            str(report),
        ],
    )
    assert result.exit_code in (0, 1), result.output
    rows = json.loads(report.read_text())["cases"]
    return [[(s["name"], s["passed"], s["value"]) for s in row["scores"]] for row in rows]


@pytest.mark.parametrize("shape", sorted(SHAPES))
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_eval_gives_the_same_verdicts_on_a_transcript_as_on_the_recording(
    scenario: str, shape: str, tmp_path: Path
) -> None:
    recorded = _scores([str(RECORDED / f"{scenario}.otlp.jsonl")], tmp_path)
    transcript = tmp_path / f"{scenario}.json"
    messages = SHAPES[shape](conversation(_truth(scenario)))
    transcript.write_text(json.dumps({"id": scenario, "messages": messages}))
    assert _scores([str(transcript)], tmp_path) == recorded
    assert recorded  # the suite scored the run


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_transcript_reads_as_its_calls_results_turns_and_replies(
    shape: str, tmp_path: Path
) -> None:
    truth = _truth("e_two_turns")
    conv = conversation(truth)
    path = tmp_path / "runs.jsonl"
    path.write_text(json.dumps(SHAPES[shape](conv)) + "\n")
    (trace,) = read_traces([str(path)], content=True)
    assert [(c.name, c.args, c.call_id) for c in trace.tool_calls] == [
        (c["tool"], c["args"], c["call_id"]) for c in truth["calls"]
    ]
    assert [c.result for c in trace.tool_calls] == [expected_result(shape, c) for c in conv.calls()]
    assert [(t.input, t.reply) for t in trace.turns] == [
        (t["user"], t["reply"]) for t in truth["turns"]
    ]
    assert trace.metadata["turn_count"] == 2
    assert trace.output == truth["turns"][-1]["reply"]


def test_an_error_result_marks_the_call_failed(tmp_path: Path) -> None:
    conv = conversation(_truth("f_tool_error_retry"))
    path = tmp_path / "run.json"
    path.write_text(json.dumps(SHAPES["anthropic"](conv)))
    (trace,) = read_traces([str(path)])
    assert [c.status for c in trace.tool_calls] == ["unset", "unset", "error", "unset"]
    assert trace.tool_calls[2].error == "payment gateway timeout, please retry"


def test_runs_name_their_case_and_trace(tmp_path: Path) -> None:
    conv = conversation(_truth("a_refund_ok"))
    path = tmp_path / "runs.jsonl"
    runs = [
        {
            "id": "0af7651916cd43dd8448eb211c80319c",
            "case_id": "refund",
            "metadata": {"agent_name": "refund_agent", "team": "payments"},
            "messages": SHAPES["openai_chat"](conv),
        },
        {"run_id": "second", "messages": SHAPES["openai_chat"](conv)},
    ]
    path.write_text("".join(json.dumps(run) + "\n" for run in runs))
    first, second = read_traces([str(path)])
    assert first.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert first.metadata["case_id"] == "refund"
    assert first.metadata["agent_name"] == "refund_agent"
    assert first.metadata["attributes"]["team"] == "payments"
    assert len(second.trace_id) == 32 and second.trace_id != first.trace_id


def test_a_line_without_a_run_is_a_diagnostic_and_the_rest_is_read(tmp_path: Path) -> None:
    conv = conversation(_truth("a_refund_ok"))
    run = json.dumps(SHAPES["genai_parts"](conv))
    path = tmp_path / "runs.jsonl"
    path.write_text(f"{run}\n{{not json\n{json.dumps({'x': 1})}\n{run}\n")
    diagnostics: list[Diagnostic] = []
    traces = list(read_traces([str(path)], diagnostics=diagnostics))
    assert len(traces) == 2
    assert [d.line for d in diagnostics] == [2, 3]
    assert diagnostics[0].message.startswith("not JSON")
    assert diagnostics[1].message == "holds no transcript run (a list of messages); skipped"


def test_telemetry_is_never_taken_for_a_transcript(tmp_path: Path) -> None:
    for path in sorted((DATA / "recorded").rglob("*.otlp.*")) + sorted(DATA.glob("stores/*")):
        assert not is_transcript_file(str(path)), path
    other = tmp_path / "numbers.json"
    other.write_text("[1, 2, 3]")
    assert not is_transcript_file(str(other))
    result = CliRunner().invoke(main, ["convert", str(other)])
    assert result.exit_code == 1 and "not an OTLP traces file" in result.output


def test_a_transcript_beside_telemetry_in_one_directory(tmp_path: Path) -> None:
    conv = conversation(_truth("a_refund_ok"))
    (tmp_path / "a_transcript.json").write_text(json.dumps(SHAPES["bedrock"](conv)))
    (tmp_path / "b_trace.otlp.jsonl").write_bytes(
        (RECORDED / "a_refund_ok.otlp.jsonl").read_bytes()
    )
    traces = list(read_traces([str(tmp_path)]))
    assert [[c.name for c in t.tool_calls] for t in traces] == [
        ["lookup_order", "verify_identity", "issue_refund"]
    ] * 2
