"""Record LiteLLM with its OpenTelemetry callback (``litellm.callbacks = ["otel"]``).

Run in the virtualenv of ``requirements-litellm.txt``::

    cd recordings && /tmp/rec-litellm/bin/python record_litellm.py

LiteLLM is not an agent framework: the agent loop is written here the way LiteLLM's
function-calling docs write it. Per turn, an application span (``agent run``, made with the
OpenTelemetry tracer, the way a LiteLLM user wraps a unit of work) is the current span around a
loop of ``litellm.completion(model="openai/scripted-model", api_base=..., api_key="k",
messages=..., tools=[OpenAI tool schemas])``; the loop appends the response's ``message`` (the
LiteLLM ``Message`` object, as the docs do), runs every tool call it asks for with the ToolBox
function, appends ``{"tool_call_id", "role": "tool", "name", "content"}`` (the result as JSON
text, or the ``ToolFailed`` message when the tool raises), and stops at the text reply. No tool
span is made here: what is recorded is what LiteLLM's callback records. The second turn of
``e_two_turns`` appends its user message to the same ``messages`` list (LiteLLM keeps no
history of its own) under a new ``agent run`` span, so it is a trace of its own.

Variants, each in its own process:

- ``litellm-otel``: message logging on (the default);
- ``litellm-otel-nologging``: ``litellm.turn_off_message_logging = True``.

LiteLLM's ``OpenTelemetry`` logger reuses the global tracer provider when one is an SDK
``TracerProvider`` (``_get_or_create_provider``), so the harness's in-memory global provider is
installed before ``litellm.callbacks = ["otel"]``; no LiteLLM exporter setting is used (the
OTEL_EXPORTER / OTEL_ENDPOINT variables are cleared and are only read when LiteLLM must make a
provider itself).

LiteLLM runs a sync ``completion``'s success callbacks in a background thread pool
(``litellm-logging``), so they may still be running when the loop goes on (or when the
application span ends: the otel callback then writes onto an ended span and its attributes are
lost). To record deterministically, the loop waits after each completion for a tiny
``CustomLogger`` registered after ``"otel"`` in ``litellm.callbacks`` (callbacks run in list
order on the same thread), which only sets an event; it records nothing.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import ScriptedModel  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, ToolFailed, truth  # noqa: E402

FRAMEWORK = "litellm"
VARIANTS = ("litellm-otel", "litellm-otel-nologging")
PACKAGES = ("litellm", "openai", "opentelemetry-", "protobuf", "httpx")
SYSTEM = "You are a helpful assistant. Use the tools."
APP_SPAN = "agent run"

#: Settings LiteLLM's otel logger reads from the environment; cleared so the shell can't leak in.
_SETTING_VARS = (
    "OTEL_EXPORTER",
    "OTEL_ENDPOINT",
    "OTEL_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_SERVICE_NAME",
    "OTEL_ENVIRONMENT_NAME",
    "OTEL_MODEL_ID",
    "OTEL_TRACER_NAME",
    "OTEL_IGNORE_CONTEXT_PROPAGATION",
    "OTEL_SEMCONV_STABILITY_OPT_IN",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "OTEL_RESOURCE_ATTRIBUTES",
    "USE_OTEL_LITELLM_REQUEST_SPAN",
    "LITELLM_OTEL_INTEGRATION_ENABLE_EVENTS",
    "LITELLM_OTEL_INTEGRATION_ENABLE_METRICS",
    "DEBUG_OTEL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_API_BASE",
)

_JSON_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean"}


def tool_schemas(functions: dict[str, Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """OpenAI tool schemas of the ToolBox functions (name, docstring, typed parameters)."""
    schemas = []
    for name in names:
        function = functions[name]
        hints = inspect.get_annotations(function, eval_str=True)
        params = list(inspect.signature(function).parameters)
        schemas.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": inspect.getdoc(function),
                    "parameters": {
                        "type": "object",
                        "properties": {p: {"type": _JSON_TYPES[hints[p]]} for p in params},
                        "required": params,
                    },
                },
            }
        )
    return schemas


def _signal_class() -> type:
    from litellm.integrations.custom_logger import CustomLogger

    class LoggedSignal(CustomLogger):
        """Sets an event once the callbacks before it in ``litellm.callbacks`` have run."""

        def __init__(self) -> None:
            super().__init__()
            self.event = threading.Event()

        def log_success_event(self, kwargs, response_obj, start_time, end_time):  # noqa: ANN001
            self.event.set()

        def log_failure_event(self, kwargs, response_obj, start_time, end_time):  # noqa: ANN001
            self.event.set()

    return LoggedSignal


def run_scenario(
    scenario: Scenario, signal: Any, telemetry: dump.Telemetry, logging_on: bool
) -> list[Any]:
    import litellm
    from opentelemetry import trace

    tracer = trace.get_tracer("recordings.litellm-agent")
    box = scenario.toolbox()
    functions = box.functions()
    tools = tool_schemas(functions, scenario.tools)
    completions = 0
    with ScriptedModel(scenario.steps()) as model:
        messages: list[Any] = [{"role": "system", "content": SYSTEM}]
        for turn in scenario.turns:
            with tracer.start_as_current_span(APP_SPAN):
                messages.append({"role": "user", "content": turn.user})
                while True:
                    signal.event.clear()
                    response = litellm.completion(
                        model="openai/scripted-model",
                        api_base=model.base_url,
                        api_key="k",
                        messages=messages,
                        tools=tools,
                    )
                    completions += 1
                    if not signal.event.wait(30):
                        raise AssertionError("litellm's success callbacks did not run")
                    if logging_on:  # the otel callback is done: its raw span has ended
                        raw = [
                            s
                            for s in telemetry.spans.get_finished_spans()
                            if s.name == "raw_gen_ai_request"
                        ]
                        assert len(raw) == completions, (len(raw), completions)
                    message = response.choices[0].message
                    messages.append(message)
                    if not message.tool_calls:
                        break
                    for call in message.tool_calls:
                        function = functions[call.function.name]
                        try:
                            content = json.dumps(function(**json.loads(call.function.arguments)))
                        except ToolFailed as exc:
                            content = str(exc)
                        messages.append(
                            {
                                "tool_call_id": call.id,
                                "role": "tool",
                                "name": call.function.name,
                                "content": content,
                            }
                        )
                if message.content != turn.steps[-1].text:
                    raise AssertionError(f"{scenario.name}: reply {message.content!r}")
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


# ----------------------------------------------------------------------------- holds checks


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


def _messages(spans: list[dict]) -> tuple[list[dict], list[dict]]:
    """(request messages, response messages) from every span, decoded where they are:
    raw_gen_ai_request ``llm.openai.messages`` / ``llm.openai.choices`` (Python repr) and the
    application span's ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON text)."""
    sent: list[dict] = []
    answered: list[dict] = []
    for span in spans:
        a = _attrs(span)
        if "llm.openai.messages" in a:
            sent += ast.literal_eval(a["llm.openai.messages"])
        if "llm.openai.choices" in a:
            answered += [c["message"] for c in ast.literal_eval(a["llm.openai.choices"])]
        if "gen_ai.input.messages" in a:
            sent += json.loads(a["gen_ai.input.messages"])
        if "gen_ai.output.messages" in a:
            answered += json.loads(a["gen_ai.output.messages"])
    return sent, answered


