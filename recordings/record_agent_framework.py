"""Record Microsoft Agent Framework (Python) with its built-in OpenTelemetry instrumentation.

Run in the virtualenv of ``requirements-agent-framework.txt``::

    cd recordings && /tmp/rec-agent-framework/bin/python record_agent_framework.py

Each variant runs in its own process (the framework reads its observability settings once, into
the module-level ``OBSERVABILITY_SETTINGS``, when ``agent_framework`` is imported):

- ``agent-framework``: sensitive data on (``enable_instrumentation(enable_sensitive_data=True)``),
  every other setting at its default: the "latest experimental" GenAI conventions on spans
  (``gen_ai.input.messages`` / ``gen_ai.output.messages`` / ``gen_ai.tool.call.arguments`` /
  ``gen_ai.tool.call.result``) AND, because ``enable_message_events`` defaults to True, the
  v1.36 message events as OpenTelemetry log records;
- ``agent-framework-nosensitive``: the defaults (sensitive data off);
- ``agent-framework-logs``: sensitive data on with ``OTEL_SEMCONV_STABILITY_OPT_IN=""`` (no
  ``gen_ai_latest_experimental`` token: the framework's documented switch to the v1.36.0
  baseline conventions), so message content is only in the log records (events).

The providers are the harness's in-memory globals (``Telemetry.install()``), set up before
``agent_framework`` is imported; the framework's documented way to use providers set up by
someone else is to enable its instrumentation only (``enable_instrumentation``), never
``configure_otel_providers``.

The agent is ``agent_framework.Agent`` on ``OpenAIChatCompletionClient`` (Chat Completions API)
with ``base_url`` pointed at the scripted model, the ToolBox functions given as plain functions
(``tools=[...]``), non-streaming ``agent.run``; the two turns of ``e_two_turns`` share one
``AgentSession`` (``agent.create_session()``, passed as ``session=``).
"""

from __future__ import annotations

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
from harness.model_server import ScriptedModel  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, truth  # noqa: E402

FRAMEWORK = "agent-framework"
VARIANTS = ("agent-framework", "agent-framework-nosensitive", "agent-framework-logs")
PACKAGES = ("agent-framework", "openai", "opentelemetry-", "protobuf")
INSTRUCTIONS = "You are a helpful assistant. Use the tools."

#: Settings the framework reads from the environment; cleared so the caller's shell can't leak in.
_SETTING_VARS = (
    "ENABLE_INSTRUMENTATION",
    "ENABLE_SENSITIVE_DATA",
    "ENABLE_CONSOLE_EXPORTERS",
    "ENABLE_MESSAGE_EVENTS",
    "OTEL_SEMCONV_STABILITY_OPT_IN",
    "VS_CODE_EXTENSION_PORT",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_MODEL",
    "OPENAI_CHAT_COMPLETION_MODEL",
    "OPENAI_ORG_ID",
)


def _spans_and_logs_json(folder: Path, scenario: str) -> tuple[list[dict], list[dict]]:
    """The raw OTLP/JSON spans and log records written, for the holds checks."""
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


