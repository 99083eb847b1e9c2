"""The ``tool`` decorator / context manager emits OpenTelemetry GenAI execute_tool spans."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from tooltrail.live import ToolArgsProcessor, tool
from tooltrail.pipeline.adapt import otlp_spans


@pytest.fixture
def spans() -> Any:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    yield tracer, exporter.get_finished_spans


def only(finished: Any) -> ReadableSpan:
    (span,) = finished()
    return span


def test_a_decorated_function_records_a_genai_execute_tool_span(spans: Any) -> None:
    tracer, finished = spans

    @tool(tracer=tracer)
    def lookup_order(order_id: str) -> dict[str, str]:
        """Find an order by id.

        More text.
        """
        return {"status": "delivered"}

    assert lookup_order("ORD-7731") == {"status": "delivered"}
    span = only(finished)
    assert span.name == "execute_tool lookup_order"
    assert dict(span.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Find an order by id.",
        "gen_ai.tool.call.arguments": '{"order_id":"ORD-7731"}',
    }
    assert span.status.status_code is StatusCode.UNSET


def test_positional_arguments_are_bound_to_their_names_and_defaults_left_out(spans: Any) -> None:
    tracer, finished = spans

    @tool("issue_refund", tracer=tracer)
    def refund(
        order_id: str, amount: float, currency: str = "USD", *notes: str, **extra: Any
    ) -> None:
        return None

    refund("ORD-7731", 49.99, "EUR", "first", "second", reason="late")
    args = json.loads(only(finished).attributes["gen_ai.tool.call.arguments"])
    assert args == {
        "order_id": "ORD-7731",
        "amount": 49.99,
        "currency": "EUR",
        "notes": ["first", "second"],
        "reason": "late",
    }


def test_methods_leave_self_out_of_the_arguments(spans: Any) -> None:
    tracer, finished = spans

    class Tools:
        @tool(tracer=tracer)
        def verify_identity(self, customer_id: str) -> bool:
            return True

    Tools().verify_identity("C-118")
    assert json.loads(only(finished).attributes["gen_ai.tool.call.arguments"]) == {
        "customer_id": "C-118"
    }


def test_results_are_recorded_only_when_asked(spans: Any) -> None:
    tracer, finished = spans

    @tool(tracer=tracer)
    def quiet() -> dict[str, int]:
        return {"n": 1}

    @tool(tracer=tracer, record_result=True)
    def loud() -> dict[str, int]:
        return {"n": 1}

    @tool(tracer=tracer, record_result=True)
    def text() -> str:
        return "done"

    quiet(), loud(), text()
    results = [s.attributes.get("gen_ai.tool.call.result") for s in finished()]
    assert results == [None, '{"n":1}', "done"]


def test_the_environment_turns_result_recording_on(
    spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tracer, finished = spans
    monkeypatch.setenv("TOOLTRAIL_RECORD_RESULTS", "true")

    @tool(tracer=tracer)
    def answer() -> int:
        return 42

    answer()
    assert only(finished).attributes["gen_ai.tool.call.result"] == "42"


def test_a_failing_tool_records_error_status_type_and_exception_then_reraises(spans: Any) -> None:
    tracer, finished = spans
    boom = LookupError("no such order")

    @tool(tracer=tracer)
    def lookup_order(order_id: str) -> None:
        raise boom

    with pytest.raises(LookupError) as raised:
        lookup_order("ORD-0")
    assert raised.value is boom
    span = only(finished)
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "LookupError: no such order"
    assert span.attributes["error.type"] == "LookupError"
    assert [e.name for e in span.events] == ["exception"]
    assert span.events[0].attributes["exception.message"] == "no such order"


def test_async_tools_are_spanned_inside_the_current_span(spans: Any) -> None:
    tracer, finished = spans

    @tool(tracer=tracer, record_result=True)
    async def web_search(query: str) -> list[str]:
        await asyncio.sleep(0)
        return ["policy"]

    async def agent() -> list[str]:
        with tracer.start_as_current_span("invoke_agent refund_agent"):
            return await web_search(query="refund policy")

    assert asyncio.run(agent()) == ["policy"]
    tool_span, agent_span = finished()
    assert tool_span.name == "execute_tool web_search"
    assert tool_span.parent.span_id == agent_span.context.span_id
    assert tool_span.attributes["gen_ai.tool.call.arguments"] == '{"query":"refund policy"}'
    assert tool_span.attributes["gen_ai.tool.call.result"] == '["policy"]'


def test_async_failures_are_recorded_too(spans: Any) -> None:
    tracer, finished = spans

    @tool(tracer=tracer)
    async def flaky() -> None:
        raise TimeoutError("slow")

    with pytest.raises(TimeoutError):
        asyncio.run(flaky())
    assert only(finished).attributes["error.type"] == "TimeoutError"


def test_the_context_manager_records_one_call_with_its_id_and_result(spans: Any) -> None:
    tracer, finished = spans
    with tool(
        "web_search",
        {"query": "refund policy"},
        call_id="call_1",
        record_result=True,
        tracer=tracer,
    ) as call:
        with tracer.start_as_current_span("http GET"):
            pass
        call.set_result({"hits": 3})
    child, span = finished()
    assert child.parent.span_id == span.context.span_id
    assert span.attributes["gen_ai.tool.call.id"] == "call_1"
    assert span.attributes["gen_ai.tool.call.arguments"] == '{"query":"refund policy"}'
    assert span.attributes["gen_ai.tool.call.result"] == '{"hits":3}'


def test_the_async_context_manager_works_the_same(spans: Any) -> None:
    tracer, finished = spans

    async def run() -> None:
        async with tool("lookup_order", {"order_id": "ORD-1"}, tracer=tracer):
            await asyncio.sleep(0)

    asyncio.run(run())
    assert only(finished).name == "execute_tool lookup_order"


def test_arguments_json_cannot_hold_are_recorded_as_text(spans: Any) -> None:
    tracer, finished = spans

    class Customer:
        def __str__(self) -> str:
            return "Customer(C-118)"

    @tool(tracer=tracer)
    def verify(customer: Any, tags: set[str], big: int) -> None:
        return None

    verify(Customer(), {"b", "a"}, 2**70)
    assert json.loads(only(finished).attributes["gen_ai.tool.call.arguments"]) == {
        "customer": "Customer(C-118)",
        "tags": ["a", "b"],
        "big": 2**70,
    }


def test_wrapping_keeps_the_functions_name_and_docstring(spans: Any) -> None:
    tracer, _ = spans

    @tool(tracer=tracer)
    def lookup_order(order_id: str) -> None:
        """Doc."""

    assert lookup_order.__name__ == "lookup_order" and lookup_order.__doc__ == "Doc."


def test_generators_are_refused() -> None:
    with pytest.raises(TypeError, match="generator"):

        @tool
        def stream() -> Any:
            yield 1


def test_decorator_spans_convert_to_the_same_calls() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(ToolArgsProcessor(SimpleSpanProcessor(exporter)))
    tracer = provider.get_tracer("test")

    @tool(tracer=tracer)
    def issue_refund(order_id: str, amount: float) -> None:
        return None

    with tracer.start_as_current_span(
        "invoke_agent refund_agent", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        issue_refund("ORD-7731", 49.99)

    from tooltrail.convert import to_eval_trace

    eval_trace = to_eval_trace(otlp_spans(exporter.get_finished_spans()))
    assert [(c.name, c.args) for c in eval_trace.tool_calls] == [
        ("issue_refund", {"order_id": "ORD-7731", "amount": 49.99})
    ]
