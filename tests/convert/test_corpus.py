"""Every corpus scenario converts to exactly the calls its ``.truth.json`` records.

The corpus (tests/data/corpus, see its README) holds real traces of real agent frameworks, each
scenario as one protobuf request and as collector-style JSON lines, with the ground truth of
what ran. Both files of every scenario of every framework folder are checked: call names,
arguments (as parsed values), order, status, call ids, agents, turns and turn counts
(grouped by conversation), and the final reply where the trace carries one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures import CORPUS

from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace

TRUTHS = sorted(CORPUS.glob("*/*.truth.json"))
FORMATS = (".otlp.pb", ".otlp.jsonl")

#: google-adk-default-nocontent/*.truth.json notes: "execute_tool spans carry NO arguments at
#: all; only tool name + call id survive -- args must be treated as unknown".
ARGS_NOT_CAPTURED = {"google-adk-default-nocontent"}
#: mlflow-genai-semconv/e_*.truth.json notes: the session set with mlflow.update_current_trace
#: may not reach OTLP; it does not, so each turn's trace stands alone.
NO_CONVERSATION_ID = {"mlflow-genai-semconv"}

#: The scripted final replies (the generator's fake models), by scenario and turn.
REPLIES = {
    "a_refund_ok": "Your refund of $49.99 for ORD-7731 has been issued.",
    "a_refund_ok_stream": "Your refund of $49.99 for ORD-7731 has been issued.",
    "b_refund_skip_verify": "Your refund of $49.99 for ORD-7731 has been issued.",
    "c_refund_wrong_amount": "Your refund of $499.90 for ORD-7731 has been issued.",
    "d_loop_web_search": "Refunds are accepted within 30 days.",
    "e_booking_multiturn_ok": ("Booked for 10am.", "Moved to 11am."),
    "e_booking_multiturn_bad": ("Booked for 10am.", "Moved to 11am."),
    "f_tool_error_retry": "Your refund of $49.99 for ORD-7731 has been issued.",
    "g_parallel_calls": "Your refund of $49.99 for ORD-7731 has been issued.",
    "h_nested_agent_tool": "The specialist issued your refund of $49.99.",
    "i_complex_args": "Shipment created.",
    "j_positional_args": "Your refund of $49.99 for ORD-7731 has been issued.",
    "x_missing_root_span": "Your refund of $49.99 for ORD-7731 has been issued.",
}
#: f2 notes: Vercel and Strands turn the tool error into a model message and the model answers;
#: the other frameworks abort the run, so there is no reply.
FATAL_REPLY = "Sorry, the refund service is unavailable right now."
ANSWERS_AFTER_FATAL_ERROR = {"vercel-ai", "strands", "strands-latest-semconv"}
#: TestModel answers with a synthetic JSON of the tool results (truth notes): not checked.
SYNTHETIC_REPLY = {"t_testmodel_all_tools"}


def _cases() -> list[Any]:
    return [
        pytest.param(truth, fmt, id=f"{truth.parent.name}/{truth.name[: -len('.truth.json')]}{fmt}")
        for truth in TRUTHS
        for fmt in FORMATS
    ]


def _same(a: Any, b: Any) -> bool:
    """Values as the checks compare them: numbers numerically, booleans only to booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _convert(truth_path: Path, fmt: str) -> tuple[dict[str, Any], list[EvalTrace]]:
    truth = json.loads(truth_path.read_text())
    data = truth_path.with_name(truth_path.name.replace(".truth.json", fmt))
    diagnostics: list[Any] = []
    traces = list(read_traces(str(data), group="conversation", diagnostics=diagnostics))
    assert diagnostics == []
    return truth, traces


def _turns_of(truth: dict[str, Any], trace: EvalTrace) -> list[dict[str, Any]]:
    ids = set(trace.metadata["trace_ids"])
    return [turn for turn in truth["traces"] if turn["trace_id"] in ids]


@pytest.mark.parametrize(("truth_path", "fmt"), _cases())
def test_calls_match_truth(truth_path: Path, fmt: str) -> None:
    truth, traces = _convert(truth_path, fmt)
    _assert_calls_match(truth, traces, truth_path.parent.name)


