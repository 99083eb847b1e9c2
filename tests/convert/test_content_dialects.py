"""Content of conventions the corpus does not hold: tool results and each turn's input from
OpenInference, MLflow, LangSmith, ADK legacy and GenAI events, as each format documents them
(CONVENTIONS.md); placeholders and content capture turned off give ``None``."""

from __future__ import annotations

import json
from typing import Any

from tooltrail.convert import to_eval_trace
from tooltrail.model import EvalTrace
from tooltrail.otlp.decode.span import Span, SpanEvent

T1 = "11111111111111111111111111111111"
MS = 1_000_000


def sp(
    span_id: str,
    parent: str,
    name: str,
    start: int,
    attrs: dict[str, Any],
    events: list[SpanEvent] | None = None,
) -> Span:
    return Span(
        trace_id=T1,
        span_id=span_id.ljust(16, "0"),
        parent_span_id=parent.ljust(16, "0") if parent else "",
        name=name,
        start_ns=start * MS,
        end_ns=(start + 10) * MS,
        status_code=0,
        status_message="",
        attributes=attrs,
        events=events or [],
        resource={"service.name": "shop"},
    )


def content(*spans: Span) -> EvalTrace:
    return to_eval_trace(list(spans), content=True)


def test_openinference_tool_output_value_and_agent_input_value() -> None:
    asked = {"messages": [{"role": "user", "content": "Where is my order?"}]}
    trace = content(
        sp("a", "", "agent", 0, {
            "openinference.span.kind": "AGENT",
            "input.value": json.dumps(asked),
            "output.value": "On its way.",
        }),
        sp("t", "a", "lookup", 1, {
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup",
            "input.value": '{"order": "A1"}',
            "output.value": '{"status": "shipped"}',
        }),
    )  # fmt: skip
    (call,) = trace.tool_calls
    assert call.result == {"status": "shipped"}
    assert [(t.input, t.reply) for t in trace.turns] == [("Where is my order?", "On its way.")]


def test_openinference_llm_input_messages_give_the_input_when_the_agent_records_none() -> None:
    trace = content(
        sp("a", "", "agent", 0, {"openinference.span.kind": "AGENT"}),
        sp("m", "a", "llm", 1, {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Be brief.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "Cancel order A1.",
            "llm.output_messages.0.message.content": "Cancelled.",
        }),
    )  # fmt: skip
    assert [(t.input, t.reply) for t in trace.turns] == [("Cancel order A1.", "Cancelled.")]


def test_mlflow_span_outputs_are_decoded_twice() -> None:
    trace = content(
        sp("t", "", "lookup", 0, {
            "mlflow.spanType": '"TOOL"',
            "mlflow.spanInputs": json.dumps(json.dumps({"order": "A1"})),
            "mlflow.spanOutputs": json.dumps(json.dumps({"status": "shipped"})),
        }),
    )  # fmt: skip
    assert trace.tool_calls[0].result == {"status": "shipped"}


def test_langsmith_tool_completion_is_the_result() -> None:
    trace = content(
        sp("t", "", "lookup", 0, {
            "langsmith.span.kind": "tool",
            "gen_ai.prompt": '{"input": "A1"}',
            "gen_ai.completion": '{"output": "shipped"}',
        }),
    )  # fmt: skip
    # the run's outputs envelope is LangSmith's, as ``{"input": ...}`` is around the arguments
    assert trace.tool_calls[0].result == "shipped"


def test_a_tool_message_recorded_as_the_result_gives_its_content() -> None:
    """LangChain tools return a ``ToolMessage``; instrumentations record it as a dict, as
    LangChain's serialization, or as its pydantic ``str()``."""
    for output in (
        '{"type": "tool", "content": "{\\"total\\": 49.99}", "tool_call_id": "c1"}',
        "content='{\"total\": 49.99}' name='lookup' tool_call_id='c1' status='success'",
        '{"lc": 1, "type": "constructor", "id": ["langchain", "schema", "messages", '
        '"ToolMessage"], "kwargs": {"content": "{\\"total\\": 49.99}", "tool_call_id": "c1"}}',
    ):
        trace = content(
            sp("t", "", "lookup", 0, {
                "openinference.span.kind": "TOOL",
                "input.value": '{"order": "A1"}',
                "output.value": output,
            }),
        )  # fmt: skip
        assert trace.tool_calls[0].result == {"total": 49.99}, output


