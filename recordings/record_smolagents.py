"""Record smolagents (``ToolCallingAgent``) instrumented by OpenInference
(``openinference-instrumentation-smolagents``).

Variant ``smolagents-openinference``: ``SmolagentsInstrumentor().instrument(tracer_provider=...)``
on the global provider of ``harness.dump.Telemetry``, with OpenInference's ``TraceConfig``
defaults (no ``OPENINFERENCE_*`` variable set: inputs, outputs and messages are all captured).

The agent is ``smolagents.ToolCallingAgent`` on ``smolagents.OpenAIModel`` (the class that
``OpenAIServerModel`` now aliases; Chat Completions, non-streaming) with ``api_base`` pointed at
the scripted model. Each ToolBox function is given to smolagents as a ``Tool`` subclass (the
documented way besides ``@tool``, which needs an ``Args:`` docstring section the harness
functions do not have): class name CamelCase + ``Tool`` (``LookupOrderTool``, the style of
smolagents' own ``FinalAnswerTool``), ``name`` = the function name, ``description`` = its
docstring, ``inputs`` from its type hints, ``output_type`` "object", ``forward`` = the function.

A ToolCallingAgent ends its run only when the model calls smolagents' own ``final_answer`` tool
(a text-only model answer is parsed as a tool call and fails). So the script serves every
scripted ``Reply`` as a ``Calls`` step with one ``final_answer`` call whose ``answer`` argument is
the reply text (call id ``call_final_<turn>``); the truth is built from the scenario unchanged,
so ``final_answer`` is not one of its calls (its TOOL span ``FinalAnswerTool`` is in the file).

``e_two_turns``: turn 2 is ``agent.run(..., reset=False)`` on the same agent (smolagents'
documented way to continue a conversation: the memory of turn 1 is kept).

``g_parallel_calls``: smolagents runs the two calls of one model response in a
``ThreadPoolExecutor`` (``max_tool_threads`` default), so they really run concurrently; the tool
log is put back in the script's call order (matched by tool name and arguments) before the
truth is made, since the threads may log in either order.

Run: ``cd recordings && /tmp/rec-smolagents/bin/python record_smolagents.py``
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import Call, Calls, Reply, ScriptedModel, Step  # noqa: E402
from harness.scenarios import SCENARIOS, Execution, Scenario, truth  # noqa: E402

FRAMEWORK = "smolagents"
VARIANT = "smolagents-openinference"
PACKAGES = ("smolagents", "openinference-", "openai", "opentelemetry-", "protobuf", "wrapt")

#: Settings read from the environment; cleared so the caller's shell can't leak in.
for _name in [n for n in os.environ if n.startswith(("OPENINFERENCE_", "OPENAI_"))]:
    os.environ.pop(_name)

_JSON_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean"}


def as_tool(function: Any) -> Any:
    """A smolagents ``Tool`` (a subclass made for this function) running ``function``."""
    from smolagents import Tool

    hints = {k: v for k, v in inspect.get_annotations(function, eval_str=True).items()}
    hints.pop("return", None)
    inputs = {
        name: {"type": _JSON_TYPES[hint], "description": f"The {name.replace('_', ' ')}."}
        for name, hint in hints.items()
    }
    cls = type(
        "".join(part.title() for part in function.__name__.split("_")) + "Tool",
        (Tool,),
        {
            "name": function.__name__,
            "description": inspect.getdoc(function),
            "inputs": inputs,
            "output_type": "object",
            "forward": staticmethod(function),
        },
    )
    return cls()


def final_call(turn: int, text: str) -> Calls:
    return Calls((Call(name="final_answer", args={"answer": text}, call_id=f"call_final_{turn}"),))


def smolagents_steps(scenario: Scenario) -> list[list[Step]]:
    """Per turn, the model responses: every ``Reply`` becomes a ``final_answer`` call."""
    turns = []
    for number, turn in enumerate(scenario.turns, 1):
        turns.append(
            [final_call(number, s.text) if isinstance(s, Reply) else s for s in turn.steps]
        )
    return turns


def in_script_order(scenario: Scenario, executions: list[Execution]) -> list[Execution]:
    """The tool log in the script's call order (parallel calls may log in any order)."""
    pending = list(executions)
    ordered = []
    for step in scenario.steps():
        if not isinstance(step, Calls):
            continue
        for call in step.calls:
            ran = next(
                (e for e in pending if e.tool == call.name and e.args == call.args),
                None,
            )
            if ran is None:
                raise AssertionError(f"{scenario.name}: {call.name}({call.args}) never ran")
            pending.remove(ran)
            ordered.append(ran)
    return ordered + pending


