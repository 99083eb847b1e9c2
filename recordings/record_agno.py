"""Record Agno with the OpenInference instrumentation (openinference-instrumentation-agno).

Run in the virtualenv of ``requirements-agno.txt``::

    cd recordings && /tmp/rec-agno/bin/python record_agno.py

Each variant runs in its own process (``AgnoInstrumentor().instrument()`` patches agno's
classes once per process and reads its ``TraceConfig`` from the environment then):

- ``agno-openinference``: the instrumentation's defaults (everything captured);
- ``agno-openinference-hidden-inputs``: ``OPENINFERENCE_HIDE_INPUTS=true``, OpenInference's
  documented switch to hide inputs (``input.value`` becomes ``__REDACTED__``,
  ``input.mime_type``, ``llm.input_messages.*`` and ``llm.tools.*`` are dropped); everything
  else as in the defaults.

The providers are the harness's in-memory globals (``Telemetry.install()``);
``AgnoInstrumentor().instrument(tracer_provider=...)`` is given the global tracer provider.

The agent is ``agno.agent.Agent`` on ``agno.models.openai.OpenAIChat`` (Chat Completions API,
non-streaming) with ``base_url`` pointed at the scripted model, the ToolBox functions given as
plain functions (``tools=[...]``, agno wraps them in ``Function``), sync ``agent.run``. The two
turns of ``e_two_turns`` are two ``agent.run(..., session_id=...)`` calls on the same Agent with
``db=InMemoryDb()`` and ``add_history_to_context=True`` (agno's documented chat history).
Agno's own usage telemetry is off (``telemetry=False``, ``AGNO_TELEMETRY=false``).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import ScriptedModel  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "agno"
VARIANTS = ("agno-openinference", "agno-openinference-hidden-inputs")
PACKAGES = ("agno", "openinference-", "openai", "opentelemetry-", "protobuf")
INSTRUCTIONS = "You are a helpful assistant. Use the tools."

#: Settings read from the environment; cleared so the caller's shell can't leak in.
_SETTING_VARS = tuple(
    name for name in os.environ if name.startswith(("OPENINFERENCE_", "AGNO_", "OPENAI_"))
)


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
    """A Python repr (what the tool span's output.value holds) back to the value."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None


def _check_holds(folder: Path, scenario: Scenario, t: dict) -> tuple[dict[str, bool], dict]:
    """What the raw file holds, each fact looked for where the notes say it is."""
    spans = _spans_json(folder, scenario.name)
    typed = [(s, _attrs(s)) for s in spans]
    tools = [(s, a) for s, a in typed if a.get("openinference.span.kind") == "TOOL"]
    llms = [a for _, a in typed if a.get("openinference.span.kind") == "LLM"]
    agents = [a for _, a in typed if a.get("openinference.span.kind") == "AGENT"]

    # calls: one TOOL span per execution, in order, named by tool.name
    calls = [a.get("tool.name") for _, a in tools] == [c["tool"] for c in t["calls"]]

    # args: the TOOL span's tool.parameters (JSON text) in execution order
    args = len(tools) == len(t["calls"]) and all(
        _json(a.get("tool.parameters")) == c["args"]
        for (_, a), c in zip(tools, t["calls"], strict=False)
    )

    # results: output.value (Python repr, text/plain) of the TOOL span; a failed call's span
    # has status ERROR with the error text as description and output.value
    def _result_ok(span: dict, a: dict, c: dict) -> bool:
        if c["status"] == "error":
            return (
                span.get("status", {}).get("code") == 2
                and span["status"].get("message") == c["error"]
                and a.get("output.value") == c["error"]
            )
        return (
            span.get("status", {}).get("code") == 1
            and _repr(a.get("output.value")) == c["result"]
            and a.get("output.value") == str(c["result"])
        )

    results = len(tools) == len(t["calls"]) and all(
        _result_ok(s, a, c) for (s, a), c in zip(tools, t["calls"], strict=False)
    )

    # call ids: only on LLM spans, llm.output_messages.0.message.tool_calls.<j>.tool_call.*
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

    # user: the AGENT span's input.value (plain text) per turn, also the LLM spans'
    # llm.input_messages.<i>.message.content with role user
    user_in_agent = [a.get("input.value") for a in agents] == [x["user"] for x in t["turns"]]
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
    user = user_in_agent and user_in_llm

    # reply: the AGENT span's output.value per turn, and the last LLM span's
    # llm.output_messages.0.message.content
    reply_in_agent = [a.get("output.value") for a in agents] == [x["reply"] for x in t["turns"]]
    replies = {a.get("llm.output_messages.0.message.content") for a in llms}
    reply_in_llm = all(x["reply"] in replies for x in t["turns"])
    reply = reply_in_agent and reply_in_llm

    # anywhere: is the text in any attribute value at all?
    every_value = json.dumps([a for _, a in typed], ensure_ascii=False)
    user_anywhere = all(
        json.dumps(x["user"], ensure_ascii=False)[1:-1] in every_value for x in t["turns"]
    )
    redacted = sorted({k for _, a in typed for k, v in a.items() if v == "__REDACTED__"})
    detail = {
        "call_ids_on_llm_spans": call_ids,
        "user_in_agent_span": user_in_agent,
        "user_in_llm_input_messages": user_in_llm,
        "user_text_anywhere": user_anywhere,
        "reply_in_agent_span": reply_in_agent,
        "reply_in_llm_output_messages": reply_in_llm,
        "redacted_keys": redacted,
    }
    holds = {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}
    return holds, detail


# ---------------------------------------------------------------------------------------------
# notes (checked facts; the checks above look where these say)

_COMMON = [
    "spans: one trace per agent run (agent.run): '<agent name>.run' (openinference.span.kind="
    "AGENT, OTel kind INTERNAL, root) > 'OpenAIChat.invoke' (LLM, INTERNAL, one per model "
    "request) and '<tool name>' (TOOL, INTERNAL, one per execution, the span name is the bare "
    "function name), the TOOL spans siblings of the LLM spans; parallel calls run one after "
    "the other (sync run), two sibling TOOL spans",
    "agent: AGENT span agent.name / graph.node.name / agno.agent / agno.agent.id = 'assistant', "
    "agno.tools = string array of the agent's tool names, graph.node.id (random hex), "
    "agno.run.id (uuid), session.id = the run's session_id (the same on both turns of "
    "e_two_turns, 'session-<scenario>')",
    "calls: TOOL span tool.name (also tool.description = docstring); NO call id on the TOOL "
    "span: the model's call id is only on the LLM spans: "
    "llm.output_messages.0.message.tool_calls.<j>.tool_call.id / .tool_call.function.name / "
    ".tool_call.function.arguments (arguments = the model's JSON text), on the next LLM span's "
    "llm.input_messages.<i>.message.tool_calls.<j>.tool_call.* and on the role=tool message "
    "llm.input_messages.<i>.message.tool_call_id; pair a TOOL span with its call id by order "
    "(and name/arguments) within the preceding LLM span's output",
    "model output: LLM span output.value = JSON text list [{role, content?, tool_calls?}] "
    "(tool_calls as the OpenAI dicts {id, function{arguments, name}, type}), "
    "output.mime_type application/json; flattened llm.output_messages.0.message.role / "
    ".content / .tool_calls.<j>.*; tokens llm.token_count.prompt/completion; llm.model_name, "
    "llm.provider='OpenAI'",
]

NOTES = {
    "agno-openinference": [
        "settings: AgnoInstrumentor().instrument(tracer_provider=...) with TraceConfig defaults "
        "(no OPENINFERENCE_* variable set)",
        *_COMMON,
        "args: TOOL span tool.parameters and input.value, both the same JSON text "
        '(json.dumps, spaced: \'{"order_id": "ORD-7731", "amount": 49.99}\'), '
        "input.mime_type application/json; also on the LLM spans' tool_call.function.arguments",
        "results: TOOL span output.value = str(result), i.e. the Python repr of the returned "
        "dict (single quotes, True/None: \"{'customer_id': 'C-118', 'verified': True}\") with "
        "output.mime_type text/plain, status OK; the same repr is what agno sends the model, "
        "so the next LLM span's role=tool llm.input_messages.<i>.message.content holds it too",
        "error: the failed TOOL span has status ERROR with description = the exception text "
        "('payment gateway timeout, please retry') and output.value = that text (text/plain); "
        "no exception event, no error.type; agno catches the exception and sends the model the "
        "bare exception text as the tool message content (in the next LLM span's "
        "llm.input_messages)",
        "user: AGENT span input.value = the user's message as plain text (no input.mime_type); "
        "LLM spans llm.input_messages.<i>.message.role='user' / .message.content; also inside "
        "the LLM span input.value JSON text {messages:[agno Message dicts with id, role, "
        "content, from_history, created_at...]}",
        "LLM span input.value: JSON text {messages:[...]} of agno Message dicts (random uuid "
        "id, created_at, from_history, stop_after_tool_call, role, content, tool_calls, "
        "provider_data, metrics); its role=tool messages carry tool_call_id, tool_name, "
        "tool_args (the arguments as a JSON object) and tool_call_error (true for the failed "
        "call), content = the same Python-repr text",
        "history: on turn 2 of e_two_turns every LLM span's llm.input_messages repeats turn 1 "
        "(system, user, assistant tool_calls, tool result, assistant reply) before the new user "
        "message; the input.value JSON marks those messages from_history=true",
        "system prompt: llm.input_messages.0.message.role='system' (the request sent role "
        "'developer', OpenAIChat's role map); llm.tools.<k>.tool.json_schema = JSON text of each "
        "tool definition",
        "reply: AGENT span output.value = the reply as plain text although output.mime_type is "
        "application/json; the last LLM span's llm.output_messages.0.message.content and its "
        "output.value JSON",
        "logs: none (the instrumentation writes spans only)",
    ],
    "agno-openinference-hidden-inputs": [
        "settings: OPENINFERENCE_HIDE_INPUTS=true in the environment before "
        "AgnoInstrumentor().instrument(), read by its default TraceConfig (hide_inputs=True)",
        *_COMMON,
        "redaction: on every span input.value is the marker '__REDACTED__' (AGENT, LLM and TOOL "
        "spans) and input.mime_type is dropped; all llm.input_messages.* and llm.tools.* keys "
        "are dropped from the LLM spans; outputs are untouched",
        "args: still recorded: TOOL span tool.parameters (JSON text, not covered by hide_inputs) "
        "while its input.value is '__REDACTED__'; also the LLM spans' "
        "llm.output_messages.0.message.tool_calls.<j>.tool_call.function.arguments",
        "results: TOOL span output.value = str(result), the Python repr of the dict, "
        "output.mime_type text/plain (not hidden); the model-side copy (role=tool input "
        "messages) is gone",
        "error: the failed TOOL span has status ERROR with description = the exception text "
        "and output.value = that text; no exception event",
        "user: not recorded: AGENT span input.value is '__REDACTED__', no llm.input_messages; "
        "the user's text appears in no attribute",
        "history: not recorded (it was only in llm.input_messages / LLM input.value); turn 2 is "
        "linked to turn 1 only by session.id",
        "reply: AGENT span output.value (plain text, mime application/json) and the last LLM "
        "span's llm.output_messages.0.message.content / output.value",
        "logs: none",
    ],
}


# ---------------------------------------------------------------------------------------------
# running


def _run_scenario(scenario: Scenario) -> list[Any]:
    from agno.agent import Agent
    from agno.db.in_memory import InMemoryDb
    from agno.models.openai import OpenAIChat

    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        agent = Agent(
            name="assistant",
            model=OpenAIChat(id="scripted-model", base_url=model.base_url, api_key="k"),
            instructions=INSTRUCTIONS,
            tools=[functions[name] for name in scenario.tools],
            db=InMemoryDb(),
            add_history_to_context=True,
            telemetry=False,
        )
        session_id = f"session-{scenario.name}"
        for turn in scenario.turns:
            response = agent.run(turn.user, session_id=session_id)
            expected = turn.steps[-1].text
            if response.content != expected:
                raise AssertionError(f"{scenario.name}: reply {response.content!r} != {expected!r}")
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


def record_variant(variant: str) -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    os.environ["AGNO_TELEMETRY"] = "false"
    if variant == "agno-openinference-hidden-inputs":
        os.environ["OPENINFERENCE_HIDE_INPUTS"] = "true"
    telemetry = dump.Telemetry.install(service=variant)
    from openinference.instrumentation import TraceConfig
    from openinference.instrumentation.agno import AgnoInstrumentor

    assert TraceConfig().hide_inputs is (variant == "agno-openinference-hidden-inputs")
    AgnoInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    folder = dump.RECORDED / variant
    if folder.exists():  # only this script's own variant folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = _run_scenario(scenario)
        spans, logs = telemetry.take()
        holds = {"calls": True, "args": True, "results": True, "user": True, "reply": True}
        t = truth(
            scenario,
            executions,
            framework=FRAMEWORK,
            variant=variant,
            holds=holds,
            notes=NOTES[variant],
        )
        dump.write(folder, scenario.name, spans, logs, t)
        t["telemetry_holds"], detail = _check_holds(folder, scenario, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']} {detail}"
        )
    dump.write_versions(
        folder, FRAMEWORK, PACKAGES, f"recordings/record_agno.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
