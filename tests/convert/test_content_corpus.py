"""Content on the recorded corpus: every tool result, and each turn's input and reply, that a
recording holds (``read_traces(..., content=True)``); ``None`` where it holds none.

The truth files record calls, not content, so results are checked against the raw attribute or
event each framework wrote (read here straight from the JSON lines, not through tooltrail), and
inputs against the scenario script's user messages, which every framework recorded alike.
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
NO_CONTENT = {"google-adk-default-nocontent"}

#: Where each framework's tool span records the result (an attribute, or ``event:NAME:KEY``).
RESULT_AT = {
    "google-adk": "gen_ai.tool.call.result",
    "mlflow-genai-semconv": "gen_ai.tool.call.result",
    "pydantic-ai": "gen_ai.tool.call.result",
    "pydantic-ai-logfire": "gen_ai.tool.call.result",
    "strands-latest-semconv": "gen_ai.tool.call.result",
    "strands": "event:gen_ai.choice:message",
    "traceloop": "traceloop.entity.output",
    "vercel-ai": "ai.toolCall.result",
}

#: The user messages of each scenario's script, one per turn.
REFUND = "I want a refund for order ORD-7731, I'm customer C-118."
INPUTS = {
    "d_loop_web_search": ("What's the refund policy for ORD-7731?",),
    "e_booking_multiturn_ok": ("Book me a table at 10am.", "Actually, make it 11am."),
    "e_booking_multiturn_bad": ("Book me a table at 10am.", "Actually, make it 11am."),
    "i_complex_args": ("Ship my order to Zürich, express.",),
}
#: The scripted replies of a few scenarios, per turn (Strands appends a newline).
REPLIES = {
    "a_refund_ok": ("Your refund of $49.99 for ORD-7731 has been issued.",),
    "e_booking_multiturn_ok": ("Booked for 10am.", "Moved to 11am."),
}


def _cases() -> list[Any]:
    return [
        pytest.param(truth, fmt, id=f"{truth.parent.name}/{truth.name[: -len('.truth.json')]}{fmt}")
        for truth in TRUTHS
        for fmt in FORMATS
    ]


def _read(truth_path: Path, fmt: str, **kw: Any) -> list[EvalTrace]:
    data = truth_path.with_name(truth_path.name[: -len(".truth.json")] + fmt)
    return list(read_traces(str(data), group="conversation", **kw))


def _raw_spans(truth_path: Path) -> dict[str, tuple[dict[str, Any], list[Any]]]:
    """span id -> (string attributes, events) of the scenario's JSON lines."""
    data = truth_path.with_name(truth_path.name[: -len(".truth.json")] + ".otlp.jsonl")
    spans: dict[str, tuple[dict[str, Any], list[Any]]] = {}
    for line in data.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {
                        a["key"]: a["value"].get("stringValue") for a in span.get("attributes", [])
                    }
                    spans[span["spanId"].lower()] = (attrs, span.get("events", []))
    return spans