def _text(message: dict) -> str | None:
    if isinstance(message.get("content"), str):
        return message["content"]
    parts = [p.get("content") for p in message.get("parts", []) if p.get("type") == "text"]
    return parts[0] if len(parts) == 1 else None


def check_holds(folder: Path, scenario: Scenario, t: dict) -> dict[str, bool]:
    spans = _spans_json(folder, scenario.name)
    sent, answered = _messages(spans)
    asked = [tc for m in answered + sent for tc in (m.get("tool_calls") or [])]

    def asked_for(c: dict, with_args: bool) -> bool:
        return any(
            tc.get("id") == c["call_id"]
            and tc["function"]["name"] == c["tool"]
            and (not with_args or json.loads(tc["function"]["arguments"]) == c["args"])
            for tc in asked
        )

    def result_sent(c: dict) -> bool:
        for m in sent:
            if m.get("role") != "tool" or m.get("tool_call_id") != c["call_id"]:
                continue
            text = _text(m)
            if c["status"] == "error":
                if text == c["error"]:
                    return True
            elif text is not None and json.loads(text) == c["result"]:
                return True
        return False

    return {
        "calls": all(asked_for(c, False) for c in t["calls"]),
        "args": all(asked_for(c, True) for c in t["calls"]),
        "results": all(result_sent(c) for c in t["calls"]),
        "user": all(
            any(m.get("role") == "user" and _text(m) == turn["user"] for m in sent)
            for turn in t["turns"]
        ),
        "reply": all(any(_text(m) == turn["reply"] for m in answered) for turn in t["turns"]),
    }


