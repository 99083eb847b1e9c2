"""Model spans that list their calls as joined texts (OpenLIT's ``gen_ai.tool.name``,
``gen_ai.tool.call.id`` and ``gen_ai.tool.args``, written with content capture on or off),
tools' results wrapped in a framework's output object, and replies cut to length."""

from __future__ import annotations

import json
from typing import Any

from tooltrail.dialects import content, messages, spans
from tooltrail.dialects.messages import joined_calls, tool_payload


def openlit(names: str, ids: str, args: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.tool.name": names,
        "gen_ai.tool.call.id": ids,
        "gen_ai.tool.args": args,
    }


def test_joined_calls_are_paired_by_position_with_their_ids() -> None:
    args = json.dumps({"city": "Paris"}) + ", " + json.dumps({"city": "London, UK"})
    calls = joined_calls(openlit("get_weather, get_weather", "call_1, call_2", args))
    assert calls is not None
    assert [(c.name, c.call_id, c.args, c.position) for c in calls] == [
        ("get_weather", "call_1", {"city": "Paris"}, 0),
        ("get_weather", "call_2", {"city": "London, UK"}, 1),  # the separator inside a value
    ]
    assert {c.source for c in calls} == {"model:gen_ai.tool.args"}


def test_joined_calls_whose_counts_disagree_are_not_paired() -> None:
    """An empty field dropped from one list shifts the others: no call is better than a
    call given another's arguments."""
    assert joined_calls(openlit("lookup", "call_1, call_2", '{"a": 1}, {"b": 2}')) is None


def test_joined_ids_missing_leave_the_calls_without_ids() -> None:
    calls = joined_calls(openlit("a, b", "", '{"x": 1}, {"y": 2}'))
    assert calls is not None and [c.call_id for c in calls] == [None, None]


def test_joined_arguments_that_are_not_json_values_are_not_read() -> None:
    assert joined_calls(openlit("a", "call_1", "{not json")) is None
    assert joined_calls(openlit("a, b", "c1, c2", '{"x": 1} {"y": 2}')) is None


def test_a_tool_output_object_gives_the_value_it_wraps() -> None:
    wrapped = {
        "blocks": [{"text": "{'ok': True}"}],
        "tool_name": "lookup",
        "raw_input": {"kwargs": {"id": 1}},
        "raw_output": {"ok": True},
        "is_error": False,
    }
    assert tool_payload(wrapped) == {"ok": True}
    assert tool_payload({**wrapped, "raw_output": None}) == {"ok": True}  # its text blocks
    assert tool_payload({"raw_output": 1}) == {"raw_output": 1}  # not marked: a value


def test_a_dumped_langchain_tool_message_gives_its_content() -> None:
    dumped = {
        "type": "tool",
        "data": {"content": '{"refund_id": "R-1"}', "tool_call_id": "call_9", "status": "ok"},
    }
    assert tool_payload(dumped) == {"refund_id": "R-1"}
    listed = messages.read({"messages": [{"type": "ai", "data": {"content": "Done."}}]})
    assert [(m.role, m.text) for m in listed] == [(messages.ASSISTANT, "Done.")]


class _Span:
    def __init__(self, attributes: dict[str, Any]) -> None:
        self.attributes = attributes
        self.events: list[Any] = []


def test_an_output_that_is_a_repr_cut_to_length_is_no_reply() -> None:
    cut = "StopEvent(result=AgentOutput(response=ChatMessage(role='assistant', text='Your re..."
    assert spans.agent_reply(_Span({"output.value": cut})) is None
    said = "Sure (one moment)..."  # an ellipsis in prose is a reply
    assert spans.agent_reply(_Span({"output.value": said})) == said


def test_the_task_an_agent_was_run_with_is_the_users_input() -> None:
    recorded = json.dumps({"task": "Refund order ORD-1", "stream": False, "images": None})
    assert content.input_text(recorded) == "Refund order ORD-1"
