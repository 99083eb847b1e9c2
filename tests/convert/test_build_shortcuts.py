"""The builder's shortcuts (``convert.build``, ``convert.calls``) skip work, never change a result:
the call order is the full key's, each trace's attributes are its own resource's and labels."""

from __future__ import annotations

from typing import Any

import pytest

from tooltrail.convert import build, calls, to_eval_trace
from tooltrail.convert.engine import PythonEngine
from tooltrail.otlp.decode.span import Span

MS = 1_000_000
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}


def _span(
    trace: str, span_id: str, parent: str, name: str, start: int, attrs: dict[str, Any],
    resource: dict[str, Any],
) -> Span:  # fmt: skip
    return Span(
        trace_id=trace,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        start_ns=start * MS,
        end_ns=(start + 5) * MS,
        attributes=attrs,
        events=[],
        resource=resource,
    )


def _tool(name: str, call_id: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": "{}",
        "gen_ai.tool.call.id": call_id,
    }


def _agent_trace(trace: str, starts: list[int], resource: dict[str, Any]) -> list[Span]:
    """An agent span and one tool span per start (tools ``t0``, ``t1``...), sent in reverse
    (a parent ends, and is sent, after its children)."""
    spans = [_span(trace, "a000000000000001", "", "invoke_agent shop", 0, AGENT, resource)]
    for i, start in enumerate(starts):
        span_id = f"b00000000000000{i}"
        attrs = _tool(f"t{i}", f"call-{i}")
        spans.append(
            _span(trace, span_id, "a000000000000001", f"execute_tool t{i}", start, attrs, resource)
        )
    return spans[::-1]


@pytest.fixture(autouse=True)
def python_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests watch the Python builder's steps: the core's builder is not asked."""
    monkeypatch.setattr(build, "engine", PythonEngine)


@pytest.fixture
def key_calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The records ``order_key`` was asked a key for."""
    seen: list[Any] = []
    full_key = calls.order_key

    def counting(record: Any) -> Any:
        seen.append(record)
        return full_key(record)

    monkeypatch.setattr(calls, "order_key", counting)
    monkeypatch.setattr(build, "order_key", counting)  # (the builder's own name for it)
    return seen


def test_calls_that_start_one_after_another_are_not_sorted_again(key_calls: list[Any]) -> None:
    """Sent in start order, with no tie: the start order is the call order."""
    trace = to_eval_trace(_agent_trace("a" * 32, [30, 20, 10], {"service.name": "shop"}))
    assert [c.name for c in trace.tool_calls] == ["t2", "t1", "t0"]
    assert key_calls == []  # the start order was enough: no key of nine fields made


def test_calls_out_of_start_order_are_sorted(key_calls: list[Any]) -> None:
    trace = to_eval_trace(_agent_trace("a" * 32, [30, 10, 20], {"service.name": "shop"}))
    assert [c.name for c in trace.tool_calls] == ["t1", "t2", "t0"]
    assert len(key_calls) == 3


def test_calls_that_start_at_the_same_time_are_ordered_by_the_full_key(
    key_calls: list[Any],
) -> None:
    """A tie on the start (same start, same end): the full key decides, by span id."""
    trace = to_eval_trace(_agent_trace("b" * 32, [10, 10, 5], {"service.name": "shop"}))
    assert [c.name for c in trace.tool_calls] == ["t2", "t0", "t1"]
    assert len(key_calls) == 3


def test_traces_of_one_resource_keep_their_own_labels() -> None:
    """Two traces share a resource object (as the spans of one ResourceSpans do): each one's
    attributes are the resource's and its own root's labels, never the other's."""
    resource = {"service.name": "shop", "deployment": "eu", "process.pid": 7, "tags": ["x"]}
    first = _agent_trace("c" * 32, [10], resource)
    first[-1].attributes = {**AGENT, "tenant": "acme"}
    second = _agent_trace("d" * 32, [10], resource)
    other = {"service.name": "bank"}
    third = _agent_trace("e" * 32, [10], other)
    built = [to_eval_trace(spans) for spans in (first, second, third, second)]
    attributes = [trace.metadata["attributes"] for trace in built]
    shared = {"service.name": "shop", "deployment": "eu", "process.pid": 7}
    labels = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"}
    assert attributes[0] == {**shared, **labels, "tenant": "acme"}
    assert attributes[1] == {**shared, **labels}
    assert attributes[2] == {"service.name": "bank", **labels}
    assert attributes[3] == attributes[1]
    assert resource == {"service.name": "shop", "deployment": "eu", "process.pid": 7, "tags": ["x"]}