def _check_holds(folder: Path, scenario: Scenario, t: dict) -> dict[str, bool]:
    """What the raw files hold: each fact is looked for where the notes say it is."""
    spans, logs = _spans_and_logs_json(folder, scenario.name)
    span_attrs = [(s["name"], _attrs(s)) for s in spans]
    span_text = json.dumps([a for _, a in span_attrs], ensure_ascii=False)
    # span events (the 'exception' event of a failed tool) and status descriptions
    span_text += json.dumps(
        [[_attrs(e) for e in s.get("events", [])] + [s.get("status", {})] for s in spans],
        ensure_ascii=False,
    )
    log_text = json.dumps(logs, ensure_ascii=False)
    everything = span_text + log_text

    tool_spans = [a for name, a in span_attrs if name.startswith("execute_tool ")]
    calls = all(
        any(
            a.get("gen_ai.tool.name") == c["tool"] and a.get("gen_ai.tool.call.id") == c["call_id"]
            for a in tool_spans
        )
        for c in t["calls"]
    )

    def _args_in(text_blobs: list[str], c: dict) -> bool:
        for blob in text_blobs:
            for cand in _json_values(blob):
                if cand == c["args"]:
                    return True
        return False

    # arguments: the execute_tool span's gen_ai.tool.call.arguments, or a tool_call part /
    # tool_calls[].function.arguments in a message (span attribute or log body)
    blobs = [a.get("gen_ai.tool.call.arguments", "") for a in tool_spans]
    blobs += [
        v
        for _, a in span_attrs
        for k, v in a.items()
        if k in ("gen_ai.input.messages", "gen_ai.output.messages")
    ]
    blobs += _log_strings(logs)
    args = all(_args_in(blobs, c) for c in t["calls"])

    def _result_in(c: dict) -> bool:
        if c["status"] == "error":
            # the error text the tool raised (exception event on the failed execute_tool span)
            return c["error"] in everything
        want = c["result"]
        return any(
            want == v
            for blob in blobs + [a.get("gen_ai.tool.call.result", "") for a in tool_spans]
            for v in _json_values(blob)
        )

    results = all(_result_in(c) for c in t["calls"])
    user = all(
        json.dumps(turn["user"], ensure_ascii=False)[1:-1] in everything for turn in t["turns"]
    )
    reply = all(
        json.dumps(turn["reply"], ensure_ascii=False)[1:-1] in everything for turn in t["turns"]
    )
    return {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}