# --- checking what the written file holds (raw OTLP/JSON, never tooltrail) ---------------------


def _value(v: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    return v


def read_spans(path: Path) -> list[dict[str, Any]]:
    spans = []
    for line in path.read_text("utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["attrs"] = {
                        a["key"]: _value(a["value"]) for a in span.get("attributes", [])
                    }
                    spans.append(span)
    spans.sort(key=lambda s: int(s["startTimeUnixNano"]))
    return spans


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


def check(path: Path, record: dict[str, Any]) -> tuple[dict[str, bool], dict[str, Any]]:
    """What the raw file holds, each fact looked for where the notes say it is."""
    spans = read_spans(path)
    tools = [
        s
        for s in spans
        if s["attrs"].get("openinference.span.kind") == "TOOL"
        and s["attrs"].get("tool.name") != "final_answer"
    ]
    llms = [s["attrs"] for s in spans if s["attrs"].get("openinference.span.kind") == "LLM"]
    agents = [s for s in spans if s["attrs"].get("openinference.span.kind") == "AGENT"]
    calls = record["calls"]

    # calls: one TOOL span per execution, named by tool.name (parallel ones in either order,
    # compared within their group as a set of (name, args))
    def key(name: Any, args: Any) -> str:
        return json.dumps([name, args], sort_keys=True)

    got = sorted(key(s["attrs"].get("tool.name"), None) for s in tools)
    names = got == sorted(key(c["tool"], None) for c in calls)
    # args: the TOOL span's input.value, JSON text of Tool.__call__'s bound arguments
    # {"args": [], "sanitize_inputs_outputs": true, "kwargs": {...}}
    got_args = sorted(
        key(s["attrs"].get("tool.name"), (_json(s["attrs"].get("input.value")) or {}).get("kwargs"))
        for s in tools
    )
    args = names and got_args == sorted(key(c["tool"], c["args"]) for c in calls)

    # results: output.value JSON (output.mime_type application/json); a failed call's TOOL span
    # has status ERROR, an 'exception' event with the message, no output.value
    def result_ok(span: dict[str, Any], c: dict[str, Any]) -> bool:
        a = span["attrs"]
        if c["status"] == "error":
            events = [e for e in span.get("events", []) if e["name"] == "exception"]
            ev = {x["key"]: _value(x["value"]) for x in events[0]["attributes"]} if events else {}
            return (
                span.get("status", {}).get("code") == 2
                and ev.get("exception.message") == c["error"]
                and "output.value" not in a
            )
        return (
            span.get("status", {}).get("code") == 1 and _json(a.get("output.value")) == c["result"]
        )

    pairs = []
    left = list(tools)
    for c in calls:
        match = next(
            (
                s
                for s in left
                if s["attrs"].get("tool.name") == c["tool"]
                and (_json(s["attrs"].get("input.value")) or {}).get("kwargs") == c["args"]
            ),
            None,
        )
        if match is not None:
            left.remove(match)
        pairs.append((match, c))
    results = args and all(s is not None and result_ok(s, c) for s, c in pairs)

    # call ids: only on the LLM spans' llm.output_messages.0.message.tool_calls.<j>.tool_call.*
    emitted = []
    prefix = "llm.output_messages.0.message.tool_calls"
    for a in llms:
        j = 0
        while f"{prefix}.{j}.tool_call.id" in a:
            name = a[f"{prefix}.{j}.tool_call.function.name"]
            if name != "final_answer":
                emitted.append(
                    (
                        name,
                        a[f"{prefix}.{j}.tool_call.id"],
                        _json(a[f"{prefix}.{j}.tool_call.function.arguments"]),
                    )
                )
            j += 1
    call_ids = emitted == [(c["tool"], c["call_id"], c["args"]) for c in calls]

    turns = record["turns"]
    # user: the AGENT span's input.value, JSON text {"task": ..., "stream": ..., ...}; also the
    # smolagents.task attribute
    user_in_agent = len(agents) == len(turns) and all(
        (_json(a["attrs"].get("input.value")) or {}).get("task") == t["user"]
        for a, t in zip(agents, turns, strict=False)
    )
    user_task_attr = [a["attrs"].get("smolagents.task") for a in agents] == [
        t["user"] for t in turns
    ]
    # reply: the AGENT span's output.value = str(final answer)
    reply_in_agent = [a["attrs"].get("output.value") for a in agents] == [t["reply"] for t in turns]
    detail = {
        "call_ids_on_llm_spans": call_ids,
        "user_in_agent_input_value": user_in_agent,
        "user_in_smolagents_task": user_task_attr,
        "reply_in_agent_output_value": reply_in_agent,
    }
    holds = {
        "calls": bool(names),
        "args": bool(args),
        "results": bool(results),
        "user": bool(user_in_agent),
        "reply": bool(reply_in_agent),
    }
    return holds, detail


NOTES = [
    "settings: SmolagentsInstrumentor().instrument(tracer_provider=...) with TraceConfig "
    "defaults (no OPENINFERENCE_* variable set): everything captured",
    "final answer: a smolagents ToolCallingAgent ends only on a call of its own 'final_answer' "
    "tool, so each scripted Reply was served as a model response with one tool call "
    "final_answer(answer=<reply text>), call id 'call_final_<turn>'; it runs as TOOL span "
    "'FinalAnswerTool' (tool.name 'final_answer', input.value kwargs {answer}, output.value = "
    "the reply, output.mime_type text/plain) and is NOT one of the truth's calls; no model "
    "response in this recording has text content (llm.output_messages.0.message has role and "
    "tool_calls only)",
    "spans: one trace per agent.run: 'ToolCallingAgent.run' (openinference.span.kind=AGENT, "
    "OTel kind INTERNAL, root) > 'Step <n>' (CHAIN, one per agent step) > "
    "'OpenAIModel.generate' (LLM) then the step's TOOL spans (siblings of the LLM span, "
    "children of the Step span); all spans OTel kind INTERNAL",
    "calls: TOOL span named after the Tool CLASS ('LookupOrderTool', 'FinalAnswerTool'; a "
    "@tool function would give 'SimpleTool'), the tool's name is the attribute tool.name; "
    "tool.description = docstring; tool.parameters = JSON text of the Tool's inputs SCHEMA "
    "({name: {type, description}}), NOT the arguments; no call id on the TOOL span",
    "args: TOOL span input.value (no input.mime_type) = JSON text of Tool.__call__'s bound "
    'arguments: {"args": [], "sanitize_inputs_outputs": true, "kwargs": {<the arguments>}}; '
    "also the LLM span's llm.output_messages.0.message.tool_calls.<j>.tool_call."
    "function.arguments (the model's JSON text)",
    "call ids: only on LLM spans: llm.output_messages.0.message.tool_calls.<j>.tool_call.id / "
    ".function.name / .function.arguments, and as Python-repr text inside later LLM spans' "
    "input messages of role 'tool-call' (\"Calling tools:\\n[{'id': 'call_a1', 'type': "
    "'function', 'function': {'name': ..., 'arguments': {...}}}]\"); pair a TOOL span with "
    "its call by order/name/arguments within the sibling LLM span's output",
    "results: TOOL span output.value = JSON text of the returned dict (safe_json_dumps), "
    "output.mime_type application/json, status OK; the Step span output.value holds the "
    "step's observations = str(result), the Python repr (one line per call, joined by "
    "newlines for parallel calls); the model sees that repr as a 'tool-response' message "
    '"Observation:\\n{...}"',
    "error: the failed TOOL span has status ERROR with description "
    "'ToolFailed: payment gateway timeout, please retry', an 'exception' event "
    "(exception.type harness.scenarios.ToolFailed, exception.message = the truth's error text) "
    "and no output.value; its parent Step span is also ERROR with description "
    "'AgentToolExecutionError: Error executing tool ...' and TWO identical 'exception' events "
    "(smolagents.utils.AgentToolExecutionError), no output.value; the model sees the error as "
    "a 'tool-response' message 'Error:\\nError executing tool ... ToolFailed: ... Now let's "
    "retry: ...'; the run itself goes on and ends OK",
    "LLM spans: llm.input_messages.<i>.message.role + .message.contents.0.message_content."
    "text (content LISTS, not .message.content), roles 'system', 'user', 'tool-call', "
    "'tool-response' (smolagents' own role names; the request sent to the model uses "
    'assistant/user roles); input.value = JSON text {"messages": [Python repr strings '
    'of ChatMessage objects], "stop_sequences": [...], "response_format": null, '
    '"tools_to_call_from": ["<abc.LookupOrderTool object at 0x...>", ...], '
    '"kwargs": {}}; '
    "output.value = JSON of the ChatMessage {role, content, tool_calls, raw: <repr of the "
    "openai ChatCompletion>, token_usage}; llm.tools.<k>.tool.json_schema; llm.model_name, "
    "llm.provider 'openai', llm.token_count.*",
    'user: AGENT span input.value = JSON text of run()\'s bound arguments {"task": <user '
    'message>, "stream": false, "reset": ..., ...} (no input.mime_type); in the LLM '
    "spans as a role 'user' message whose text is 'New task:\\n' + the message; the "
    "smolagents.task attribute is read before run() sets the task, so it is absent on the "
    "first run and holds the PREVIOUS run's task on later runs (not the user message)",
    "reply: AGENT span output.value = str(the final answer), plain text (no output.mime_type); "
    "also the last Step span's output.value, the FinalAnswerTool span's output.value and "
    "input.value kwargs.answer, and the last LLM span's final_answer tool_call arguments",
    'Step spans: input.value = JSON {"memory_step": <repr of the ActionStep, with '
    "timestamps>}; token totals on the AGENT span (llm.token_count.*)",
    "not deterministic between runs (besides ids and times): Tool object addresses in the LLM "
    "spans' input.value, ActionStep timestamps in the Step spans' input.value, the "
    "chatcmpl-<time> id inside the LLM output.value raw repr, venv paths in stacktraces",
    "logs: none (the instrumentation writes spans only)",
]
PARALLEL_NOTE = (
    "g_parallel_calls: both calls in one model response (tool_calls.0 and .1 of one LLM span); "
    "smolagents runs them in a ThreadPoolExecutor (default max_tool_threads), two sibling TOOL "
    "spans under the same Step span; the tool log was put back in the script's order before "
    "the truth was made"
)
TWO_TURNS_NOTE = (
    "e_two_turns: turn 2 is agent.run(<message>, reset=False) on the same agent: a second "
    "trace (new root 'ToolCallingAgent.run', input.value reset false) with no session or "
    "conversation id linking the two; its LLM spans repeat turn 1 (user 'New task:' message, "
    "tool-call/tool-response messages, the final_answer call and its observation) before the "
    "new 'New task:' user message; its smolagents.task attribute holds turn 1's message"
)


def record(telemetry: dump.Telemetry, scenario: Scenario) -> None:
    from smolagents import LogLevel, OpenAIModel, ToolCallingAgent

    box = scenario.toolbox()
    functions = box.functions()
    per_turn = smolagents_steps(scenario)
    steps = [s for turn in per_turn for s in turn]
    answers = []
    with ScriptedModel(steps) as model:
        agent = ToolCallingAgent(
            tools=[as_tool(functions[name]) for name in scenario.tools],
            model=OpenAIModel(model_id="scripted-model", api_base=model.base_url, api_key="k"),
            verbosity_level=LogLevel.OFF,
        )
        for number, turn in enumerate(scenario.turns):
            answers.append(agent.run(turn.user, reset=number == 0))
        assert model.done(), f"{scenario.name}: {model.script.position}/{len(steps)} steps used"
    for answer, turn in zip(answers, scenario.turns, strict=True):
        expected = next(s.text for s in reversed(turn.steps) if isinstance(s, Reply))
        assert answer == expected, (answer, expected)
    spans, logs = telemetry.take()
    notes = list(NOTES)
    if any(isinstance(s, Calls) and len(s.calls) > 1 for s in scenario.steps()):
        notes.append(PARALLEL_NOTE)
    if len(scenario.turns) > 1:
        notes.append(TWO_TURNS_NOTE)
    executions = in_script_order(scenario, box.executions)
    folder = dump.RECORDED / VARIANT
    placeholder = {k: False for k in ("calls", "args", "results", "user", "reply")}
    t = truth(
        scenario, executions, framework=FRAMEWORK, variant=VARIANT, holds=placeholder, notes=notes
    )
    dump.write(folder, scenario.name, spans, logs, t)
    holds, detail = check(folder / f"{scenario.name}.otlp.jsonl", t)
    t["telemetry_holds"] = holds
    dump.write(folder, scenario.name, spans, logs, t)
    print(
        f"{VARIANT}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, holds {holds} {detail}"
    )


def main() -> None:
    telemetry = dump.Telemetry.install(VARIANT)
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    config = TraceConfig()
    assert not (config.hide_inputs or config.hide_outputs), "content capture must be on"
    SmolagentsInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    folder = dump.RECORDED / VARIANT
    if folder.exists():  # only this script's own variant folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        record(telemetry, scenario)
    dump.write_versions(
        folder,
        FRAMEWORK,
        PACKAGES,
        "recordings/record_smolagents.py: smolagents.ToolCallingAgent + OpenAIModel (Chat "
        "Completions, non-streaming) against the scripted model, each scripted reply served as a "
        "final_answer tool call; SmolagentsInstrumentor().instrument(tracer_provider=...) with "
        "TraceConfig defaults",
    )


if __name__ == "__main__":
    main()
