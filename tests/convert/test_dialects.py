"""Dialects no corpus folder covers, from hand-written OTLP/JSON files in tests/data/dialects.

Each file follows one row of CONVENTIONS.md ("Where instrumentations put a tool call") and the
attributes that instrumentation documents; each test names them.
"""

from __future__ import annotations

from fixtures import DATA

from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace, ToolCall

DIALECTS = DATA / "dialects"


def _trace(name: str) -> EvalTrace:
    diagnostics: list[object] = []
    traces = list(read_traces(str(DIALECTS / name), diagnostics=diagnostics))
    assert diagnostics == []
    assert len(traces) == 1
    return traces[0]


def _calls(name: str) -> list[ToolCall]:
    return _trace(name).tool_calls


def test_pydantic_ai_v2_running_tool_spans_read_tool_arguments() -> None:
    """Pydantic AI instrumentation v2: span ``running tool`` (and ``execute_tool X`` before v3)
    with ``gen_ai.tool.name``, ``gen_ai.tool.call.id`` and ``tool_arguments``."""
    calls = _calls("pydantic_ai_v2.json")
    assert [(c.name, c.args, c.call_id) for c in calls] == [
        ("lookup_order", {"order_id": "ORD-7731"}, "call_1"),
        ("issue_refund", {"order_id": "ORD-7731", "amount": 49.99}, "call_2"),
    ]
    assert {c.source for c in calls} == {"pydantic-ai:tool_arguments"}


def test_pydantic_ai_v2_agent_run_final_result_is_the_reply() -> None:
    """Pydantic AI v2: the ``agent run`` span carries ``final_result``."""
    trace = _trace("pydantic_ai_v2.json")
    assert trace.output == "Refund issued."
    assert trace.metadata["agent_name"] == "refund_agent"


def test_pydantic_ai_v3_output_functions_and_deferred_calls_are_not_tool_calls() -> None:
    """Pydantic AI v3 / Logfire: ``logfire.msg`` starting ``running output function:`` marks
    an output function, ``pydantic_ai.tool.deferral.name`` a deferred call; neither ran, and
    the model's requests for them (``gen_ai.output.messages``) are not calls either."""
    assert [c.name for c in _calls("pydantic_ai_v3_not_calls.json")] == ["lookup_order"]


def test_adk_legacy_reads_gcp_vertex_agent_tool_call_args() -> None:
    """Google ADK legacy: ``execute_tool {name}`` with ``gen_ai.system = gcp.vertex.agent``,
    arguments in ``gcp.vertex.agent.tool_call_args`` (JSON text)."""
    calls = _calls("adk_legacy.json")
    assert calls[0].name == "lookup_order"
    assert calls[0].args == {"order_id": "ORD-7731"}
    assert calls[0].call_id == "adk-7f3e"
    assert calls[0].source == "adk:gcp.vertex.agent.tool_call_args"


def test_adk_legacy_span_without_operation_name_is_read_by_its_name() -> None:
    """Google ADK legacy spans named ``execute_tool {name}`` may lack gen_ai.operation.name;
    the ``<not specified>`` call id placeholder is not a value."""
    verify = _calls("adk_legacy.json")[1]
    assert (verify.name, verify.args, verify.call_id) == (
        "verify_identity",
        {"customer_id": "C-118"},
        None,
    )


def test_adk_legacy_empty_arguments_and_capture_off_are_told_apart() -> None:
    """ADK legacy writes ``"{}"`` for arguments and response when content capture is off: that
    pair means "not captured" (None); ``"{}"`` arguments with a real response mean ``{}``."""
    calls = {c.name: c for c in _calls("adk_legacy.json")}
    assert calls["get_time"].args == {}
    assert calls["issue_refund"].args is None


def test_adk_merged_tools_wrapper_is_not_a_call() -> None:
    """ADK ``execute_tool (merged)`` (tool name ``(merged tools)``) wraps parallel calls."""
    names = [c.name for c in _calls("adk_legacy.json")]
    assert names == ["lookup_order", "verify_identity", "get_time", "issue_refund"]


