"""Record LangGraph (the prebuilt ReAct agent) instrumented by OpenInference
(``openinference-instrumentation-langchain``).

Run in the virtualenv of ``requirements-langgraph.txt``::

    cd recordings && /tmp/rec-langgraph/bin/python record_langgraph.py

Variant ``langgraph-openinference``: ``LangChainInstrumentor().instrument(tracer_provider=...,
config=TraceConfig())`` on the harness's global in-memory provider, every ``OPENINFERENCE_*``
variable cleared first, so the TraceConfig is the documented default: nothing hidden (inputs,
outputs, input/output messages all captured).

The agent is ``langgraph.prebuilt.create_react_agent`` (deprecated since LangGraph 1.0 in favour
of ``langchain.agents.create_agent``, still shipped and documented by ``langgraph-prebuilt``) on
``langchain_openai.ChatOpenAI`` (Chat Completions, non-streaming ``invoke``) with ``base_url``
pointed at the scripted model. The ToolBox functions are made LangChain tools with the ``@tool``
decorator (``langchain_core.tools.tool``), given to a ``ToolNode(tools,
handle_tool_errors=True)``: LangGraph's default handler re-raises any exception that is not an
argument-validation error, which would end the run of ``f_tool_error_retry``; with ``True`` the
exception becomes a ``ToolMessage(status="error")`` sent back to the model, as LangGraph
documents. Each turn is one ``agent.invoke({"messages": [user message]}, config)``; the two turns
of ``e_two_turns`` share an ``InMemorySaver`` checkpointer and one ``thread_id`` (LangGraph's
documented short-term memory), so turn 2 sees turn 1's messages.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import Calls, ScriptedModel  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "langgraph"
VARIANT = "langgraph-openinference"
PACKAGES = (
    "langgraph",
    "langchain-",
    "openinference-",
    "openai",
    "opentelemetry-",
    "protobuf",
    "pydantic",
)
PROMPT = "You are a helpful assistant. Use the tools."

#: Settings read from the environment; cleared so the caller's shell can't leak in.
_SETTING_VARS = tuple(
    name
    for name in os.environ
    if name.startswith(("OPENINFERENCE_", "OPENAI_", "LANGCHAIN_", "LANGSMITH_"))
)


# ---------------------------------------------------------------------------------------------
# raw-file checks (OTLP/JSON as written, never tooltrail)


def _spans_json(folder: Path, scenario: str) -> list[list[dict]]:
    """The spans of each trace (one line per trace), each list in start order."""
    traces = []
    for line in (folder / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
        spans = []
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
        spans.sort(key=lambda s: int(s["startTimeUnixNano"]))
        traces.append(spans)
    traces.sort(key=lambda spans: int(spans[0]["startTimeUnixNano"]))
    return traces


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


def _tool_args(a: dict[str, Any], arg_names: list[str]) -> Any:
    """A TOOL span's input.value back to the arguments: the instrumentation writes the bare
    value when the tool has one string argument (``_convert_io``), JSON text otherwise."""
    value = a.get("input.value")
    if len(arg_names) == 1 and a.get("input.mime_type") != "application/json":
        return {arg_names[0]: value}
    return _json(value)


def _check_holds(
    folder: Path, scenario: Scenario, t: dict, arg_names: dict[str, list[str]]
) -> tuple[dict[str, bool], dict]:
    """What the raw file holds, each fact looked for where the notes say it is."""
    traces = _spans_json(folder, scenario.name)
    typed = [(s, _attrs(s)) for spans in traces for s in spans]
    kind = "openinference.span.kind"
    tools = [(s, a) for s, a in typed if a.get(kind) == "TOOL"]
    llms = [a for _, a in typed if a.get(kind) == "LLM"]

    # calls: one TOOL span per execution, named by tool.name (parallel ones may interleave:
    # compare per model response, as a multiset)
    def _order(names: list[str]) -> list[str]:
        return sorted(names)

    calls = _order([a.get("tool.name") for _, a in tools]) == _order(
        [c["tool"] for c in t["calls"]]
    )

    # args + results + status: each TOOL span's parent is a 'tools' node span whose
    # input.value JSON holds the tool call ({"tool_call": {"name", "args", "id", "type"}, ...});
    # that pairs the TOOL span with its call id
    by_span = {s["spanId"]: s for s, _ in typed}
    by_id: dict[str, tuple[dict, dict, dict]] = {}
    for s, a in tools:
        parent = by_span.get(s.get("parentSpanId", ""))
        parent_in = _json(_attrs(parent).get("input.value")) if parent else None
        call = (parent_in or {}).get("tool_call") or {}
        if call.get("id"):
            by_id[call["id"]] = (s, a, call)
    ids_via_parent = sorted(by_id) == sorted(c["call_id"] for c in t["calls"])

    def _args_ok(c: dict) -> bool:
        if c["call_id"] not in by_id:
            return False
        _, a, call = by_id[c["call_id"]]
        return call.get("args") == c["args"] and (_tool_args(a, arg_names[c["tool"]]) == c["args"])

    args = ids_via_parent and all(_args_ok(c) for c in t["calls"])

    def _result_ok(c: dict) -> bool:
        if c["call_id"] not in by_id:
            return False
        s, a, _ = by_id[c["call_id"]]
        if c["status"] == "error":
            # the TOOL span: status ERROR, description repr(exception) + traceback, an
            # 'exception' event with exception.message = the error text, no output.value
            events = [_attrs(e) for e in s.get("events", []) if e.get("name") == "exception"]
            return (
                s.get("status", {}).get("code") == 2
                and c["error"] in s["status"].get("message", "")
                and [e.get("exception.message") for e in events] == [c["error"]]
                and "output.value" not in a
            )
        data = (_json(a.get("output.value")) or {}).get("data") or {}
        return (
            s.get("status", {}).get("code") == 1
            and data.get("status") == "success"
            and data.get("tool_call_id") == c["call_id"]
            and _json(data.get("content")) == c["result"]
        )

    results = ids_via_parent and all(_result_ok(c) for c in t["calls"])

    # call ids on LLM spans: llm.output_messages.0.message.tool_calls.<j>.tool_call.*
    emitted = []
    for a in llms:
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
    call_ids = emitted == [(c["tool"], c["call_id"], c["args"]) for c in t["calls"]]

    # user: the root span (one per invoke) input.value = JSON {"messages": [{role, content}]}
    # as given to invoke; also each LLM span's llm.input_messages.<i> with role user
    roots = [_attrs(spans[0]) for spans in traces]
    root_users = []
    for a in roots:
        messages = (_json(a.get("input.value")) or {}).get("messages") or []
        root_users.append(messages[-1].get("content") if messages else None)
    user_in_root = root_users == [x["user"] for x in t["turns"]]
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
    user_in_llm = all(x["user"] in user_messages for x in t["turns"])
    user = user_in_root and user_in_llm

    # reply: the root span's output.value JSON {"messages": [...]} whose last message is the
    # ai reply ({"type": "ai", "data": {"content": ...}}); also the last LLM span's
    # llm.output_messages.0.message.content
    root_replies = []
    for a in roots:
        messages = (_json(a.get("output.value")) or {}).get("messages") or []
        last = messages[-1] if messages else {}
        root_replies.append((last.get("data") or {}).get("content"))
    reply_in_root = root_replies == [x["reply"] for x in t["turns"]]
    replies = {a.get("llm.output_messages.0.message.content") for a in llms}
    reply_in_llm = all(x["reply"] in replies for x in t["turns"])
    reply = reply_in_root and reply_in_llm

    by_start = [
        c for s, _ in tools for c, (s2, _, _) in by_id.items() if s2["spanId"] == s["spanId"]
    ]
    detail = {
        "tool_spans_in_call_order": by_start == [c["call_id"] for c in t["calls"]],
        "tool_span_call_ids_by_start": by_start,
        "call_ids_on_llm_spans": call_ids,
        "call_ids_via_parent_tools_span": ids_via_parent,
        "user_in_root_span": user_in_root,
        "user_in_llm_input_messages": user_in_llm,
        "reply_in_root_span": reply_in_root,
        "reply_in_llm_output_messages": reply_in_llm,
        "traces": len(traces),
    }
    holds = {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}
    return holds, detail


# ---------------------------------------------------------------------------------------------
# notes (checked facts; the checks above look where these say)

NOTES = [
    "settings: LangChainInstrumentor().instrument(tracer_provider=..., config=TraceConfig()) "
    "with no OPENINFERENCE_* variable set: OpenInference's defaults, nothing hidden",
    "spans: one trace per agent.invoke (one per turn; e_two_turns has two traces). Every "
    "LangChain run is a span (OTel kind INTERNAL), named by the run: root 'LangGraph' "
    "(openinference.span.kind=CHAIN) > per model step 'agent' (AGENT: the instrumentation "
    "makes any run whose name contains 'agent' an AGENT span) > 'call_model', "
    "'RunnableSequence' (> 'Prompt' CHAIN and 'ChatOpenAI' LLM) and the routing function "
    "'should_continue', all CHAIN; per tool call one 'tools' node span (CHAIN, child of the "
    "root) > '<tool name>' (TOOL). Parallel calls (g_parallel_calls): two sibling 'tools' "
    "spans, one per LangGraph Send, each with one TOOL span; ToolNode runs them in a thread "
    "pool, so the TOOL spans' start order need not be the model's call order (the check's "
    "detail 'tool_spans_in_call_order' says how it came out; pair by the call id in the TOOL "
    "span's output.value data.tool_call_id or the parent 'tools' span's tool_call.id)",
    "calls: TOOL span tool.name (also tool.description = docstring); no call id attribute on "
    "the TOOL span; the model's call id is on the LLM span: "
    "llm.output_messages.0.message.tool_calls.<j>.tool_call.id / .function.name / "
    ".function.arguments (the model's JSON text), on later LLM spans' "
    "llm.input_messages.<i>.message.tool_calls.<j>.* and role=tool "
    "llm.input_messages.<i>.message.tool_call_id; also inside the TOOL span's output.value "
    "JSON (data.tool_call_id) and the parent 'tools' span's input.value JSON "
    "(tool_call: {name, args, id, type})",
    "args: TOOL span input.value = the tool's input dict through the instrumentation's "
    "_convert_io: a ONE-ARGUMENT tool whose argument is a string gets the BARE value "
    "(input.value 'ORD-7731', no input.mime_type, the argument's name is not there); "
    'several arguments: JSON text of the dict (\'{"order_id": "ORD-7731", "amount": '
    "49.99}', input.mime_type application/json). The full arguments as an object are in the "
    'parent \'tools\' CHAIN span\'s input.value JSON ({"__type": "tool_call_with_context", '
    '"tool_call": {"name", "args", "id", "type"}, "state": {...}}) and the LLM '
    "spans' tool_call.function.arguments",
    "results: TOOL span output.value = JSON text of the LangChain ToolMessage "
    '({"type": "tool", "data": {"content": <the tool\'s dict as JSON text>, '
    '"tool_call_id": ..., "name": ..., "status": "success", ...}}), '
    "output.mime_type application/json: the result is JSON-in-JSON (data.content); the "
    "'tools' span's output.value wraps the same message in {\"messages\": [...]}; the next LLM "
    "span's role=tool llm.input_messages.<i>.message.content holds the result JSON text",
    "error (f_tool_error_retry): the failed TOOL span has status ERROR (code 2) with "
    "description = LangChain's run.error, i.e. repr(exception) + the traceback "
    "(\"ToolFailed('payment gateway timeout, please retry')Traceback (most recent call "
    "last): ...\"), one 'exception' event (exception.type 'harness.scenarios.ToolFailed', "
    "exception.message = the error text, exception.stacktrace), input.value as usual and NO "
    "output.value; ToolNode(handle_tool_errors=True) then catches it, so its parent 'tools' "
    'span is status OK with output.value {"messages": [ToolMessage with data.status '
    "'error', data.content \"Error: ToolFailed('payment gateway timeout, please retry')\\n "
    "Please fix your mistakes.\"]} (LangGraph's TOOL_CALL_ERROR_TEMPLATE with repr(e)); the "
    "same text is the next LLM span's role=tool message content",
    "user: the root 'LangGraph' span's input.value = JSON text of what invoke got "
    '({"messages": [{"role": "user", "content": ...}]}), and its flattened '
    "llm.input_messages.0.message.role='user' (content only when it came through a message "
    "object: on the inner spans); LLM spans llm.input_messages.<i>.message.role='user' / "
    ".content; the system prompt is llm.input_messages.0.message.role='system' on LLM spans",
    'reply: the root span\'s output.value = JSON text {"messages": [every message of the '
    'thread as {"type", "data"}]} whose last message is {"type": "ai", "data": '
    '{"content": <reply>}}; the last LLM span\'s llm.output_messages.0.message.content; '
    "no output.value holds the reply alone",
    "history: e_two_turns turn 2 runs on the same thread_id (InMemorySaver): its root span's "
    "input.value holds only the new user message, its output.value and every LLM span's "
    "llm.input_messages repeat turn 1 before it; session.id = the thread_id "
    "('thread-<scenario>') on every span of both traces, and metadata = JSON text with "
    "thread_id, langgraph_step, langgraph_node, ...",
    "model: ChatOpenAI span llm.model_name, llm.provider / llm.system 'openai', "
    "llm.token_count.prompt/completion/total, llm.finish_reason, llm.invocation_parameters "
    "(JSON), llm.tools.<k>.tool.json_schema; input.value = JSON of the serialized LangChain "
    'messages ({"lc": 1, "type": "constructor", ...}), output.value = JSON {generations}',
    "logs: none (the instrumentation writes spans only)",
]


# ---------------------------------------------------------------------------------------------
# running


def _arg_names(functions: dict[str, Any]) -> dict[str, list[str]]:
    import inspect

    return {name: list(inspect.signature(f).parameters) for name, f in functions.items()}


def _script_order(scenario: Scenario, executions: list[Any]) -> list[Any]:
    """The tool log put in the script's order: ToolNode runs the calls of one model response
    in a thread pool, so parallel calls log in either order; each is matched by tool and
    arguments (an unscripted execution stays at the end, for ``truth`` to reject)."""
    left = list(executions)
    ordered = []
    for step in scenario.steps():
        for call in step.calls if isinstance(step, Calls) else ():
            match = [e for e in left if e.tool == call.name and e.args == call.args]
            if not match:
                raise AssertionError(f"{scenario.name}: {call.name}({call.args}) never ran")
            left.remove(match[0])
            ordered.append(match[0])
    return ordered + left


def _run_scenario(scenario: Scenario) -> list[Any]:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.prebuilt import ToolNode, create_react_agent

    box = scenario.toolbox()
    functions = box.functions()
    tools = [tool(functions[name]) for name in scenario.tools]
    with ScriptedModel(scenario.steps()) as model:
        llm = ChatOpenAI(model="scripted-model", base_url=model.base_url, api_key="k")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # create_react_agent's LangGraph 1.0 deprecation
            agent = create_react_agent(
                llm,
                ToolNode(tools, handle_tool_errors=True),
                prompt=PROMPT,
                checkpointer=InMemorySaver(),
            )
        config = {"configurable": {"thread_id": f"thread-{scenario.name}"}}
        for turn in scenario.turns:
            state = agent.invoke({"messages": [{"role": "user", "content": turn.user}]}, config)
            got = state["messages"][-1].content
            expected = turn.steps[-1].text
            if got != expected:
                raise AssertionError(f"{scenario.name}: reply {got!r} != {expected!r}")
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return _script_order(scenario, box.executions)


def main() -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    telemetry = dump.Telemetry.install(service=VARIANT)
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.langchain import LangChainInstrumentor

    config = TraceConfig()
    assert not (config.hide_inputs or config.hide_outputs or config.hide_input_messages)
    assert not config.hide_output_messages
    LangChainInstrumentor().instrument(tracer_provider=telemetry.tracer_provider, config=config)
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
        arg_names = _arg_names(scenario.toolbox().functions())
        t["telemetry_holds"], detail = _check_holds(folder, scenario, t, arg_names)
        if any(len(step.calls) > 1 for step in scenario.steps() if isinstance(step, Calls)):
            t["notes"] = [
                *t["notes"],
                "parallel order in this recording: the TOOL spans started in the order of "
                f"call ids {detail['tool_span_call_ids_by_start']} (the model asked for "
                f"{[c['call_id'] for c in t['calls']]})",
            ]
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{VARIANT}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']} {detail}"
        )
    dump.write_versions(folder, FRAMEWORK, PACKAGES, "recordings/record_langgraph.py")


if __name__ == "__main__":
    main()
