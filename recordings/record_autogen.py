"""Record AutoGen AgentChat with AutoGen's own OpenTelemetry tracing (and the OpenAI one).

Run in the virtualenv of ``requirements-autogen.txt``::

    cd recordings && /tmp/rec-autogen/bin/python record_autogen.py

Each variant runs in its own process (the OpenAI instrumentation reads its settings from the
environment once, when it patches the ``openai`` client):

- ``autogen-native``: AutoGen's built-in GenAI spans (``autogen_core._telemetry``:
  ``create_agent`` / ``invoke_agent`` / ``execute_tool``, made with the GLOBAL tracer provider,
  ``trace.get_tracer("autogen-core")``, whenever one is set) plus
  ``opentelemetry-instrumentation-openai-v2`` (``OpenAIInstrumentor().instrument(...)``) with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` and no
  ``OTEL_SEMCONV_STABILITY_OPT_IN`` (its default v1.30 conventions: a ``chat <model>`` span
  per model request and the message content as log records);
- ``autogen-native-nocontent``: AutoGen's own spans only (no OpenAI instrumentation): what
  AutoGen itself records.

The providers are the harness's in-memory globals (``Telemetry.install()``); the OpenAI
instrumentor is given them explicitly (``tracer_provider=`` / ``logger_provider=``).

The agent is ``autogen_agentchat.agents.AssistantAgent`` on
``autogen_ext.models.openai.OpenAIChatCompletionClient`` (Chat Completions API, non-streaming)
with ``base_url`` pointed at the scripted model and a ``model_info`` dict (any model name),
the ToolBox functions given as plain functions (``tools=[...]``, wrapped in ``FunctionTool``),
``max_tool_iterations=10`` and ``reflect_on_tool_use=False`` (the loop ends when the model
answers with text, that text is the reply). One ``agent.run(task=...)`` per turn; the two turns
of ``e_two_turns`` are two runs of the same agent (it keeps its model context). The agent is
made outside any span, so its ``create_agent`` span is a trace of its own.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import MODEL, ScriptedModel  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "autogen"
VARIANTS = ("autogen-native", "autogen-native-nocontent")
PACKAGES = ("autogen-", "openai", "opentelemetry-", "protobuf")
INSTRUCTIONS = "You are a helpful assistant. Use the tools."

#: Settings read from the environment; cleared so the caller's shell can't leak in.
_SETTING_VARS = tuple(
    name for name in os.environ if name.startswith(("OTEL_", "OPENAI_", "AUTOGEN_"))
)


# ---------------------------------------------------------------------------------------------
# raw-file checks (OTLP/JSON as written, never tooltrail)


def _spans_and_logs_json(folder: Path, scenario: str) -> tuple[list[dict], list[dict]]:
    spans = []
    for line in (folder / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
    logs = []
    path = folder / f"{scenario}.logs.otlp.jsonl"
    if path.exists():
        for line in path.read_text("utf-8").splitlines():
            for rl in json.loads(line).get("resourceLogs", []):
                for sl in rl.get("scopeLogs", []):
                    logs.extend(sl.get("logRecords", []))
    return spans, logs


def _attrs(item: dict) -> dict[str, Any]:
    out = {}
    for kv in item.get("attributes", []):
        value = kv.get("value", {})
        out[kv["key"]] = next(iter(value.values()), None) if value else None
    return out


def _strings(node: Any) -> list[str]:
    """Every stringValue in an OTLP/JSON structure (attributes, log bodies)."""
    out: list[str] = []

    def walk(n: Any) -> None:
        if isinstance(n, dict):
            if isinstance(n.get("stringValue"), str):
                out.append(n["stringValue"])
            for v in n.values():
                walk(v)
        elif isinstance(n, list):
            for v in n:
                walk(v)

    walk(node)
    return out


def _values(text: str, python: bool) -> list[Any]:
    """Every value in a JSON text (or, with ``python``, a Python literal), recursively decoding
    such texts nested inside it."""
    found: list[Any] = []

    def parse(s: str) -> Any:
        try:
            return json.loads(s)
        except ValueError:
            if python:
                try:
                    return ast.literal_eval(s)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    pass
        raise ValueError

    def walk(node: Any) -> None:
        found.append(node)
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str) and node[:1] in "{[":
            try:
                walk(parse(node))
            except ValueError:
                pass

    if text[:1] in "{[":
        try:
            walk(parse(text))
        except ValueError:
            pass
    return found


def _check_holds(folder: Path, scenario: Scenario, t: dict) -> dict[str, bool]:
    """What the raw files hold, looked for in every span attribute, span event, status and log
    record body/attribute."""
    spans, logs = _spans_and_logs_json(folder, scenario.name)
    tool_spans = [_attrs(s) for s in spans if s["name"].startswith("execute_tool ")]
    calls = all(
        any(
            a.get("gen_ai.tool.name") == c["tool"] and a.get("gen_ai.tool.call.id") == c["call_id"]
            for a in tool_spans
        )
        for c in t["calls"]
    )
    strings = _strings(spans) + _strings(logs)
    everything = "\n".join(strings)
    json_values = [v for s in strings for v in _values(s, python=False)]
    any_values = [v for s in strings for v in _values(s, python=True)]
    args = all(c["args"] in json_values for c in t["calls"])
    results = all(
        (c["error"] in everything) if c["status"] == "error" else (c["result"] in any_values)
        for c in t["calls"]
    )
    user = all(turn["user"] in strings for turn in t["turns"])
    reply = all(turn["reply"] in strings for turn in t["turns"])
    return {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}


NOTES = {
    "autogen-native": [
        "settings: AutoGen's built-in tracing (global tracer provider set) and "
        "opentelemetry-instrumentation-openai-v2 with "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true, no "
        "OTEL_SEMCONV_STABILITY_OPT_IN (v1.30 conventions, content in log records)",
        "spans: a trace of its own for the agent's construction: create_agent assistant "
        "(CLIENT, scope autogen-core); then one trace per agent.run: invoke_agent assistant "
        "(CLIENT, root) > chat scripted-model (CLIENT, openai-v2, one per model request) and "
        "execute_tool <tool> (INTERNAL, autogen-core, one per execution), the execute_tool "
        "spans siblings of the chat spans; gen_ai.system=autogen on AutoGen's spans, "
        "gen_ai.system=openai on the chat spans; no conversation id: the two turns of "
        "e_two_turns share nothing but gen_ai.agent.name",
        "calls: execute_tool span gen_ai.tool.name, gen_ai.tool.call.id (the model's call id), "
        "gen_ai.tool.description (docstring); no arguments or result on AutoGen's spans",
        "args: log records only: gen_ai.choice body message.tool_calls[] {id, type, "
        "function{name, arguments}} (arguments the model's JSON text) and "
        "gen_ai.assistant.message body tool_calls[] of the next request",
        "results: log records only: gen_ai.tool.message body {id: call id, content}; the "
        "content is AutoGen's FunctionTool.return_value_as_string of the returned dict, i.e. "
        "str(dict): a PYTHON REPR (single quotes, None), not JSON",
        "error: the failed execute_tool span has status ERROR (description 'ToolFailed: <the "
        "exception message>'), error.type=ToolFailed and an 'exception' span event "
        "(exception.type / "
        "exception.message / exception.stacktrace); the model is sent the message as the "
        "gen_ai.tool.message content",
        "user: gen_ai.user.message log body {content}; reply: gen_ai.choice log body "
        "{index, finish_reason, message{role, content}} of the last chat span",
        "logs: event_name gen_ai.system.message / gen_ai.user.message / "
        "gen_ai.assistant.message / gen_ai.tool.message / gen_ai.choice, attribute "
        "gen_ai.system=openai, trace/span ids of the chat span",
    ],
    "autogen-native-nocontent": [
        "settings: AutoGen's built-in tracing only (global tracer provider set), no OpenAI "
        "instrumentation: AutoGen's own spans never record message content",
        "spans: create_agent assistant (CLIENT) in a trace of its own; one trace per "
        "agent.run: invoke_agent assistant (CLIENT, root) > execute_tool <tool> (INTERNAL); "
        "no span for the model requests",
        "calls: execute_tool span gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.description",
        "args/results/user/reply: not recorded",
        "error: the failed execute_tool span has status ERROR (description 'ToolFailed: <the "
        "exception message>'), error.type=ToolFailed and an 'exception' span event",
    ],
}


def _model_info() -> dict[str, Any]:
    return {
        "vision": False,
        "function_calling": True,
        "json_output": False,
        "family": "unknown",
        "structured_output": False,
        "multiple_system_messages": True,
    }


async def _run_scenario(scenario: Scenario) -> list[Any]:
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.messages import TextMessage
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        client = OpenAIChatCompletionClient(
            model=MODEL, base_url=model.base_url, api_key="k", model_info=_model_info()
        )
        agent = AssistantAgent(
            "assistant",
            model_client=client,
            tools=[functions[name] for name in scenario.tools],
            system_message=INSTRUCTIONS,
            max_tool_iterations=10,
            reflect_on_tool_use=False,
        )
        for turn in scenario.turns:
            result = await agent.run(task=turn.user)
            last = result.messages[-1]
            expected = turn.steps[-1].text
            if not isinstance(last, TextMessage) or last.content != expected:
                raise AssertionError(f"{scenario.name}: reply {last!r} != {expected!r}")
        await client.close()
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


def record_variant(variant: str) -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    telemetry = dump.Telemetry.install(service=variant)
    if variant == "autogen-native":
        os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(
            tracer_provider=telemetry.tracer_provider,
            logger_provider=telemetry.logger_provider,
        )
    folder = dump.RECORDED / variant
    if folder.exists():  # only this script's own variant folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = asyncio.run(_run_scenario(scenario))
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
        t["telemetry_holds"] = _check_holds(folder, scenario, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']}"
        )
    dump.write_versions(
        folder, FRAMEWORK, PACKAGES, f"recordings/record_autogen.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