def _log_strings(logs: list[dict]) -> list[str]:
    """Every string inside the log bodies (arguments / tool results are JSON text there)."""
    out: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "stringValue" in node:
                out.append(node["stringValue"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk([log.get("body", {}) for log in logs])
    return out


def _json_values(blob: Any) -> list[Any]:
    """Every value in a JSON text, recursively decoding JSON strings inside it."""
    if not isinstance(blob, str) or not blob:
        return []
    try:
        root = json.loads(blob)
    except ValueError:
        return []
    found: list[Any] = []

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
                walk(json.loads(node))
            except ValueError:
                pass

    walk(root)
    return found


NOTES = {
    "agent-framework": [
        "settings: enable_instrumentation(enable_sensitive_data=True), other settings default "
        "(latest experimental GenAI semconv on spans, enable_message_events=True)",
        "spans: one trace per agent run: invoke_agent <agent name> (INTERNAL, root) > "
        "chat scripted-model (INTERNAL, one per model request) and execute_tool <tool> "
        "(INTERNAL, one per execution), the execute_tool spans siblings of the chat spans; "
        "no gen_ai.conversation.id (a local AgentSession has no service session id): the two "
        "turns of e_two_turns share only gen_ai.agent.id (a random uuid per Agent)",
        "calls: execute_tool span, gen_ai.tool.name and gen_ai.tool.call.id (the model's call "
        "id), gen_ai.tool.type=function, gen_ai.tool.description (docstring)",
        "args: execute_tool span gen_ai.tool.call.arguments, JSON text (json.dumps, spaced); "
        "also chat span gen_ai.output.messages tool_call parts (arguments as the model's JSON "
        "text string) and gen_ai.choice / gen_ai.assistant.message log bodies",
        "results: execute_tool span gen_ai.tool.call.result, the function's dict as JSON text; "
        "also gen_ai.input.messages tool_call_response parts of the next chat span and "
        "gen_ai.tool.message log bodies",
        "error: the failed execute_tool span has status ERROR (description = repr of "
        "ToolFailed), error.type=ToolFailed and an 'exception' span event with "
        "exception.message; no gen_ai.tool.call.result; the model is sent the framework's "
        "generic 'Error: Function failed.' (include_detailed_errors default False)",
        "user: chat span gen_ai.input.messages and invoke_agent span gen_ai.input.messages, "
        "JSON text [{role:user, parts:[{type:text, content}]}]; also gen_ai.user.message logs",
        "reply: gen_ai.output.messages (JSON text) of the last chat span and of the invoke_agent "
        "span; also gen_ai.choice log body",
        "logs: v1.36 events as log records (event_name gen_ai.system.message / "
        "gen_ai.user.message / gen_ai.assistant.message / gen_ai.tool.message / gen_ai.choice), "
        "structured (kvlist) bodies, trace/span ids of the chat span",
    ],
    "agent-framework-nosensitive": [
        "settings: defaults (instrumentation on, sensitive data off); "
        "enable_instrumentation(enable_sensitive_data=False)",
        "spans: invoke_agent <agent name> (INTERNAL, root) > chat scripted-model (INTERNAL) "
        "and execute_tool <tool> (INTERNAL); gen_ai.tool.definitions (JSON text) still on "
        "invoke_agent; no gen_ai.conversation.id",
        "calls: execute_tool span gen_ai.tool.name and gen_ai.tool.call.id",
        "args: not recorded (no gen_ai.tool.call.arguments, no messages)",
        "results: not recorded (no gen_ai.tool.call.result); the failed call's span has status "
        "ERROR without a description, error.type=ToolFailed, and no exception event",
        "user/reply: not recorded (no gen_ai.input.messages / gen_ai.output.messages, no logs)",
    ],
    "agent-framework-logs": [
        "settings: OTEL_SEMCONV_STABILITY_OPT_IN='' (v1.36.0 baseline conventions) and "
        "enable_instrumentation(enable_sensitive_data=True); message content goes to log records "
        "only",
        "spans: invoke_agent <agent name> (INTERNAL, root) > chat scripted-model (INTERNAL) "
        "and execute_tool <tool> (INTERNAL); no gen_ai.input/output.messages, "
        "gen_ai.system_instructions, gen_ai.tool.definitions or gen_ai.tool.call.arguments/"
        "result on any span; gen_ai.system replaces gen_ai.provider.name",
        "calls: execute_tool span gen_ai.tool.name and gen_ai.tool.call.id; also "
        "gen_ai.choice log body message.tool_calls[] {id, type, function{name, arguments}}",
        "args: log records only: gen_ai.choice body message.tool_calls[].function.arguments "
        "and gen_ai.assistant.message body tool_calls[] (arguments a JSON text string)",
        "results: log records only: gen_ai.tool.message body {id: call id, content: the "
        "function's dict as JSON text}, emitted with the next chat request's input",
        "error: the failed execute_tool span has status ERROR (description = repr of "
        "ToolFailed), error.type=ToolFailed and an 'exception' span event (sensitive on); the "
        "gen_ai.tool.message of that call says 'Error: Function failed.'",
        "user: gen_ai.user.message log body {content}; reply: gen_ai.choice log body "
        "{index, finish_reason, message{content}}",
        "logs: event_name gen_ai.system.message / gen_ai.user.message / "
        "gen_ai.assistant.message / gen_ai.tool.message / gen_ai.choice, attribute "
        "gen_ai.system, trace/span ids of the chat span",
    ],
}


async def _run_scenario(scenario: Scenario) -> list[Any]:
    from agent_framework import Agent
    from agent_framework.openai import OpenAIChatCompletionClient

    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        client = OpenAIChatCompletionClient(
            model="scripted-model", base_url=model.base_url, api_key="k"
        )
        agent = Agent(
            client=client,
            instructions=INSTRUCTIONS,
            name="assistant",
            tools=[functions[name] for name in scenario.tools],
        )
        async with agent:
            session = agent.create_session()
            for turn in scenario.turns:
                response = await agent.run(turn.user, session=session)
                expected = turn.steps[-1].text
                if response.text != expected:
                    raise AssertionError(
                        f"{scenario.name}: reply {response.text!r} != {expected!r}"
                    )
        await client.client.close()  # the AsyncOpenAI it made from base_url/api_key
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


def record_variant(variant: str) -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    if variant == "agent-framework-logs":
        os.environ["OTEL_SEMCONV_STABILITY_OPT_IN"] = ""
    telemetry = dump.Telemetry.install(service=variant)
    from agent_framework.observability import OBSERVABILITY_SETTINGS, enable_instrumentation

    enable_instrumentation(enable_sensitive_data=variant != "agent-framework-nosensitive")
    want_latest = variant != "agent-framework-logs"
    assert OBSERVABILITY_SETTINGS.use_latest_experimental_gen_ai_semconv is want_latest
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
        folder, FRAMEWORK, PACKAGES, f"recordings/record_agent_framework.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