def test_adk_legacy_empty_pair_means_not_captured_but_a_response_is_read() -> None:
    def adk(span_id: str, args: str, response: str) -> Span:
        return sp(span_id, "", "execute_tool lookup", 0, {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.system": "gcp.vertex.agent",
            "gen_ai.tool.name": "lookup",
            "gcp.vertex.agent.tool_call_args": args,
            "gcp.vertex.agent.tool_response": response,
        })  # fmt: skip

    assert content(adk("a", "{}", "{}")).tool_calls[0].result is None
    (call,) = content(adk("b", '{"order": "A1"}', '{"status": "shipped"}')).tool_calls
    assert call.result == {"status": "shipped"}


def test_placeholders_and_content_blocks() -> None:
    def tool(span_id: str, result: str) -> Span:
        return sp(span_id, "", "execute_tool t", 0, {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "t",
            "gen_ai.tool.call.arguments": "{}",
            "gen_ai.tool.call.result": result,
        })  # fmt: skip

    assert content(tool("a", "<REDACTED>")).tool_calls[0].result is None
    assert content(tool("b", "")).tool_calls[0].result is None
    blocks = '[{"type": "text", "text": "plain words"}]'  # an MCP tool's content
    assert content(tool("c", blocks)).tool_calls[0].result == "plain words"
    assert content(tool("d", "42 rows")).tool_calls[0].result == "42 rows"


def test_genai_user_message_event_and_vercel_prompt_give_the_input() -> None:
    strands = content(
        sp("a", "", "invoke_agent x", 0, {"gen_ai.operation.name": "invoke_agent"}, [
            SpanEvent("gen_ai.user.message", 1, {"content": '[{"text": "Hello there"}]'}),
        ]),
    )  # fmt: skip
    assert strands.turns[0].input == "Hello there"
    vercel = content(
        sp("r", "", "ai.generateText", 0, {
            "ai.operationId": "ai.generateText",
            "ai.prompt": '{"prompt": "What time is it?"}',
            "ai.response.text": "Noon.",
        }),
    )  # fmt: skip
    assert [(t.input, t.reply) for t in vercel.turns] == [("What time is it?", "Noon.")]


def test_a_tool_answer_sent_back_as_a_user_message_is_not_the_input() -> None:
    """GenAI puts tool results in ``tool_call_response`` parts, some frameworks in user-role
    messages: only a user message with text is what the user said."""
    messages = [
        {"role": "user", "parts": [{"type": "text", "content": "Refund A1"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "name": "t", "id": "1"}]},
        {"role": "user", "parts": [{"type": "tool_call_response", "id": "1", "response": "ok"}]},
    ]
    trace = content(
        sp("a", "", "invoke_agent x", 0, {"gen_ai.operation.name": "invoke_agent"}),
        sp("m", "a", "chat m", 1, {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(messages),
            "gen_ai.output.messages": json.dumps([
                {"role": "assistant", "parts": [{"type": "text", "content": "Done."}]},
            ]),
        }),
    )  # fmt: skip
    assert [(t.input, t.reply) for t in trace.turns] == [("Refund A1", "Done.")]


def test_each_turn_of_a_trace_gets_its_own_reply() -> None:
    def turn(span_id: str, start: int, said: str, reply: str) -> list[Span]:
        return [
            sp(span_id, "", "invoke_agent x", start, {"gen_ai.operation.name": "invoke_agent"}),
            sp(span_id + "m", span_id, "chat m", start + 1, {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": said}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": reply}]}]
                ),
            }),
        ]  # fmt: skip

    trace = content(*turn("a", 0, "Hi", "Hello!"), *turn("b", 100, "Bye", "Goodbye!"))
    assert [(t.number, t.input, t.reply) for t in trace.turns] == [
        (1, "Hi", "Hello!"),
        (2, "Bye", "Goodbye!"),
    ]
    assert trace.output == "Goodbye!"