NOTES = {
    "litellm-otel": [
        "settings: litellm.callbacks=['otel'], message logging on (the default); LiteLLM's "
        "OpenTelemetry logger reuses the global SDK TracerProvider; default (non-latest) GenAI "
        "semconv mode, no log records (LITELLM_OTEL_INTEGRATION_ENABLE_EVENTS off), no metrics",
        "spans: one trace per turn: the application's 'agent run' (INTERNAL, root, made by the "
        "recording script's loop) > one 'raw_gen_ai_request' (INTERNAL, scope 'litellm') per "
        "model request; no litellm_request span (LiteLLM makes one only when there is no current "
        "span) and no tool span of any kind (tool execution is the user's loop)",
        "overwritten: LiteLLM writes its request/response attributes onto the CURRENT span, the "
        "application span, on every completion, so 'agent run' keeps only the LAST request's "
        "gen_ai.input.messages / gen_ai.output.messages / gen_ai.response.id / usage etc.; "
        "keys that the last call does not write stay from an earlier call: "
        "gen_ai.completion.<i>.function_call.name/arguments of the last tool-calling response "
        "remain beside the final text reply's gen_ai.output.messages",
        "calls: raw_gen_ai_request llm.openai.choices, Python repr (str of a list of dicts) "
        "[{'finish_reason', 'index', 'message': {'content', 'role', 'tool_calls': [{'id': "
        "call id, 'function': {'arguments', 'name'}, 'type'}]}}]; also the next request's "
        "llm.openai.messages assistant entries; on the application span only "
        "gen_ai.completion.<i>.function_call.name (tool-call index i, no call id, last "
        "tool-calling response only)",
        "args: the 'arguments' string (the model's JSON text) inside llm.openai.choices / "
        "llm.openai.messages tool_calls (Python repr around JSON text); application span "
        "gen_ai.completion.<i>.function_call.arguments (JSON text, last tool-calling response)",
        "results: the next raw_gen_ai_request's llm.openai.messages {'role': 'tool', "
        "'tool_call_id', 'name', 'content': the loop's json.dumps of the result}; also the "
        "application span's gen_ai.input.messages (JSON text, last request of the turn) "
        "{role: tool, parts: [{type: text, content}], tool_call_id}",
        "error: nothing marks a failed tool (no tool span, no status); the failure is only the "
        "tool message content the loop sent: 'payment gateway timeout, please retry'",
        "user: llm.openai.messages {'role': 'user', 'content'} (every request) and the "
        "application span gen_ai.input.messages {role: user, parts: [{type: text, content}]}",
        "reply: the last raw_gen_ai_request's llm.openai.choices message content; application "
        "span gen_ai.output.messages [{role: assistant, parts: [{type: text, content}], "
        "finish_reason: stop}] (JSON text)",
        "history: llm.openai.messages is the whole request (system, user, assistant tool_calls, "
        "tool messages); gen_ai.input.messages drops the assistant messages' tool_calls (the "
        "loop appends LiteLLM Message objects, as LiteLLM's docs do, and LiteLLM's otel "
        "transform only copies tool_calls from dicts): they appear as {role: assistant, "
        "parts: []}",
        "turns: e_two_turns is two traces with no shared id (no session/conversation "
        "attribute); the second request history repeats turn 1",
        "tools offered: application span llm.request.functions.<i>.name/description/parameters "
        "(flattened indexed keys, parameters JSON text); raw span llm.openai.tools (Python repr)",
    ],
    "litellm-otel-nologging": [
        "settings: litellm.callbacks=['otel'] with litellm.turn_off_message_logging=True "
        "(LiteLLM's documented redaction switch; the otel logger's capture mode becomes "
        "NO_CONTENT)",
        "spans: one trace per turn with ONLY the application's 'agent run' span (INTERNAL, "
        "root): no raw_gen_ai_request span (only made when content is captured), no "
        "litellm_request span, no tool span",
        "recorded on 'agent run' (overwritten per completion, last one wins): gen_ai.system, "
        "gen_ai.request.model, gen_ai.response.id/model, gen_ai.usage.*, litellm.call_id, "
        "litellm.provider.model, llm.request.type, llm.is_streaming, hidden_params (JSON), "
        "metadata.* (empty)",
        "calls/args/results/user/reply: not recorded anywhere: no gen_ai.input/output.messages, "
        "no gen_ai.completion.<i>.function_call.*, no llm.request.functions.*, no finish "
        "reasons; no redaction marker (the keys are simply absent)",
    ],
}


def record_variant(variant: str) -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # no network fetch of the cost map
    telemetry = dump.Telemetry.install(service=variant)
    import litellm

    logging_on = variant == "litellm-otel"
    litellm.turn_off_message_logging = not logging_on
    signal = _signal_class()()
    litellm.callbacks = ["otel", signal]

    folder = dump.RECORDED / variant
    if folder.exists():  # only this script's own variant folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = run_scenario(scenario, signal, telemetry, logging_on)
        spans, logs = telemetry.take()
        holds = {
            "calls": logging_on,
            "args": logging_on,
            "results": logging_on,
            "user": logging_on,
            "reply": logging_on,
        }
        t = truth(
            scenario,
            executions,
            framework=FRAMEWORK,
            variant=variant,
            holds=holds,
            notes=NOTES[variant],
        )
        dump.write(folder, scenario.name, spans, logs, t)
        checked = check_holds(folder, scenario, t)
        if checked != holds:
            print(f"{variant}/{scenario.name}: expected holds {holds}, file holds {checked}")
        t["telemetry_holds"] = checked
        dump.write(folder, scenario.name, spans, logs, t)
        print(f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, holds {checked}")
    dump.write_versions(
        folder, FRAMEWORK, PACKAGES, f"recordings/record_litellm.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