def test_openinference_python_repr_input_is_parsed_as_a_literal() -> None:
    """OpenInference (LangChain): ``openinference.span.kind = TOOL``, ``tool.name``,
    ``input.value`` a Python repr of the arguments; ``tool.parameters`` is only the schema."""
    lookup = _calls("openinference.json")[0]
    assert (lookup.name, lookup.args) == ("lookup_order", {"order_id": "ORD-7731"})
    assert lookup.source == "openinference:input.value"


def test_openinference_json_input_keeps_types() -> None:
    """OpenInference: ``input.value`` JSON when ``input.mime_type = application/json``."""
    refund = next(c for c in _calls("openinference.json") if c.name == "issue_refund")
    assert refund.args == {"order_id": "ORD-7731", "amount": 49.99, "notify": True}


def test_openinference_plain_text_input_is_not_an_argument_dict() -> None:
    """OpenInference: a bare string ``input.value`` names no arguments: None, never ``{}``."""
    search = next(c for c in _calls("openinference.json") if c.name == "web_search")
    assert search.args is None


def test_openinference_model_side_call_without_tool_span_is_kept_in_emission_order() -> None:
    """OpenInference ``llm.output_messages.{i}.message.tool_calls.{j}.tool_call.*``: a call the
    model asked for that has no tool span (a client-side tool) is a call of its own."""
    calls = _calls("openinference.json")
    assert [c.name for c in calls] == ["lookup_order", "show_banner", "issue_refund", "web_search"]
    banner = calls[1]
    assert banner.args == {"text": "Working on it"}
    assert banner.call_id == "call_b"
    assert banner.source == "model:llm.output_messages"
    assert calls[0].call_id == "call_a"  # joined to its model-side record by name


def test_openinference_agent_output_value_is_the_reply_and_session_groups() -> None:
    """OpenInference: ``output.value`` of the AGENT span; ``session.id`` names the conversation."""
    trace = _trace("openinference.json")
    assert trace.output == "Your refund has been issued."
    assert trace.metadata["conversation_id"] == "sess-42"


def test_openllmetry_langchain_envelope_inputs_are_the_arguments() -> None:
    """OpenLLMetry LangChain: GenAI attributes plus ``traceloop.span.kind = tool``;
    ``gen_ai.tool.call.arguments`` holds ``{input_str, tags, metadata, inputs, kwargs}`` and the
    real arguments are ``inputs`` (a dict, or a Python repr)."""
    calls = _calls("openllmetry_langchain.json")
    assert [(c.name, c.args) for c in calls] == [
        ("lookup_order", {"order_id": "ORD-7731"}),
        ("issue_refund", {"order_id": "ORD-7731", "amount": 49.99}),
    ]
    assert {c.source for c in calls} == {"openllmetry-langchain:gen_ai.tool.call.arguments"}


def test_openllmetry_langchain_workflow_output_envelope_is_unwrapped() -> None:
    """OpenLLMetry: ``traceloop.entity.output`` of the workflow is ``{"outputs": {...}}``."""
    assert _trace("openllmetry_langchain.json").output == "Refund issued."


def test_vercel_v5_tool_call_input_revision() -> None:
    """Vercel AI SDK v5 (one revision): ``ai.toolCall.input`` instead of ``ai.toolCall.args``;
    ``ai.telemetry.metadata.sessionId`` names the conversation."""
    trace = _trace("vercel_v5_input.json")
    call = trace.tool_calls[0]
    assert (call.name, call.args, call.call_id, call.agent) == (
        "issue_refund",
        {"order_id": "ORD-7731", "amount": 49.99},
        "call_v5",
        "refund_agent",
    )
    assert call.source == "vercel:ai.toolCall.input"
    assert trace.metadata["conversation_id"] == "chat-7"
    assert trace.output == "Refund issued."