def _chat(span_id: str, parent: str, start: int, inputs: list[Any], outputs: list[Any]) -> Span:
    return sp(span_id, parent, "chat m", start, {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
    })  # fmt: skip


def test_a_result_only_the_next_model_request_records_completes_its_call() -> None:
    """A client-side tool (no tool span) and a tool span without a result: the model's next
    request carries their ``tool_call_response`` parts, matched by call id."""
    user = {"role": "user", "parts": [{"type": "text", "content": "Weather in Oslo?"}]}
    asked = {"role": "assistant", "parts": [
        {"type": "tool_call", "id": "c1", "name": "weather", "arguments": {"city": "Oslo"}},
        {"type": "tool_call", "id": "c2", "name": "clock", "arguments": {}},
    ]}  # fmt: skip
    answered = {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": "c1", "response": '{"temp": -3}'},
        {"type": "tool_call_response", "id": "c2", "response": "09:00"},
    ]}  # fmt: skip
    done = {"role": "assistant", "parts": [{"type": "text", "content": "-3 at 09:00."}]}
    spans = [
        sp("a", "", "invoke_agent x", 0, {"gen_ai.operation.name": "invoke_agent"}),
        _chat("m1", "a", 1, [user], [asked]),
        sp("t", "a", "execute_tool weather", 3, {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "weather",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.arguments": '{"city": "Oslo"}',
        }),
        _chat("m2", "a", 5, [user, asked, answered], [done]),
    ]  # fmt: skip
    trace = content(*spans)
    assert [(c.name, c.result) for c in trace.tool_calls] == [
        ("weather", {"temp": -3}),
        ("clock", "09:00"),
    ]
    assert [(t.input, t.reply) for t in trace.turns] == [("Weather in Oslo?", "-3 at 09:00.")]
    assert [c.result for c in to_eval_trace(spans).tool_calls] == [None, None]


def test_prompt_log_records_give_the_input_and_tool_results_only_with_content() -> None:
    from tooltrail.otlp.decode.log_records import LogRecord

    model_id = "m".ljust(16, "0")
    spans = [
        sp("a", "", "invoke_agent x", 0, {"gen_ai.operation.name": "invoke_agent"}),
        sp("m", "a", "chat m", 1, {"gen_ai.operation.name": "chat"}),
        sp("t", "a", "execute_tool lookup", 3, {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup",
            "gen_ai.tool.call.id": "call_9",
            "gen_ai.tool.call.arguments": '{"order": "A1"}',
        }),
    ]  # fmt: skip
    records = [
        LogRecord(trace_id=T1, span_id=model_id, time_ns=2 * MS, event_name="gen_ai.user.message",
                  body={"content": "Where is A1?"}),
        LogRecord(trace_id=T1, span_id="", time_ns=4 * MS, event_name="gen_ai.tool.message",
                  body={"content": '{"status": "shipped"}', "id": "call_9", "role": "tool"}),
    ]  # fmt: skip
    diagnostics: list[Any] = []
    trace = to_eval_trace([*spans, *records], diagnostics, content=True)
    assert diagnostics == []
    assert trace.turns[0].input == "Where is A1?"
    assert trace.tool_calls[0].result == {"status": "shipped"}
    plain = to_eval_trace([*spans, *records], diagnostics)
    assert (plain.turns, plain.tool_calls[0].result, diagnostics) == ([], None, [])


def test_a_reply_given_as_a_plain_content_string_is_read() -> None:
    """GenAI output messages in the form ``{"role": "assistant", "content": "..."}`` (no
    parts), as some instrumentations write them, on an agent span and on a model span."""
    said = json.dumps([{"role": "assistant", "content": "All done."}])
    agent_only = to_eval_trace([
        sp("a", "", "invoke_agent x", 0, {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.output.messages": said,
        }),
    ])  # fmt: skip
    assert agent_only.output == "All done."
    model_only = to_eval_trace([
        sp("a", "", "invoke_agent x", 0, {"gen_ai.operation.name": "invoke_agent"}),
        sp("m", "a", "chat m", 1, {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": said,
        }),
    ])  # fmt: skip
    assert model_only.output == "All done."


