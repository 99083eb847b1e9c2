"""Record LlamaIndex agents (``FunctionAgent``) instrumented by OpenInference
(``openinference-instrumentation-llama-index``).

Run in the virtualenv of ``requirements-llamaindex.txt``::

    cd recordings && /tmp/rec-llamaindex/bin/python record_llamaindex.py

Variant ``llamaindex-openinference``: ``LlamaIndexInstrumentor().instrument(tracer_provider=...)``
on the harness's global provider with the default ``TraceConfig`` (no ``OPENINFERENCE_*``
variable set: inputs, outputs and messages are all captured, OpenInference's documented
defaults). The instrumentor registers a span handler and an event handler on LlamaIndex's
instrumentation dispatcher, so every dispatcher span (workflow steps, LLM calls, tool calls)
becomes an OTel span.

The agent is ``llama_index.core.agent.workflow.FunctionAgent`` (an ``AgentWorkflow`` agent) on
``llama_index.llms.openai.OpenAI(model="gpt-4o-mini", api_base=<scripted model>)`` (a model name
the class knows as function-calling; the scripted server ignores it), with the ToolBox functions
wrapped by ``FunctionTool.from_defaults(fn=...)``. The agent's defaults are kept: streaming on
(``astream_chat_with_tools``, Chat Completions with ``stream: true``), parallel tool calls
allowed. Each turn is ``await agent.run(user_msg=..., ctx=ctx)``; the two turns of
``e_two_turns`` share one ``Context(agent)`` (LlamaIndex's documented way to keep chat history
between runs). A failing tool's exception is caught by the agent (``BaseWorkflowAgent._call_tool``)
and sent to the model as the tool message ``str(exception)``.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import ScriptedModel  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "llamaindex"
VARIANT = "llamaindex-openinference"
PACKAGES = (
    "llama-index",
    "llama_index",
    "openinference-",
    "openai",
    "opentelemetry-",
    "protobuf",
    "pydantic",
)
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools."
MODEL_NAME = "gpt-4o-mini"

#: Settings read from the environment; cleared so the caller's shell can't leak in.
_SETTING_VARS = tuple(name for name in os.environ if name.startswith(("OPENINFERENCE_", "OPENAI_")))


# ---------------------------------------------------------------------------------------------
# raw-file checks (OTLP/JSON as written, never tooltrail)


def _spans_json(folder: Path, scenario: str) -> list[dict]:
    spans = []
    for line in (folder / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
    spans.sort(key=lambda s: int(s["startTimeUnixNano"]))
    return spans


def _attrs(item: dict) -> dict[str, Any]:
    out = {}
    for kv in item.get("attributes", []):
        value = kv.get("value", {})
        out[kv["key"]] = next(iter(value.values()), None) if value else None
    return out


def _json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _repr(text: Any) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


_TOOL_ID = re.compile(r"tool_id='([^']*)'")


def _check_holds(folder: Path, scenario: Scenario, t: dict) -> tuple[dict[str, bool], dict]:
    """What the raw file holds, each fact looked for where the notes say it is."""
    spans = _spans_json(folder, scenario.name)
    typed = [(s, _attrs(s)) for s in spans]
    by_id = {s["spanId"]: (s, a) for s, a in typed}
    tools = [(s, a) for s, a in typed if a.get("openinference.span.kind") == "TOOL"]
    # the LLM spans that carry the model's answer (the _prepare_chat_with_tools LLM spans don't)
    answers = [
        a
        for _, a in typed
        if a.get("openinference.span.kind") == "LLM" and "llm.output_messages.0.message.role" in a
    ]
    llms = [a for _, a in typed if a.get("openinference.span.kind") == "LLM"]
    kinds = sorted({a.get("openinference.span.kind") for _, a in typed})

    # calls: one TOOL span per execution ('FunctionTool.acall'), tool.name
    calls = [a.get("tool.name") for _, a in tools] == [c["tool"] for c in t["calls"]]

    # args: TOOL span input.value = JSON text {"kwargs": {...}} (bound arguments of acall);
    # tool.parameters is the JSON schema, not the arguments
    args = len(tools) == len(t["calls"]) and all(
        (_json(a.get("input.value")) or {}).get("kwargs") == c["args"]
        for (_, a), c in zip(tools, t["calls"], strict=False)
    )
    schema_not_args = all(
        (_json(a.get("tool.parameters")) or {}).get("type") == "object" for _, a in tools
    )

    # results: TOOL span output.value = JSON of the ToolOutput (raw_output = the returned
    # value; blocks[0].text = str(result), what the model is sent); failed: status ERROR,
    # description 'ToolFailed: <text>', an 'exception' event, no output.value
    def _result_ok(span: dict, a: dict, c: dict) -> bool:
        status = span.get("status", {})
        if c["status"] == "error":
            events = [e for e in span.get("events", []) if e.get("name") == "exception"]
            return (
                status.get("code") == 2
                and status.get("message", "").endswith(c["error"])
                and "output.value" not in a
                and len(events) == 1
                and _attrs(events[0]).get("exception.message") == c["error"]
            )
        out = _json(a.get("output.value")) or {}
        return (
            status.get("code") == 1
            and out.get("raw_output") == c["result"]
            and _repr(out["blocks"][0]["text"]) == c["result"]
            and out.get("is_error") is False
        )

    results = len(tools) == len(t["calls"]) and all(
        _result_ok(s, a, c) for (s, a), c in zip(tools, t["calls"], strict=False)
    )

    # call ids: the TOOL span's parent CHAIN span 'BaseWorkflowAgent.call_tool' input.value =
    # JSON text {"ctx": ..., "ev": "ToolCall(tool_name=..., tool_kwargs={...}, tool_id='...')"}
    parent_ids = []
    for s, _ in tools:
        parent = by_id.get(s.get("parentSpanId", ""))
        ev = (_json(parent[1].get("input.value")) or {}).get("ev", "") if parent else ""
        m = _TOOL_ID.search(ev or "")
        parent_ids.append(m.group(1) if m else None)
    call_ids_on_parent = parent_ids == [c["call_id"] for c in t["calls"]]

    # and on the answering LLM spans: llm.output_messages.0.message.tool_calls.<j>.tool_call.*
    emitted = []
    for a in answers:
        j = 0
        prefix = "llm.output_messages.0.message.tool_calls"
        while f"{prefix}.{j}.tool_call.id" in a:
            emitted.append(
                (
                    a[f"{prefix}.{j}.tool_call.function.name"],
                    a[f"{prefix}.{j}.tool_call.id"],
                    _json(a[f"{prefix}.{j}.tool_call.function.arguments"]),
                )
            )
            j += 1
    call_ids_on_llm = emitted == [(c["tool"], c["call_id"], c["args"]) for c in t["calls"]]

    # user: only in the LLM spans' llm.input_messages.<i>.message.role='user' / .content
    # (the root CHAIN span's input.value has no user text)
    user_messages = set()
    for a in llms:
        for key, value in a.items():
            content = key.replace(".message.role", ".message.content")
            if (
                key.startswith("llm.input_messages.")
                and key.endswith(".message.role")
                and value == "user"
                and content in a
            ):
                user_messages.add(a[content])
    user = all(x["user"] in user_messages for x in t["turns"])
    roots = [a for s, a in typed if not s.get("parentSpanId")]
    user_in_root = all(
        json.dumps(x["user"])[1:-1] in (a.get("input.value") or "")
        for x, a in zip(t["turns"], roots, strict=False)
    )

    # reply: the last answering LLM span of each turn, llm.output_messages.0.message.content
    # (and output.value 'assistant: <text>'); the root span's output.value is a truncated
    # summary 'StopEvent(result=AgentOutput(...'
    replies = {a.get("llm.output_messages.0.message.content") for a in answers}
    reply = all(x["reply"] in replies for x in t["turns"])
    reply_whole_in_root = all(
        x["reply"] in (a.get("output.value") or "") for x, a in zip(t["turns"], roots, strict=False)
    )

    detail = {
        "span_kinds": kinds,
        "traces": len({s["traceId"] for s, _ in typed}),
        "call_ids_on_call_tool_parent": call_ids_on_parent,
        "call_ids_on_llm_spans": call_ids_on_llm,
        "tool_parameters_is_schema": schema_not_args,
        "user_in_root_span": user_in_root,
        "reply_whole_in_root_span": reply_whole_in_root,
    }
    holds = {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}
    return holds, detail


# ---------------------------------------------------------------------------------------------
# notes (checked facts; the checks above look where these say)

NOTES = [
    "settings: LlamaIndexInstrumentor().instrument(tracer_provider=...) with TraceConfig "
    "defaults (no OPENINFERENCE_* variable set); the legacy callback handler is not used",
    "spans: one trace per agent.run (so e_two_turns has two traces, not linked by any "
    "session id); all spans OTel kind INTERNAL; root 'FunctionAgent.run' "
    "(openinference.span.kind=CHAIN, NOT AGENT: there is no AGENT span at all) > one CHAIN span "
    "per workflow step: 'BaseWorkflowAgent.init_run', '.setup_agent', '.run_agent_step', "
    "'.parse_agent_output', '.call_tool', '.aggregate_tool_results'; under each run_agent_step "
    "TWO spans of kind LLM: 'OpenAI._prepare_chat_with_tools' (builds the request, no model "
    "output, no llm.input_messages; input.value/output.value JSON of reprs) and "
    "'OpenAI.astream_chat' (the model request: llm.input_messages.*, llm.output_messages.*, "
    "llm.tools.*, llm.finish_reason, event 'First Token Stream Event'); under each "
    "'BaseWorkflowAgent.call_tool' (CHAIN) one 'FunctionTool.acall' (TOOL)",
    "calls: TOOL span 'FunctionTool.acall' (the span name is the class method, NOT the tool "
    "name); tool.name = the function name, tool.description = signature + docstring; "
    "tool.parameters = the JSON schema of the tool's parameters "
    '(\'{"properties": {"order_id": {"title": "Order Id", "type": "string"}}, "required": '
    '["order_id"], "type": "object"}\'), NOT the call\'s arguments',
    "args: TOOL span input.value = JSON text of acall's bound arguments, the call's arguments "
    'under "kwargs": \'{"kwargs": {"order_id": "ORD-7731", "amount": 49.99}}\' '
    "(input.mime_type application/json); also the parent call_tool CHAIN span's input.value "
    "'ev' (Python repr tool_kwargs={...}) and the LLM spans' tool_call.function.arguments",
    "call ids: NOT on the TOOL span; on its parent CHAIN span 'BaseWorkflowAgent.call_tool' "
    'input.value = JSON text {"ctx": "<...Context object at 0x...>", "ev": '
    "\"ToolCall(tool_name='lookup_order', tool_kwargs={'order_id': 'ORD-7731'}, "
    "tool_id='call_a1')\"} (the event as a Python repr inside JSON) and its output.value "
    "(a ToolCallResult repr, text/plain, cut at 200 characters); on the astream_chat LLM spans "
    "llm.output_messages.0.message.tool_calls.<j>.tool_call.id / .function.name / "
    ".function.arguments (the model's JSON text), and the next request's "
    "llm.input_messages.<i>.message.tool_calls.* and role=tool .message.tool_call_id",
    "results: TOOL span output.value = JSON text of the ToolOutput model "
    '(\'{"blocks":[{"text":"{\\\'order_id\\\': \\\'ORD-7731\\\', ...}"}],"tool_name":'
    '"lookup_order","raw_input":{"args":[],"kwargs":{...}},"raw_output":{...the returned '
    'dict as JSON...},"is_error":false}\'), output.mime_type application/json: the result '
    "itself is raw_output (JSON), blocks[0].text is str(result) (Python repr, what the "
    "model is sent); status OK; the next request's role=tool llm.input_messages.<i>."
    "message.content holds the Python-repr text",
    "error: the failed TOOL span has status ERROR, description 'ToolFailed: payment gateway "
    "timeout, please retry' (exception class name + ': ' + message), an 'exception' event "
    "(exception.type 'harness.scenarios.ToolFailed', exception.message = the text, "
    "exception.stacktrace), and NO output.value; the parent call_tool CHAIN span is status OK "
    "(the agent catches the exception) with output.value ToolCallResult(... text='payment "
    "gateway timeout, please retry' ... is_error=True ...) cut at 200 characters; the model "
    "is sent the bare text as the role=tool message (next request's llm.input_messages)",
    "parallel: g_parallel_calls' two calls are one LLM output (tool_calls.0 and .1); "
    "two call_tool CHAIN spans, each with its TOOL span, run as concurrent workflow steps",
    "user: NOT on the root span (its input.value is JSON of run()'s bound arguments: "
    "init_state (the workflow's config), start_event 'AgentWorkflowStartEvent()' and tags "
    "{instrument_tags: {llamaindex.run_id}}, no user text); the user's message is in the "
    "astream_chat LLM spans' llm.input_messages.<i>.message.role='user' / .message.content "
    "(the last user message of the turn's first request), and in reprs of ChatMessage "
    "(init_run output.value 'AgentInput(input=[ChatMessage(role=<MessageRole.USER: 'user'>, "
    "... TextBlock(block_type='text', text=\"...\")])...', cut at 200 characters)",
    "history: on turn 2 of e_two_turns the LLM spans' llm.input_messages repeat turn 1 "
    "(system, user, assistant tool_calls, tool result, assistant reply) before the new user "
    "message; the assistant messages with tool calls have "
    "llm.input_messages.<i>.message.contents.0.message_content.text = '' (empty text block) "
    "instead of .message.content",
    "reply: the turn's last astream_chat LLM span llm.output_messages.0.message.content "
    "(role assistant) and its output.value 'assistant: <text>' (str(ChatResponse), text/plain "
    "without mime); the root span's output.value is workflows' event summary, cut at 200 "
    "characters, the text cut at ~50 "
    "('StopEvent(result=AgentOutput(response=ChatMessage(role=<MessageRole.ASSISTANT: "
    "'assistant'>, additional_kwargs={}, blocks=[TextBlock(block_type='text', text='Your "
    "refund of $49.99 for order ORD-773...'), output.mime_type text/plain",
    "tool-call model outputs: llm.output_messages.0.message.contents.0.message_content.type="
    "'text' / .text='' (no .message.content) beside the tool_calls; output.value 'assistant: '",
    "model: llm.model_name 'gpt-4o-mini' (the name the client was given), llm.provider / "
    "llm.system 'openai', llm.invocation_parameters JSON; no token counts (streamed, no "
    "usage asked for); llm.tools.<k>.tool.json_schema = JSON text of each tool definition",
    "logs: none (the instrumentation writes spans only)",
]


# ---------------------------------------------------------------------------------------------
# running


async def _run_turns(scenario: Scenario, functions: dict[str, Any], base_url: str) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.tools import FunctionTool
    from llama_index.core.workflow import Context
    from llama_index.llms.openai import OpenAI

    llm = OpenAI(model=MODEL_NAME, api_base=base_url, api_key="k")
    agent = FunctionAgent(
        name="assistant",
        description="Helps customers.",
        tools=[FunctionTool.from_defaults(fn=functions[name]) for name in scenario.tools],
        llm=llm,
        system_prompt=SYSTEM_PROMPT,
    )
    ctx = Context(agent)
    for turn in scenario.turns:
        response = await agent.run(user_msg=turn.user, ctx=ctx)
        expected = turn.steps[-1].text
        if str(response) != expected:
            raise AssertionError(f"{scenario.name}: reply {str(response)!r} != {expected!r}")


def _run_scenario(scenario: Scenario) -> list[Any]:
    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        asyncio.run(_run_turns(scenario, functions, model.base_url))
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
        if not all(r.get("stream") for r in model.requests):
            raise AssertionError(f"{scenario.name}: a request was not streamed")
    return box.executions


def main() -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    telemetry = dump.Telemetry.install(service=VARIANT)
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    config = TraceConfig()
    assert not (config.hide_inputs or config.hide_outputs or config.hide_input_messages)
    assert not config.hide_output_messages
    LlamaIndexInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    folder = dump.RECORDED / VARIANT
    if folder.exists():  # only this script's own variant folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = _run_scenario(scenario)
        spans, logs = telemetry.take()
        holds = {"calls": True, "args": True, "results": True, "user": True, "reply": True}
        t = truth(
            scenario, executions, framework=FRAMEWORK, variant=VARIANT, holds=holds, notes=NOTES
        )
        dump.write(folder, scenario.name, spans, logs, t)
        t["telemetry_holds"], detail = _check_holds(folder, scenario, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{VARIANT}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']} {detail}"
        )
    dump.write_versions(folder, FRAMEWORK, PACKAGES, "recordings/record_llamaindex.py")


if __name__ == "__main__":
    main()
