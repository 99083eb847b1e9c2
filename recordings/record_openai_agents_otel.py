"""Record the OpenAI Agents SDK with the OpenTelemetry contrib GenAI instrumentation
(opentelemetry-instrumentation-openai-agents-v2).

Run in the virtualenv of ``requirements-openai-agents-otel.txt``::

    cd recordings && /tmp/rec-openai-agents-otel/bin/python record_openai_agents_otel.py

Each variant runs in its own process (the instrumentation reads its content setting when it
is instrumented):

- ``openai-agents-otel``: the instrumentation's defaults (message content captured, on spans
  and as span events: ``capture_message_content`` unset is ``span_and_event``);
- ``openai-agents-otel-nocontent``: ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=false``
  (no content).

The agent is ``agents.Agent`` on ``OpenAIChatCompletionsModel`` (Chat Completions, an
``AsyncOpenAI`` client whose ``base_url`` is the scripted model), the ToolBox functions as
``function_tool``s, ``Runner.run_sync`` per turn; the second turn of ``e_two_turns`` is given
the first run's items (``result.to_input_list()`` plus the new message), as the SDK's
documentation continues a conversation. The SDK's own trace processors are removed
(``set_trace_processors([])``, public) before instrumenting, so nothing is sent to OpenAI's
trace backend; the instrumentation then adds its processor, which writes OpenTelemetry spans
to the harness's in-memory tracer provider.
"""

from __future__ import annotations

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
from harness.raw import attrs_of, spans_of  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "openai-agents"
VARIANTS = ("openai-agents-otel", "openai-agents-otel-nocontent")
PACKAGES = ("openai", "opentelemetry-", "protobuf")
INSTRUCTIONS = "You are a helpful assistant. Use the tools."
_CONTENT_VAR = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def _run_scenario(scenario: Scenario) -> list[Any]:
    from agents import Agent, OpenAIChatCompletionsModel, Runner, flush_traces, function_tool
    from openai import AsyncOpenAI

    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        client = AsyncOpenAI(base_url=model.base_url, api_key="k")
        chat = OpenAIChatCompletionsModel(model="scripted-model", openai_client=client)
        agent = Agent(
            name="assistant",
            instructions=INSTRUCTIONS,
            model=chat,
            tools=[function_tool(functions[name]) for name in scenario.tools],
        )
        history: list[Any] = []
        for turn in scenario.turns:
            given: Any = (
                turn.user
                if not history
                else [
                    *history,
                    {"role": "user", "content": turn.user},
                ]
            )
            result = Runner.run_sync(agent, given)
            history = result.to_input_list()
            expected = turn.steps[-1].text
            if result.final_output != expected:
                raise AssertionError(f"{scenario.name}: reply {result.final_output!r}")
        flush_traces()
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


def _check_holds(folder: Path, t: dict) -> dict[str, bool]:
    """What the raw file holds, read as OTLP/JSON (never tooltrail)."""
    spans = spans_of(folder, t["scenario"])
    named = [(s["name"], attrs_of(s)) for s in spans]
    everything = json.dumps(
        [a for _, a in named]
        + [[attrs_of(e) for e in s.get("events", [])] + [s.get("status", {})] for s in spans],
        ensure_ascii=False,
    )
    tools = [a for _, a in named if a.get("gen_ai.operation.name") == "execute_tool"]
    calls = [a.get("gen_ai.tool.name") for a in tools] == [c["tool"] for c in t["calls"]]

    def parsed(text: Any) -> Any:
        try:
            return json.loads(text) if isinstance(text, str) else None
        except ValueError:
            return None

    args = all(
        any(parsed(a.get("gen_ai.tool.call.arguments")) == c["args"] for a in tools)
        for c in t["calls"]
    )
    results = all(
        c["error"] in everything
        if c["status"] == "error"
        else json.dumps(c["result"])[1:-1] in everything or str(c["result"]) in everything
        for c in t["calls"]
    )
    user = all(json.dumps(turn["user"])[1:-1] in everything for turn in t["turns"])
    reply = all(json.dumps(turn["reply"])[1:-1] in everything for turn in t["turns"])
    return {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}


NOTES = {
    "openai-agents-otel": [
        "settings: the instrumentation's defaults: message content captured "
        "(capture_message_content unset is span_and_event)",
        "spans: one trace per run: 'Agent workflow' (SERVER, root, gen_ai.operation.name "
        "invoke_agent, no agent name) > 'unknown' (gen_ai.operation.name unknown: the SDK's "
        "spans the instrumentation has no name for) > 'invoke_agent assistant' (CLIENT) > "
        "'unknown' per step > 'chat scripted-model' (CLIENT, one per model request) and "
        "'execute_tool <tool>' (INTERNAL, one per execution)",
        "agent: every chat, execute_tool and 'unknown' span carries gen_ai.agent.name "
        "'OpenAI Agent' (the instrumentation's default); the agent's own name is on its "
        "invoke_agent span only",
        "calls: execute_tool span gen_ai.tool.name; no gen_ai.tool.call.id",
        "args: execute_tool span gen_ai.tool.call.arguments (JSON text)",
        "results: execute_tool span gen_ai.tool.call.result (JSON text); the failed attempt's "
        "span has status ERROR (a message naming the tool; the tool's own error text is "
        "redacted by the SDK) and the SDK's 'An error occurred while running the tool.' as "
        "its result",
        "user/reply: gen_ai.input.messages / gen_ai.output.messages (GenAI parts) of the chat "
        "and invoke_agent spans; a chat span whose response asked for tools has one text part "
        "holding a Python repr of the SDK's ChatCompletionMessage (its tool_calls inside), "
        "not a tool_call part",
    ],
    "openai-agents-otel-nocontent": [
        f"settings: {_CONTENT_VAR}=false",
        "spans, agent, calls: as openai-agents-otel (execute_tool gen_ai.tool.name)",
        "args, results, user, reply: not recorded",
    ],
}


def record_variant(variant: str) -> None:
    for name in [n for n in os.environ if n.startswith(("OTEL_INSTRUMENTATION_GENAI", "OPENAI_"))]:
        os.environ.pop(name)
    if variant == "openai-agents-otel-nocontent":
        os.environ[_CONTENT_VAR] = "false"
    telemetry = dump.Telemetry.install(service=variant)
    from agents import set_trace_processors
    from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    set_trace_processors([])
    OpenAIAgentsInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
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
        t["telemetry_holds"] = _check_holds(folder, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']}"
        )
    dump.write_versions(
        folder,
        FRAMEWORK,
        ("openai-agents", *PACKAGES),
        f"recordings/record_openai_agents_otel.py (variant {variant})",
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