def test_a_hand_built_span_gives_its_result_as_the_tool_result_attribute() -> None:
    from tooltrail.model import TOOL_RESULT, EvalSpan

    trace = EvalTrace(
        trace_id="t",
        spans=[EvalSpan(tool_name="lookup", attributes={TOOL_RESULT: {"status": "shipped"}})],
    )
    assert trace.tool_calls[0].result == {"status": "shipped"}
    assert EvalTrace(trace_id="t", spans=[EvalSpan(tool_name="x")]).tool_calls[0].result is None


def test_the_older_genai_prompt_event_gives_the_results_sent_and_the_users_text() -> None:
    """GenAI conventions before 1.28: the request in a ``gen_ai.content.prompt`` event's
    ``gen_ai.prompt`` (OpenLIT, Semantic Kernel), a client-side tool's result among it."""
    history = [
        {"role": "user", "content": "Is A1 shipped?"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "shipped"}'},
    ]
    first = sp("m1", "", "chat", 0, {
        "gen_ai.operation.name": "chat",
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
            {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {}}]}]),
    })  # fmt: skip
    second = sp("m2", "", "chat", 20, {"gen_ai.operation.name": "chat"}, events=[
        SpanEvent("gen_ai.content.prompt", 20 * MS, {"gen_ai.prompt": json.dumps(history)}),
    ])  # fmt: skip
    trace = content(first, second)
    assert [(c.name, c.result) for c in trace.tool_calls] == [("lookup", {"status": "shipped"})]
    assert trace.turns[0].input == "Is A1 shipped?"


def test_adk_gemini_request_gives_the_users_text() -> None:
    """Google ADK's ``call_llm`` span records the Gemini request in ``llm_request``: the
    user's text is its last ``user`` content's text part."""
    request = {"model": "gemini", "contents": [
        {"role": "user", "parts": [{"text": "Hello, who are you?"}]},
    ]}  # fmt: skip
    trace = content(
        sp("m", "", "call_llm", 0, {
            "gen_ai.system": "gcp.vertex.agent",
            "gcp.vertex.agent.llm_request": json.dumps(request),
            "gcp.vertex.agent.llm_response": json.dumps(
                {"content": {"role": "model", "parts": [{"text": "An assistant."}]}}),
        }),
    )  # fmt: skip
    assert [(t.input, t.reply) for t in trace.turns] == [("Hello, who are you?", "An assistant.")]


def test_openllmetry_flattened_completions_give_client_side_calls_and_their_results() -> None:
    """OpenLLMetry's instrumentations before the GenAI messages attributes flatten the
    response into ``gen_ai.completion.{i}.*`` and the request into ``gen_ai.prompt.{i}.*``:
    calls no tool span runs (client-side tools) and the results sent back are read from them
    (``tests/data/dialects/openllmetry_flat_completion.json``, read by both paths in the
    differential test)."""
    from fixtures import DATA

    from tooltrail.convert import read_traces

    path = DATA / "dialects" / "openllmetry_flat_completion.json"
    (trace,) = read_traces([str(path)], content=True)
    assert [(c.name, c.call_id, c.args, c.result, c.source) for c in trace.tool_calls] == [
        ("get_weather", "call_p", {"city": "Paris"}, {"temp_c": 21}, "model:gen_ai.completion"),
        ("get_weather", "call_l", {"city": "London"}, {"temp_c": 14}, "model:gen_ai.completion"),
    ]
    assert trace.output == "Paris 21 C, London 14 C."
    assert trace.turns[0].input == "Weather in Paris and London?"
    (plain,) = read_traces([str(path)])
    assert [c.args for c in plain.tool_calls] == [{"city": "Paris"}, {"city": "London"}]