def test_mlflow_native_span_type_and_inputs_are_decoded_twice() -> None:
    """MLflow: ``mlflow.spanType = "\\"TOOL\\""``, span name = tool, ``mlflow.spanInputs`` JSON
    (encoded once more in some versions); ``mlflow.spanOutputs`` of the AGENT span."""
    trace = _trace("mlflow_native.json")
    assert [(c.name, c.args, c.agent) for c in trace.tool_calls] == [
        ("lookup_order", {"order_id": "ORD-7731"}, "refund_agent"),
        ("issue_refund", {"order_id": "ORD-7731", "amount": 49.99}, "refund_agent"),
    ]
    assert trace.output == "Refund issued."


def test_langsmith_tool_inputs_repr_is_unwrapped() -> None:
    """LangSmith OTel: ``langsmith.span.kind = tool``, span name = tool, ``gen_ai.prompt`` the
    run inputs ``{"input": "<python repr>"}``; a plain text input stays ``{"input": text}``."""
    trace = _trace("langsmith.json")
    assert [(c.name, c.args) for c in trace.tool_calls] == [
        ("lookup_order", {"order_id": "ORD-7731"}),
        ("web_search", {"input": "refund policy"}),
    ]
    assert trace.metadata["conversation_id"] == "thread-9"


def test_genai_structured_arguments_are_a_dict() -> None:
    """GenAI semconv >= 1.38: ``gen_ai.tool.call.arguments`` may be a structured AnyValue."""
    ship = next(
        c for c in _calls("genai_structured_and_model_side.json") if c.name == "create_shipment"
    )
    assert ship.args == {"items": ["A-1"], "express": True}
    assert ship.source == "genai:gen_ai.tool.call.arguments"


def test_genai_model_side_call_without_tool_span_is_a_call() -> None:
    """GenAI ``gen_ai.output.messages`` parts ``{"type": "tool_call", "name", "id",
    "arguments"}``: ``get_location`` has no tool span (client-side) and is kept, in the order
    the model emitted it; ``create_shipment`` is matched to its tool span by call id."""
    calls = _calls("genai_structured_and_model_side.json")
    assert [c.name for c in calls] == ["get_location", "create_shipment", "notify"]
    location = calls[0]
    assert (location.args, location.call_id, location.source, location.status) == (
        {"precision": "city"},
        "call_loc",
        "model:gen_ai.output.messages",
        "unset",
    )


def test_genai_placeholders_are_not_values_and_name_comes_from_span_name() -> None:
    """GenAI: ``""`` and ``<REDACTED>`` are placeholders; without ``gen_ai.tool.name`` the
    name is the word after ``execute_tool `` in the span name; error status is kept."""
    notify = _calls("genai_structured_and_model_side.json")[2]
    assert (notify.name, notify.args, notify.call_id) == ("notify", None, None)
    assert (notify.status, notify.error) == ("error", "SMTP unavailable")


def test_genai_metadata_case_id_conversation_and_labels() -> None:
    """``tooltrail.case_id`` (resource), ``gen_ai.conversation.id``, agent labels in
    ``metadata["attributes"]`` but never message content."""
    trace = _trace("genai_structured_and_model_side.json")
    meta = trace.metadata
    assert meta["case_id"] == "refund-happy-path"
    assert meta["conversation_id"] == "conv-77"
    assert meta["attributes"]["app.tier"] == "gold"
    assert meta["attributes"]["service.name"] == "genai-agent"
    assert "gen_ai.output.messages" not in meta["attributes"]
    assert trace.output == "Order shipped to your saved address."


def test_mcp_nested_tool_spans_collapse_into_the_outermost() -> None:
    """MCP semconv: framework ``execute_tool X`` -> client ``tools/call X`` -> server
    ``tools/call X`` (``mcp.method.name = tools/call``) are one call: the outermost span,
    with the arguments and the failure only the server span recorded."""
    trace = _trace("mcp_nested.json")
    assert len(trace.tool_calls) == 1
    call = trace.tool_calls[0]
    assert (call.name, call.span_id, call.call_id) == (
        "lookup_order",
        "4c00000000000002",
        "call_mcp_1",
    )
    assert call.args == {"order_id": "ORD-7731"}
    assert (call.status, call.error) == ("error", "order database timeout")
    assert trace.metadata["service.name"] == "mcp-host"
