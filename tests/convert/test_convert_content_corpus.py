"""``tooltrail convert --content`` on the recorded corpus shows every turn's input and reply and
every call's result the recording holds (issue 23).

The truth files record calls, not content: inputs, replies and results are checked against the
scenario scripts, written out here by hand (the scripted fake model said the same under every
framework, and the scripted tools returned the same values). Failed calls are checked against
the truth's error text; the no-content recording shows nothing and says so once per trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures import CORPUS

from tooltrail.cli import main

TRUTHS = sorted(CORPUS.glob("*/*.truth.json"))
NO_CONTENT = "google-adk-default-nocontent"

REFUND = "I want a refund for order ORD-7731, I'm customer C-118."
REFUNDED = "Your refund of $49.99 for ORD-7731 has been issued."
#: scenario -> (the user's message, the agent's reply) per turn, from the scenario scripts.
SCRIPT: dict[str, tuple[tuple[str, str | None], ...]] = {
    "a_refund_ok": ((REFUND, REFUNDED),),
    "a_refund_ok_stream": ((REFUND, REFUNDED),),
    "b_refund_skip_verify": ((REFUND, REFUNDED),),
    "c_refund_wrong_amount": ((REFUND, "Your refund of $499.90 for ORD-7731 has been issued."),),
    "d_loop_web_search": (
        ("What's the refund policy for ORD-7731?", "Refunds are accepted within 30 days."),
    ),
    "e_booking_multiturn_ok": (
        ("Book me a table at 10am.", "Booked for 10am."),
        ("Actually, make it 11am.", "Moved to 11am."),
    ),
    "e_booking_multiturn_bad": (
        ("Book me a table at 10am.", "Booked for 10am."),
        ("Actually, make it 11am.", "Moved to 11am."),
    ),
    "f_tool_error_retry": ((REFUND, REFUNDED),),
    "g_parallel_calls": ((REFUND, REFUNDED),),
    "h_nested_agent_tool": ((REFUND, "The specialist issued your refund of $49.99."),),
    "i_complex_args": (("Ship my order to Zürich, express.", "Shipment created."),),
    "j_positional_args": ((REFUND, REFUNDED),),
    "x_missing_root_span": ((REFUND, REFUNDED),),
}
#: f2_tool_error_fatal: the frameworks whose agent answered after the failed refund; under the
#: others the run ended with the failure, without a reply.
APOLOGY = "Sorry, the refund service is unavailable right now."
ANSWERED_THE_FAILURE = {"strands", "strands-latest-semconv", "vercel-ai"}
#: What each scripted tool returned when it succeeded.
RESULTS: dict[str, Any] = {
    "lookup_order": {
        "order_id": "ORD-7731",
        "customer_id": "C-118",
        "total": 49.99,
        "status": "delivered",
    },
    "verify_identity": {"verified": True},
    "issue_refund": {"refund_id": "RF-1", "status": "issued"},
    "web_search": {"results": ["Refunds are accepted within 30 days of delivery."]},
    "create_booking": {"booking_id": "BK-1", "status": "confirmed"},
    "update_booking": {"booking_id": "BK-1", "status": "updated"},
    "get_time": {"now": "2025-01-01T10:00:00Z"},
    "create_shipment": {"shipment_id": "SH-9", "status": "created"},
}
#: The agent used as a tool answers with its text (ADK's AgentTool wraps it as ``result``).
SPECIALIST = "Refund of 49.99 issued for ORD-7731."


def _cases() -> list[Any]:
    return [
        pytest.param(truth, fmt, id=f"{truth.parent.name}/{truth.name[: -len('.truth.json')]}{fmt}")
        for truth in TRUTHS
        for fmt in (".otlp.jsonl", ".otlp.pb")
    ]


def _convert(truth: Path, fmt: str) -> list[dict[str, Any]]:
    data = truth.with_name(truth.name[: -len(".truth.json")] + fmt)
    args = ["convert", "--content", "--group", "conversation", str(data)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _said(text: str | None) -> str | None:
    return text.rstrip("\n") if text is not None else None  # Strands ends its text with one


@pytest.mark.parametrize(("truth", "fmt"), _cases())
def test_convert_shows_each_turns_input_and_reply(truth: Path, fmt: str) -> None:
    framework, scenario = truth.parent.name, truth.name[: -len(".truth.json")]
    shown = _convert(truth, fmt)
    turns = [(t["input"], _said(t["reply"])) for trace in shown for t in trace["turns"]]
    assert len(turns) == json.loads(truth.read_text())["turn_count"]
    if framework == NO_CONTENT:
        assert turns == [(None, None)] * len(turns)
        assert all(trace["output"] is None for trace in shown)
        return
    if scenario == "f2_tool_error_fatal":
        expected = ((REFUND, APOLOGY if framework in ANSWERED_THE_FAILURE else None),)
    elif scenario == "t_testmodel_all_tools":  # TestModel's reply: every tool's result, as JSON
        expected = ((REFUND, json.dumps(RESULTS_OF_ALL_TOOLS, separators=(",", ":"))),)
    else:
        expected = SCRIPT[scenario]
    assert tuple(turns) == expected
    for trace in shown:
        assert _said(trace["output"]) == _said(trace["turns"][-1]["reply"])


RESULTS_OF_ALL_TOOLS = {
    name: RESULTS[name] for name in ("lookup_order", "verify_identity", "issue_refund")
}


@pytest.mark.parametrize(("truth", "fmt"), _cases())
def test_convert_shows_each_calls_result(truth: Path, fmt: str) -> None:
    framework = truth.parent.name
    shown = _convert(truth, fmt)
    calls = [call for trace in shown for call in trace["tool_calls"]]
    if framework == NO_CONTENT:
        assert [call["result"] for call in calls] == [None] * len(calls)
        assert [trace["content_missing"] for trace in shown] == [
            f"{len(trace['tool_calls'])} of {len(trace['tool_calls'])} tool calls have no "
            "recorded arguments"
            for trace in shown
        ]
        return
    assert all("content_missing" not in trace for trace in shown)
    errors = {
        c["call_id"]: c["error"] for c in json.loads(truth.read_text())["calls"] if c.get("error")
    }
    for call in calls:
        result = call["result"]
        if call["status"] == "error":  # the failure's text, when the recording holds one
            assert result is None or errors[call["call_id"]] in json.dumps(result), call
        elif call["name"] in ("ask_refund_specialist", "refund_specialist"):
            assert result in (SPECIALIST, SPECIALIST + "\n", {"result": SPECIALIST}), call
        else:
            assert result == RESULTS[call["name"]], call
