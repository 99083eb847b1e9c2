"""Shapes the builder's fast paths step around: tool spans of one call nesting in a parent
cycle, and model spans inside another model span with a span no role keeps between them."""

from __future__ import annotations

from typing import Any

from tooltrail.convert import to_eval_trace
from tooltrail.otlp.decode.span import Span

T = "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"
MS = 1_000_000


def _span(span_id: str, parent: str, name: str, start: int, attrs: dict[str, Any]) -> Span:
    return Span(
        trace_id=T,
        span_id=span_id.ljust(16, "0"),
        parent_span_id=parent.ljust(16, "0") if parent else "",
        name=name,
        start_ns=start * MS,
        end_ns=(start + 5) * MS,
        attributes=attrs,
        events=[],
        resource={"service.name": "shop"},
    )


def _tool(span_id: str, parent: str, start: int, **attrs: Any) -> Span:
    keys = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup"}
    return _span(span_id, parent, "execute_tool lookup", start, {**keys, **attrs})


def _model(span_id: str, parent: str, start: int, output: str, **attrs: Any) -> Span:
    keys = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}
    return _span(span_id, parent, "chat m", start, {**keys, **attrs})


def test_tool_spans_of_one_call_in_a_parent_cycle_are_each_a_call() -> None:
    """Each is the other's outer span: neither is the outermost, so each stays a call,
    completed by the other (hostile input: it must neither hang nor lose a call)."""
    spans = [
        _tool("a1", "b1", 10, **{"gen_ai.tool.call.id": "c-a"}),
        _tool("b1", "a1", 20, **{"gen_ai.tool.call.arguments": '{"order": "B"}'}),
    ]
    calls = to_eval_trace(spans).tool_calls
    assert [(c.span_id, c.call_id, c.args) for c in calls] == [
        ("a100000000000000", "c-a", {"order": "B"}),
        ("b100000000000000", "c-a", {"order": "B"}),
    ]


def test_a_model_span_inside_another_with_an_http_span_between_is_one_model_call() -> None:
    """The provider's ``chat`` span under an HTTP span (kept by no role) under the framework's
    ``chat`` span: one model call, whose tokens are the outer span's, and whose request for a
    tool is the inner span's record."""
    asked_outer = '[{"role": "assistant", "parts": [{"type": "tool_call", "name": "lookup", "id": "c-1", "arguments": {"order": "OUTER"}}]}]'  # noqa: E501
    asked_inner = '[{"role": "assistant", "parts": [{"type": "tool_call", "name": "lookup", "id": "c-1", "arguments": {"order": "A"}}]}]'  # noqa: E501
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
    usage_outer = {"gen_ai.usage.input_tokens": 100, "gen_ai.usage.output_tokens": 10}
    usage_inner = {"gen_ai.usage.input_tokens": 7, "gen_ai.usage.output_tokens": 3}
    spans = [
        _span("ag", "", "invoke_agent shop", 0, agent),
        _model("m1", "ag", 1, asked_outer, **usage_outer),
        _span("http", "m1", "POST /v1/chat", 2, {"http.method": "POST"}),
        _model("m2", "http", 3, asked_inner, **usage_inner),
        _tool("t1", "ag", 20, **{"gen_ai.tool.call.id": "c-1"}),
    ]
    trace = to_eval_trace(spans, usage=True)
    (call,) = trace.tool_calls
    assert (call.call_id, call.args) == ("c-1", {"order": "A"})
    assert trace.metadata["llm_calls"] == 1
    assert trace.metadata["token_usage"] == {
        "input_tokens": 100,
        "output_tokens": 10,
        "by_model": {"": {"input_tokens": 100, "output_tokens": 10}},
    }


def test_a_call_under_agent_spans_that_parent_each_other_goes_to_the_running_turn() -> None:
    """An agent and a workflow span parenting each other (hostile input) are no turn: a call
    under them belongs to the turn running when it started, here the root agent's. This
    used to raise ``KeyError``."""
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
    workflow = {"gen_ai.operation.name": "invoke_workflow"}
    spans = [
        _span("root", "", "invoke_agent shop", 0, agent),
        _span("a", "w", "invoke_agent shop", 10, agent),
        _span("w", "a", "invoke_workflow", 11, workflow),
        _tool("t1", "a", 12, **{"gen_ai.tool.call.arguments": "{}"}),
    ]
    trace = to_eval_trace(spans)
    assert [(call.name, call.turn) for call in trace.tool_calls] == [("lookup", 1)]
    assert trace.metadata["turn_count"] == 1