@pytest.mark.parametrize(
    "sdk_json", sorted((CORPUS / "vercel-ai" / "sdk-json").glob("*.json")), ids=lambda p: p.stem
)
def test_vercel_sdk_own_json_body_matches_truth(sdk_json: Path) -> None:
    """vercel-ai/sdk-json: the Node SDK's OTLP/HTTP JSON (numbers as numbers, empty fields)."""
    truth = json.loads((CORPUS / "vercel-ai" / f"{sdk_json.stem}.truth.json").read_text())
    diagnostics: list[Any] = []
    traces = list(read_traces(str(sdk_json), group="conversation", diagnostics=diagnostics))
    assert diagnostics == []
    _assert_calls_match(truth, traces, "vercel-ai")


def _assert_calls_match(truth: dict[str, Any], traces: list[EvalTrace], framework: str) -> None:
    covered = sorted(tid for trace in traces for tid in trace.metadata["trace_ids"])
    assert covered == sorted(truth["trace_ids"])
    for trace in traces:
        expected = [
            (turn_no, call)
            for turn_no, turn in enumerate(_turns_of(truth, trace), start=1)
            for call in turn["calls"]
        ]
        got = trace.tool_calls
        assert [c.name for c in got] == [call["tool"] for _, call in expected]
        for call, (turn_no, want) in zip(got, expected, strict=True):
            if framework in ARGS_NOT_CAPTURED:
                assert call.args is None
            else:
                assert _same(call.args, want["args"]), (call.name, call.args, want["args"])
            assert call.turn == turn_no
            assert call.call_id == want["call_id"]
            assert call.agent == want["agent"]
            if want["status"] == "error":
                assert call.status == "error"
                assert want["error"] in (call.error or "")
            else:
                assert call.status in ("ok", "unset")


@pytest.mark.parametrize(("truth_path", "fmt"), _cases())
def test_turn_count_matches_truth(truth_path: Path, fmt: str) -> None:
    truth, traces = _convert(truth_path, fmt)
    if truth_path.parent.name in NO_CONVERSATION_ID:
        assert [t.metadata["turn_count"] for t in traces] == [1] * truth["turn_count"]
    else:
        assert len(traces) == 1
        assert traces[0].metadata["turn_count"] == truth["turn_count"]
        assert traces[0].turn_count == truth["turn_count"]


@pytest.mark.parametrize(("truth_path", "fmt"), _cases())
def test_reply_is_the_final_answer(truth_path: Path, fmt: str) -> None:
    truth, traces = _convert(truth_path, fmt)
    framework, scenario = truth_path.parent.name, truth["scenario"]
    if scenario in SYNTHETIC_REPLY:
        pytest.skip("TestModel's reply is synthetic")
    for trace in traces:
        last_turn = len(_turns_of(truth, trace))
        if framework in NO_CONVERSATION_ID:
            last_turn = [t["trace_id"] for t in truth["traces"]].index(trace.trace_id) + 1
        if framework in ARGS_NOT_CAPTURED:  # content capture off: no message text either
            want = None
        elif scenario == "f2_tool_error_fatal":
            want = FATAL_REPLY if framework in ANSWERS_AFTER_FATAL_ERROR else None
        else:
            replies = REPLIES[scenario]
            want = replies[last_turn - 1] if isinstance(replies, tuple) else replies
        got = trace.output.strip() if trace.output is not None else None
        assert got == want


@pytest.mark.parametrize(("truth_path", "fmt"), _cases())
def test_metadata_names_trace_and_agent(truth_path: Path, fmt: str) -> None:
    truth, traces = _convert(truth_path, fmt)
    for trace in traces:
        turns = _turns_of(truth, trace)
        meta = trace.metadata
        assert meta["service.name"].startswith("corpus-")
        assert meta["agent_name"] == turns[0]["agent"]
        assert meta["trace_ids"] == [turn["trace_id"] for turn in turns]
        assert meta["span_count"] > len(trace.tool_calls)
        assert meta["total_latency_ms"] > 0
        assert set(meta["error_span_ids"]) >= {
            c.span_id for c in trace.tool_calls if c.status == "error" and c.span_id
        }


def test_every_framework_folder_is_checked() -> None:
    folders = {p.parent.name for p in TRUTHS}
    assert folders == {p.name for p in CORPUS.iterdir() if p.is_dir()}
    assert len(TRUTHS) >= 90
