"""Record Semantic Kernel (Python) with its built-in OpenTelemetry diagnostics.

Run in the virtualenv of ``requirements-semantic-kernel.txt``::

    cd recordings && /tmp/rec-semantic-kernel/bin/python record_semantic_kernel.py

Each variant runs in its own process (the kernel reads its diagnostics settings from the
environment once, when ``semantic_kernel`` is imported):

- ``semantic-kernel``: ``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE``
  on; its message events are Python ``logging`` records, sent to the OpenTelemetry log
  provider by a ``LoggingHandler`` on the ``semantic_kernel`` logger, as the kernel's
  telemetry documentation sets it up;
- ``semantic-kernel-nosensitive``: ``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS``
  on (spans without content), the same logging handler.

The agent is ``ChatCompletionAgent`` on ``OpenAIChatCompletion`` (Chat Completions API, an
``AsyncOpenAI`` client whose ``base_url`` is the scripted model), its tools the ToolBox
functions as ``kernel_function``s of one plugin (``tools``), automatic function calling (the
agent's default with plugins), non-streaming ``get_response``; the two turns of
``e_two_turns`` share one ``ChatHistoryAgentThread``. The kernel advertises a plugin's
function to the model as ``<plugin>-<function>``, and a model calls it by that name: the
scripted model does, so the calls of the truth files are named ``tools-<function>``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import Call, Calls, ScriptedModel, Step  # noqa: E402
from harness.raw import attrs_of, logs_of, spans_of  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "semantic-kernel"
VARIANTS = ("semantic-kernel", "semantic-kernel-nosensitive")
PACKAGES = ("semantic-kernel", "openai", "opentelemetry-", "protobuf")
INSTRUCTIONS = "You are a helpful assistant. Use the tools."
PLUGIN = "tools"
_SETTING_VARS = (
    "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS",
    "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_CHAT_MODEL_ID",
    "OPENAI_ORG_ID",
)


def qualified(name: str) -> str:
    return f"{PLUGIN}-{name}"


def _steps(scenario: Scenario) -> list[Step]:
    """The scenario's steps with each call named as the kernel advertises it."""
    out: list[Step] = []
    for step in scenario.steps():
        if isinstance(step, Calls):
            step = replace(
                step,
                calls=tuple(
                    Call(name=qualified(c.name), args=c.args, call_id=c.call_id) for c in step.calls
                ),
            )
        out.append(step)
    return out


def _plugin(functions: dict[str, Any], names: tuple[str, ...]) -> Any:
    from semantic_kernel.functions import KernelPlugin, kernel_function

    return KernelPlugin.from_object(
        PLUGIN,
        {name: kernel_function(functions[name], name=name) for name in names},
    )


async def _run_scenario(scenario: Scenario) -> list[Any]:
    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent, ChatHistoryAgentThread
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion

    box = scenario.toolbox()
    with ScriptedModel(_steps(scenario)) as model:
        client = AsyncOpenAI(base_url=model.base_url, api_key="k")
        service = OpenAIChatCompletion(ai_model_id="scripted-model", async_client=client)
        agent = ChatCompletionAgent(
            service=service,
            name="assistant",
            instructions=INSTRUCTIONS,
            plugins=[_plugin(box.functions(), scenario.tools)],
        )
        thread: ChatHistoryAgentThread | None = None
        for turn in scenario.turns:
            response = await agent.get_response(messages=turn.user, thread=thread)
            thread = response.thread
            expected = turn.steps[-1].text
            if str(response.content) != expected:
                raise AssertionError(f"{scenario.name}: reply {response.content!r} != {expected!r}")
        await client.close()
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


def _renamed(t: dict[str, Any]) -> dict[str, Any]:
    """The truth with each call's tool named as the kernel names it (``tools-<function>``)."""
    for call in t["calls"]:
        call["tool"] = qualified(call["tool"])
    for turn in t["turns"]:
        for call in turn["calls"]:
            if not call["tool"].startswith(f"{PLUGIN}-"):
                call["tool"] = qualified(call["tool"])
    return t