def _expected(raw: str | None) -> Any:
    """A raw result as the value it states: JSON parsed; Strands' ``[{"text": ...}]`` blocks
    are the text they hold, itself JSON."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:  # plain text (a failed call's message)
        return raw
    if isinstance(value, list) and all(isinstance(b, dict) and "text" in b for b in value):
        text = "".join(b["text"] for b in value)
        try:
            return json.loads(text)
        except ValueError:
            return text
    return value


def _raw_result(framework: str, attrs: dict[str, Any], events: list[Any]) -> str | None:
    where = RESULT_AT[framework]
    if not where.startswith("event:"):
        return attrs.get(where)
    _, name, key = where.split(":")
    for event in events:
        if event["name"] == name:
            for a in event.get("attributes", []):
                if a["key"] == key:
                    return a["value"].get("stringValue")
    return None


def _responses_sent(
    raw: dict[str, tuple[dict[str, Any], list[Any]]], call_id: str | None
) -> list[Any]:
    """Every ``tool_call_response`` (GenAI) or ``tool-result`` (Vercel ``ai.prompt.messages``:
    ``toolCallId``, ``output.value``) for ``call_id`` in the recording's message attributes and
    events, as values."""
    texts: list[str] = []
    for attrs, events in raw.values():
        texts += [v for v in attrs.values() if isinstance(v, str)]
        for event in events:
            texts += [a["value"].get("stringValue") or "" for a in event.get("attributes", [])]
    found: list[Any] = []
    for text in texts:
        if "tool_call_response" not in text and "tool-result" not in text:
            continue
        for message in json.loads(text):
            parts = message.get("parts", message.get("content"))
            for part in parts if isinstance(parts, list) else []:
                if part.get("type") == "tool_call_response" and part.get("id") == call_id:
                    response = part["response"]
                elif part.get("type") == "tool-result" and part.get("toolCallId") == call_id:
                    response = part["output"]["value"]
                else:
                    continue
                encoded = response if isinstance(response, str) else json.dumps(response)
                found.append(_expected(encoded))
    return found


@pytest.mark.parametrize(("truth_path", "fmt"), _cases())
def test_each_call_carries_the_result_its_span_records(truth_path: Path, fmt: str) -> None:
    framework = truth_path.parent.name
    traces = _read(truth_path, fmt, content=True)
    calls = [call for trace in traces for call in trace.tool_calls]
    assert calls
    if framework in NO_CONTENT:
        assert [call.result for call in calls] == [None] * len(calls)
        return
    raw = _raw_spans(truth_path)
    for call in calls:
        assert call.span_id is not None
        attrs, events = raw[call.span_id]
        expected = _expected(_raw_result(framework, attrs, events))
        if expected is None and call.result is not None:
            # the span records no result: it came from what the model was sent next (a
            # ``tool_call_response`` part for the call's id), which a failed call's message is
            assert call.status == "error", (call.name, "only failures lack a span result")
            assert call.result in _responses_sent(raw, call.call_id)
            continue
        assert call.result == expected, (call.name, call.span_id)
        if call.status != "error":
            assert call.result is not None, (call.name, "a successful call records its result")


@pytest.mark.parametrize(("truth_path", "fmt"), _cases())
def test_each_turn_carries_the_users_input_and_the_reply(truth_path: Path, fmt: str) -> None:
    framework = truth_path.parent.name
    scenario = truth_path.name[: -len(".truth.json")]
    truth = json.loads(truth_path.read_text())
    traces = _read(truth_path, fmt, content=True)
    turns = [turn for trace in traces for turn in trace.turns]
    assert len(turns) == truth["turn_count"]
    if framework in NO_CONTENT:
        assert [(t.input, t.reply) for t in turns] == [(None, None)] * len(turns)
        return
    expected = INPUTS.get(scenario, (REFUND,))
    assert tuple(turn.input for turn in turns) == expected
    if scenario in REPLIES:
        assert tuple((turn.reply or "").rstrip("\n") for turn in turns) == REPLIES[scenario]
    for trace in traces:  # the last turn's reply is the trace's
        assert trace.turns[-1].reply == trace.output


@pytest.mark.parametrize(("truth_path", "fmt"), _cases()[:4])
def test_content_is_not_read_unless_asked(truth_path: Path, fmt: str) -> None:
    for trace in _read(truth_path, fmt):
        assert trace.turns == []
        assert [call.result for call in trace.tool_calls] == [None] * len(trace.tool_calls)


def test_results_agree_across_frameworks() -> None:
    """The scripted tools returned the same values under every framework; each recording
    reads back to the same results, whatever its encoding (JSON, Strands content blocks)."""
    by_framework: dict[str, list[Any]] = {}
    for framework in RESULT_AT:
        truth = CORPUS / framework / "a_refund_ok.truth.json"
        calls = [c for t in _read(truth, ".otlp.pb", content=True) for c in t.tool_calls]
        by_framework[framework] = [(c.name, c.result) for c in calls]
    assert set(map(repr, by_framework.values())) == {
        repr(
            [
                (
                    "lookup_order",
                    {
                        "order_id": "ORD-7731",
                        "customer_id": "C-118",
                        "total": 49.99,
                        "status": "delivered",
                    },
                ),
                ("verify_identity", {"verified": True}),
                ("issue_refund", {"refund_id": "RF-1", "status": "issued"}),
            ]
        )
    }
