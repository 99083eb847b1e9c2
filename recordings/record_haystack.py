"""Record Haystack (``haystack-ai``) instrumented by OpenInference
(``openinference-instrumentation-haystack``).

Run in the virtualenv of ``requirements-haystack.txt``::

    cd recordings && /tmp/rec-haystack/bin/python record_haystack.py

One variant, ``haystack-openinference``: ``HaystackInstrumentor().instrument(tracer_provider=...)``
with the instrumentor's defaults (no ``TraceConfig``, every ``OPENINFERENCE_*`` variable cleared,
so nothing is hidden), on the harness's in-memory global providers.

The agent is ``haystack.components.agents.Agent`` on ``OpenAIChatGenerator(model="scripted-model",
api_base_url=<scripted model>, api_key=Secret.from_token("k"))`` (Chat Completions API, not
streamed), a short ``system_prompt``, and the ToolBox functions as Haystack ``Tool``s made with
``create_tool_from_function``; it runs standalone (``agent.run(messages=[...])``), as the
instrumentation's own ``examples/agent_run.py`` does. Everything else is the Agent's default, in
particular ``raise_on_tool_invocation_failure=False``: a raising tool is wrapped by ``Tool.invoke``
in a ``ToolInvocationError`` whose text becomes a tool-result message with ``error=True``, sent to
the model, which retries as scripted.

Two details of the setup matter for what is recorded:

- the Haystack classes are imported BEFORE ``instrument()`` (as the instrumentation's examples
  do): the instrumentor wraps the ``run`` of every class already in Haystack's component registry
  at that moment, and otherwise only components a ``Pipeline`` runs. Instrumenting first and
  importing ``Agent`` / ``OpenAIChatGenerator`` afterwards records NO span for a standalone
  ``agent.run`` (and only ``Pipeline.run`` > ``Agent.run`` inside a Pipeline: the chat generator
  the Agent calls directly is never wrapped);
- turn 2 of ``e_two_turns`` is run with turn 1's ``result["messages"]`` plus the new user message
  (``ChatMessage.from_user``), without turn 1's system message: the Agent renders its
  ``system_prompt`` and prepends it on every run, so passing it back would send it twice.

Haystack's own tracing (``haystack.tracing``) is independent of OpenInference: in haystack-ai 3.x
the core keeps only the ``ProxyTracer`` (a ``NullTracer`` unless ``enable_tracing`` is called) and
a ``LoggingTracer``; its OpenTelemetry tracer lives in the separate ``opentelemetry-haystack``
integration, not installed here. ``HAYSTACK_CONTENT_TRACING_ENABLED`` only gates
``Span.set_content_tag`` of Haystack's own spans (the ``haystack.agent.*`` tags), so it changes
nothing in OpenInference's spans; it is cleared here. Haystack's usage telemetry (posthog) is off
(``HAYSTACK_TELEMETRY_ENABLED=False``).
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
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "haystack"
VARIANTS = ("haystack-openinference",)
PACKAGES = ("haystack-ai", "openinference-", "openai", "opentelemetry-", "protobuf")
SYSTEM_PROMPT = "You are a helpful assistant. Use the tools."

#: Settings read from the environment; cleared so the caller's shell can't leak in.
_SETTING_VARS = (
    "HAYSTACK_CONTENT_TRACING_ENABLED",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_TIMEOUT",
    "OPENAI_MAX_RETRIES",
    "OPENAI_ORG_ID",
)


def _clear_settings() -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    for name in list(os.environ):
        if name.startswith("OPENINFERENCE_"):  # TraceConfig's hide_* / base64 settings
            os.environ.pop(name)
    os.environ["HAYSTACK_TELEMETRY_ENABLED"] = "False"


# --- what the raw files hold -----------------------------------------------------------------


def _spans_json(folder: Path, scenario: str) -> list[dict]:
    spans = []
    for line in (folder / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
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


def _check_holds(folder: Path, scenario: Scenario, t: dict) -> dict[str, bool]:
    """Each fact is looked for where the notes say it is, in the .otlp.jsonl written."""
    spans = _spans_json(folder, scenario.name)
    llm = [_attrs(s) for s in spans if _attrs(s).get("openinference.span.kind") == "LLM"]
    assert llm, "no LLM span"

    # the model's tool calls: flattened llm.output_messages.<i>.message.tool_calls.<j>.*
    out_calls: list[tuple[str, Any]] = []
    for a in llm:
        for key, value in a.items():
            prefix = key.rsplit(".tool_call.function.name", 1)
            if key.startswith("llm.output_messages.") and len(prefix) == 2 and prefix[1] == "":
                args = a.get(prefix[0] + ".tool_call.function.arguments")
                out_calls.append((value, _json(args)))
    calls = all(any(name == c["tool"] for name, _ in out_calls) for c in t["calls"])
    args = all(
        any(name == c["tool"] and parsed == c["args"] for name, parsed in out_calls)
        for c in t["calls"]
    )

    # tool results: only in the Python reprs (ToolCallResult(result='...')) of the messages
    # listed in the next LLM span's input.value (a JSON object of repr strings)
    reprs: list[str] = []
    for a in llm:
        value = _json(a.get("input.value"))
        if isinstance(value, dict):
            reprs += [m for m in value.get("messages", []) if isinstance(m, str)]

    def _result_in(c: dict) -> bool:
        if c["status"] == "error":
            return any(
                "ToolCallResult(" in r and c["error"] in r and "error=True" in r for r in reprs
            )
        text = json.dumps(c["result"], ensure_ascii=False)
        return any("ToolCallResult(result=" + repr(text) in r for r in reprs)

    results = all(_result_in(c) for c in t["calls"])

    # user: llm.input_messages.<i>.message.content with role user
    def _contents(role_key: str, role: str) -> list[str]:
        found = []
        for a in llm:
            for key, value in a.items():
                if key.startswith(role_key) and key.endswith(".message.role") and value == role:
                    found.append(a.get(key[: -len(".message.role")] + ".message.content"))
        return found

    users = _contents("llm.input_messages.", "user")
    user = all(turn["user"] in users for turn in t["turns"])
    replies = _contents("llm.output_messages.", "assistant")
    reply = all(turn["reply"] in replies for turn in t["turns"])
    return {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}


NOTES = {
    "haystack-openinference": [
        "settings: HaystackInstrumentor().instrument(tracer_provider=...) defaults (TraceConfig() "
        "with nothing hidden, no OPENINFERENCE_* variables); Haystack classes imported before "
        "instrument(); standalone Agent.run; Haystack's own tracing off (NullTracer), "
        "HAYSTACK_CONTENT_TRACING_ENABLED has no effect on these spans",
        "spans: one trace per agent run, all INTERNAL, OpenInference kinds in "
        "openinference.span.kind: Agent.run (CHAIN, root) > ChatPromptBuilder.run (CHAIN, renders "
        "the system_prompt) and OpenAIChatGenerator.run (LLM, one per model request); NO span "
        "per tool execution (Haystack 3 runs tools inside the Agent, not as a component); no "
        "agent name (span names are class names), no session / conversation id: the two turns "
        "of e_two_turns are two unrelated traces",
        "calls: tool name in LLM span llm.output_messages.<i>.message.tool_calls.<j>."
        "tool_call.function.name (flattened indexed keys); the call id is NOT an attribute: it "
        "is only inside the Python repr of the reply in output.value "
        "(ToolCall(tool_name=..., arguments={...}, id='call_a1', extra=None))",
        "args: LLM span llm.output_messages.<i>.message.tool_calls.<j>.tool_call.function."
        "arguments, JSON text (json.dumps of the parsed dict, spaced); also as a Python dict "
        "repr in the ToolCall repr of output.value and of later input.value",
        "results: not an attribute of their own: only inside the next LLM span's input.value, "
        'a JSON object {"messages": [<repr str>...], "tools": [<repr str>...]} whose tool '
        "messages are Python reprs ChatMessage(_role=<ChatRole.TOOL: 'tool'>, "
        "_content=[ToolCallResult(result='<the function's dict as JSON text>', "
        "origin=ToolCall(... id='call_a1' ...), error=False)], ...); the last results also in "
        "Agent.run output.value (same repr encoding); llm.input_messages.<i> of a tool message "
        "has only message.role (no content: ChatMessage.text is None for tool results)",
        'error: the failed call is a tool message with ToolCallResult(result="Failed to invoke '
        "Tool `issue_refund` with parameters {...}. Error: payment gateway timeout, please "
        "retry\", ..., error=True) in the next LLM span's input.value (repr); no span has "
        "status ERROR (Agent default raise_on_tool_invocation_failure=False)",
        "user: LLM span llm.input_messages.<i>.message.content with llm.input_messages.<i>."
        "message.role 'user' (flattened indexed keys, the whole history each request); also the "
        "ChatMessage repr in Agent.run input.value / output.value",
        "reply: last LLM span llm.output_messages.0.message.content (role 'assistant'); also "
        "repr in Agent.run output.value ('last_message' and 'messages')",
        "history: each LLM span's llm.input_messages.<i> list the whole conversation (system, "
        "user, assistant, tool...) but assistant tool-call and tool messages have only a role; "
        "turn 2 of e_two_turns lists turn 1's messages too: its llm.input_messages and "
        "input.value reprs (and Agent.run input.value) repeat turn 1's search_flights ToolCall "
        "/ ToolCallResult; only llm.output_messages hold the calls made in that trace",
        "non-deterministic: input.value 'tools' reprs hold the function's memory address "
        "(function=<function ToolBox.functions.<locals>.lookup_order at 0x...>)",
        "no log records",
    ],
}


# --- the run ---------------------------------------------------------------------------------


def _run_scenario(scenario: Scenario) -> list[Any]:
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.dataclasses import ChatMessage, ChatRole
    from haystack.tools import create_tool_from_function
    from haystack.utils import Secret

    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        generator = OpenAIChatGenerator(
            model="scripted-model", api_base_url=model.base_url, api_key=Secret.from_token("k")
        )
        agent = Agent(
            chat_generator=generator,
            tools=[create_tool_from_function(functions[name]) for name in scenario.tools],
            system_prompt=SYSTEM_PROMPT,
        )
        history: list[Any] = []
        for turn in scenario.turns:
            result = agent.run(messages=history + [ChatMessage.from_user(turn.user)])
            expected = turn.steps[-1].text
            if result["last_message"].text != expected:
                raise AssertionError(
                    f"{scenario.name}: reply {result['last_message'].text!r} != {expected!r}"
                )
            # the Agent prepends its rendered system_prompt on every run: pass the rest back
            history = [m for m in result["messages"] if not m.is_from(ChatRole.SYSTEM)]
        agent.close()
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


def record_variant(variant: str) -> None:
    _clear_settings()
    telemetry = dump.Telemetry.install(service=variant)
    # the classes the run uses are in Haystack's component registry before instrument()
    # (the class itself: haystack's packages import their modules lazily, on attribute access)
    from haystack import tracing
    from haystack.components.agents import Agent  # noqa: F401
    from haystack.components.builders import ChatPromptBuilder  # noqa: F401
    from haystack.components.generators.chat import OpenAIChatGenerator  # noqa: F401
    from openinference.instrumentation.haystack import HaystackInstrumentor

    HaystackInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    assert not tracing.is_tracing_enabled()  # Haystack's own tracer stays the NullTracer

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
        t["telemetry_holds"] = _check_holds(folder, scenario, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']}"
        )
    dump.write_versions(
        folder, FRAMEWORK, PACKAGES, f"recordings/record_haystack.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