def test_labels_of_agents_after_the_root_agent_win_in_their_order() -> None:
    """The root agent's labels, then each agent's in start order: a later agent's value of a
    key wins, and the keys keep the order they were first set in."""
    resource = {"service.name": "shop"}
    spans = _agent_trace("f" * 32, [10], resource)
    spans[-1].attributes = {**AGENT, "tier": "root", "region": "eu"}
    inner = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "clerk", "tier": "sub"}
    spans.append(_span("f" * 32, "c000000000000009", "a000000000000001", "invoke_agent clerk",
                       3, inner, resource))  # fmt: skip
    attributes = to_eval_trace(spans).metadata["attributes"]
    assert list(attributes.items()) == [
        ("service.name", "shop"),
        ("gen_ai.operation.name", "invoke_agent"),
        ("gen_ai.agent.name", "clerk"),
        ("tier", "sub"),
        ("region", "eu"),
    ]


def _asked(trace: str, span_id: str, start: int, tool: str, call_id: str) -> Span:
    """A chat span whose response asked for one call of ``tool``, with ``{"n": 1}``."""
    output = (
        '[{"role": "assistant", "parts": [{"type": "tool_call", '
        f'"id": "{call_id}", "name": "{tool}", "arguments": {{"n": 1}}}}]}}]'
    )
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}
    return _span(trace, span_id, "a000000000000001", "chat m", start, attrs, {})


def _run(trace: str, order: list[int]) -> list[Span]:
    """Three model responses, each asking for a call of a tool that then ran (its span records
    no arguments: the model's are taken), sent in ``order`` of their start, agent last."""
    steps = []
    for i in range(3):
        steps.append(_asked(trace, f"c00000000000000{i}", 10 * i + 1, f"t{i}", f"call-{i}"))
        ran = _tool(f"t{i}", f"call-{i}")
        del ran["gen_ai.tool.call.arguments"]
        steps.append(_span(trace, f"b00000000000000{i}", "a000000000000001", f"execute_tool t{i}",
                           10 * i + 5, ran, {}))  # fmt: skip
    agent = _span(trace, "a000000000000001", "", "invoke_agent shop", 0, AGENT, {})
    return [steps[i] for i in order] + [agent]


@pytest.fixture
def join_keys(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What the model join was asked sort keys for (model spans, then calls)."""
    seen: list[Any] = []
    for name in ("_MODEL_ORDER", "_RECORD_ORDER"):
        key = getattr(calls, name)
        monkeypatch.setattr(calls, name, lambda item, key=key: seen.append(item) or key(item))
    return seen


def test_the_model_join_does_not_sort_what_arrives_in_start_order(join_keys: list[Any]) -> None:
    trace = to_eval_trace(_run("1" * 32, [0, 1, 2, 3, 4, 5]))
    assert [(c.name, c.args, c.call_id) for c in trace.tool_calls] == [
        ("t0", {"n": 1}, "call-0"), ("t1", {"n": 1}, "call-1"), ("t2", {"n": 1}, "call-2"),
    ]  # fmt: skip
    assert join_keys == []


def test_the_model_join_sorts_what_arrives_out_of_start_order(join_keys: list[Any]) -> None:
    trace = to_eval_trace(_run("2" * 32, [5, 4, 3, 2, 1, 0]))
    assert [(c.name, c.args, c.call_id) for c in trace.tool_calls] == [
        ("t0", {"n": 1}, "call-0"), ("t1", {"n": 1}, "call-1"), ("t2", {"n": 1}, "call-2"),
    ]  # fmt: skip
    assert len(join_keys) == 6  # three model spans, three calls