def _check_holds(folder: Path, scenario: Scenario, t: dict) -> dict[str, bool]:
    """What the raw files hold, each fact looked for where the notes say it is."""
    spans, logs = spans_of(folder, scenario.name), logs_of(folder, scenario.name)
    span_attrs = [(s["name"], attrs_of(s)) for s in spans]
    everything = json.dumps(
        [a for _, a in span_attrs]
        + [[attrs_of(e) for e in s.get("events", [])] + [s.get("status", {})] for s in spans]
        + logs,
        ensure_ascii=False,
    )
    tool_spans = [a for name, a in span_attrs if name.startswith("execute_tool ")]
    calls = all(
        any(
            a.get("gen_ai.tool.name") == c["tool"] and a.get("gen_ai.tool.call.id") == c["call_id"]
            for a in tool_spans
        )
        for c in t["calls"]
    )
    arguments = [a.get("gen_ai.tool.call.arguments") for a in tool_spans]
    args = all(
        any(isinstance(text, str) and json.loads(text) == c["args"] for text in arguments)
        for c in t["calls"]
    )
    shown = [a.get("gen_ai.tool.call.result") for a in tool_spans]
    results = all(
        c["error"] in everything if c["status"] == "error" else str(c["result"]) in shown
        for c in t["calls"]
    )
    user = all(json.dumps(turn["user"])[1:-1] in everything for turn in t["turns"])
    reply = all(json.dumps(turn["reply"])[1:-1] in everything for turn in t["turns"])
    return {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}


NOTES = {
    "semantic-kernel": [
        "settings: SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true; a "
        "LoggingHandler of the OpenTelemetry log provider on the 'semantic_kernel' logger",
        "spans: invoke_agent assistant (INTERNAL, root) > chat.completions scripted-model "
        "(CLIENT, one per model request) and execute_tool tools-<function> (INTERNAL, one per "
        "execution)",
        "calls: execute_tool span gen_ai.tool.name (the plugin-qualified name the model called) "
        "and gen_ai.tool.call.id",
        "args: execute_tool span gen_ai.tool.call.arguments (KernelArguments.dumps(): json.dumps)",
        "results: execute_tool span gen_ai.tool.call.result, str() of the function's value (a "
        "dict's Python repr)",
        "error: the failed execute_tool span has status ERROR, error.type and an 'exception' "
        "event; the model is told the invocation failed",
        "user/reply: invoke_agent span gen_ai.input.messages / gen_ai.output.messages (JSON of "
        "the kernel's ChatMessageContent.to_dict()); the chat spans' messages are log records "
        "(body: JSON text; attributes event.name gen_ai.user.message / gen_ai.choice ...)",
    ],
    "semantic-kernel-nosensitive": [
        "settings: SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS=true (no content)",
        "spans: as the sensitive variant; calls: execute_tool gen_ai.tool.name and "
        "gen_ai.tool.call.id",
        "args, results, user, reply: not recorded",
    ],
}


def record_variant(variant: str) -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    setting = (
        "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE"
        if variant == "semantic-kernel"
        else "SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS"
    )
    os.environ[setting] = "true"
    telemetry = dump.Telemetry.install(service=variant)
    from opentelemetry.sdk._logs import LoggingHandler

    sk_logger = logging.getLogger("semantic_kernel")
    sk_logger.addHandler(LoggingHandler(logger_provider=telemetry.logger_provider))
    sk_logger.setLevel(logging.INFO)
    folder = dump.RECORDED / variant
    if folder.exists():  # only this script's own variant folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = asyncio.run(_run_scenario(scenario))
        spans, logs = telemetry.take()
        holds = {"calls": True, "args": True, "results": True, "user": True, "reply": True}
        t = _renamed(
            truth(
                scenario,
                executions,
                framework=FRAMEWORK,
                variant=variant,
                holds=holds,
                notes=NOTES[variant],
            )
        )
        dump.write(folder, scenario.name, spans, logs, t)
        t["telemetry_holds"] = _check_holds(folder, scenario, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']}"
        )
    dump.write_versions(
        folder, FRAMEWORK, PACKAGES, f"recordings/record_semantic_kernel.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
