"""Record a plain OpenAI SDK tool-calling loop instrumented by OpenLIT (``openlit.init``).

Run in the virtualenv of ``requirements-openlit.txt``::

    cd recordings && /tmp/rec-openlit/bin/python record_openlit.py

OpenLIT instruments the ``openai`` client (one ``chat <model>`` CLIENT span per
``chat.completions.create``) and, by default, the HTTP clients (httpx, requests, urllib,
urllib3); it does not see tool execution, which is the application's own code. So the agent
loop here is what an application written on the OpenAI SDK does, with its own spans made with
the OpenTelemetry tracer, named and keyed after the GenAI semantic conventions:

- per turn, a root ``invoke_agent <agent>`` span (INTERNAL; ``gen_ai.operation.name`` =
  ``invoke_agent``, ``gen_ai.agent.name``) around a loop of
  ``client.chat.completions.create(model=..., messages=..., tools=[OpenAI tool schemas])``;
  the loop appends the response's ``message`` object (as the OpenAI function-calling guide
  does), runs each tool call it asks for, appends ``{"role": "tool", "tool_call_id",
  "content"}`` (the result as JSON text, or the ``ToolFailed`` message when the tool raises),
  and stops at the text reply;
- per tool execution, an ``execute_tool <tool>`` span (INTERNAL; ``gen_ai.operation.name`` =
  ``execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``gen_ai.tool.type`` =
  ``function``; a failed execution has status ERROR with the exception's message, an
  ``exception`` event and ``error.type``). These spans carry no arguments and no result on
  purpose: content is what OpenLIT records, so the recording measures OpenLIT's encoding.

The second turn of ``e_two_turns`` appends its user message to the same ``messages`` list
under a new ``invoke_agent`` span, so it is a trace of its own.

OpenLIT reuses an SDK ``TracerProvider`` / ``LoggerProvider`` that is already the global one
(``openlit.otel.tracing.setup_tracing`` / ``openlit.otel.events.setup_events``), and then adds
no exporter of its own; so the harness's in-memory providers are installed first and
``openlit.init`` is given no ``otlp_endpoint`` (the OTEL_* variables are cleared), with
``disable_metrics=True`` and ``collect_gpu_stats=False``. Its inference events (log records,
``gen_ai.client.inference.operation.details``) stay on, as by default.

Variants, each in its own process:

- ``openlit-openai``: ``capture_message_content=True`` (the default, passed explicitly);
- ``openlit-openai-nocontent``: ``capture_message_content=False``.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import MODEL, ScriptedModel  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, ToolFailed, truth  # noqa: E402

FRAMEWORK = "openlit"
VARIANTS = ("openlit-openai", "openlit-openai-nocontent")
PACKAGES = ("openlit", "openai", "opentelemetry-", "protobuf", "httpx")
SYSTEM = "You are a helpful assistant. Use the tools."
AGENTS = {
    "a_refund_ok": "refund_agent",
    "f_tool_error_retry": "refund_agent",
    "g_parallel_calls": "weather_agent",
    "e_two_turns": "travel_agent",
}

#: Settings OpenLIT or the OpenAI SDK read from the environment; cleared so the shell can't leak.
_SETTING_VARS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_TRACES_EXPORTER",
    "OTEL_LOGS_EXPORTER",
    "OTEL_METRICS_EXPORTER",
    "OTEL_SERVICE_NAME",
    "OTEL_DEPLOYMENT_ENVIRONMENT",
    "OTEL_RESOURCE_ATTRIBUTES",
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    "OTEL_SEMCONV_STABILITY_OPT_IN",
    "OPENLIT_API_KEY",
    "OPENLIT_URL",
    "OPENLIT_ENVIRONMENT",
    "OPENLIT_APPLICATION_NAME",
    "OPENLIT_SERVICE_NAME",
    "OPENLIT_CAPTURE_MESSAGE_CONTENT",
    "OPENLIT_DISABLED_INSTRUMENTORS",
    "OPENLIT_DISABLE_METRICS",
    "OPENLIT_DISABLE_EVENTS",
    "OPENLIT_DISABLE_BATCH",
    "OPENLIT_COLLECT_GPU_STATS",
    "OPENLIT_COLLECT_SYSTEM_METRICS",
    "OPENLIT_PRICING_JSON",
    "OPENLIT_MAX_CONTENT_LENGTH",
    "OPENLIT_CONTROLLER_MODE",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_ORG_ID",
    "OPENAI_PROJECT_ID",
)

_JSON_TYPES = {str: "string", float: "number", int: "integer", bool: "boolean"}


def tool_schemas(functions: dict[str, Any], names: tuple[str, ...]) -> list[dict[str, Any]]:
    """OpenAI tool schemas of the ToolBox functions (name, docstring, typed parameters)."""
    out = []
    for name in names:
        function = functions[name]
        hints = inspect.get_annotations(function, eval_str=True)
        params = list(inspect.signature(function).parameters)
        out.append(
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
    return out


def _execute(tracer: Any, functions: dict[str, Any], call: Any) -> str:
    """Run one tool call under its ``execute_tool`` span; the tool message's content."""
    from opentelemetry.trace import Status, StatusCode

    name = call.function.name
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            result = functions[name](**json.loads(call.function.arguments))
        except ToolFailed as exc:
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            return str(exc)
        return json.dumps(result)


def run_scenario(scenario: Scenario) -> list[Any]:
    from openai import OpenAI
    from opentelemetry import trace

    tracer = trace.get_tracer("recordings.openai-agent-loop")
    agent = AGENTS[scenario.name]
    box = scenario.toolbox()
    functions = box.functions()
    tools = tool_schemas(functions, scenario.tools)
    with ScriptedModel(scenario.steps()) as model:
        client = OpenAI(base_url=model.base_url, api_key="k", max_retries=0)
        messages: list[Any] = [{"role": "system", "content": SYSTEM}]
        for turn in scenario.turns:
            with tracer.start_as_current_span(
                f"invoke_agent {agent}",
                attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent},
            ):
                messages.append({"role": "user", "content": turn.user})
                while True:
                    response = client.chat.completions.create(
                        model=MODEL, messages=messages, tools=tools
                    )
                    message = response.choices[0].message
                    messages.append(message)
                    if not message.tool_calls:
                        break
                    for call in message.tool_calls:
                        content = _execute(tracer, functions, call)
                        messages.append(
                            {"role": "tool", "tool_call_id": call.id, "content": content}
                        )
                if message.content != turn.steps[-1].text:
                    raise AssertionError(f"{scenario.name}: reply {message.content!r}")
        client.close()
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return box.executions


# ----------------------------------------------------------------------------- holds checks


def _raw(folder: Path, scenario: str) -> tuple[list[dict], list[dict]]:
    """The raw OTLP/JSON spans and log records written."""
    spans: list[dict] = []
    for line in (folder / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
    logs: list[dict] = []
    path = folder / f"{scenario}.logs.otlp.jsonl"
    if path.exists():
        for line in path.read_text("utf-8").splitlines():
            for rl in json.loads(line).get("resourceLogs", []):
                for sl in rl.get("scopeLogs", []):
                    logs.extend(sl.get("logRecords", []))
    return spans, logs


def _value(v: dict) -> Any:
    """An OTLP/JSON AnyValue as Python."""
    if "kvlistValue" in v:
        return {kv["key"]: _value(kv.get("value", {})) for kv in v["kvlistValue"].get("values", [])}
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    return next(iter(v.values()), None) if v else None


def _attrs(item: dict) -> dict[str, Any]:
    return {kv["key"]: _value(kv.get("value", {})) for kv in item.get("attributes", [])}


def _messages(spans: list[dict], logs: list[dict]) -> tuple[list[dict], list[dict]]:
    """(input messages, output messages) of every chat span (``gen_ai.input.messages`` /
    ``gen_ai.output.messages``, JSON text) and every inference event (the same keys as
    structured log attributes)."""
    sent: list[dict] = []
    answered: list[dict] = []
    for item in [*spans, *logs]:
        a = _attrs(item)
        for key, into in (("gen_ai.input.messages", sent), ("gen_ai.output.messages", answered)):
            value = a.get(key)
            if isinstance(value, str):
                value = json.loads(value)
            if isinstance(value, list):
                into.extend(value)
    return sent, answered


def _joined_json(text: str) -> list[Any]:
    """The JSON values of a ``", "``-joined string of JSON texts (``gen_ai.tool.args``)."""
    decoder = json.JSONDecoder()
    values, at = [], 0
    while at < len(text):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
        while at < len(text) and text[at] in ", ":
            at += 1
    return values


def _check_holds(folder: Path, scenario: Scenario, t: dict) -> tuple[dict[str, bool], dict]:
    spans, logs = _raw(folder, scenario.name)
    sent, answered = _messages(spans, logs)
    parts_out = [p for m in answered for p in m.get("parts", [])]
    parts_in = [p for m in sent for p in m.get("parts", [])]
    asked = [p for p in parts_out + parts_in if p.get("type") == "tool_call"]
    typed = [(s, _attrs(s)) for s in spans]

    # 1. the messages (gen_ai.output.messages tool_call parts: id, name, arguments object)
    def asked_for(c: dict, with_args: bool) -> bool:
        return any(
            p.get("id") == c["call_id"]
            and p.get("name") == c["tool"]
            and (not with_args or p.get("arguments") == c["args"])
            for p in asked
        )

    # 2. the chat spans' gen_ai.tool.name / gen_ai.tool.call.id / gen_ai.tool.args, each the
    # response's tool calls joined with ", " (written whatever capture_message_content says)
    flat = []
    for _, a in typed:
        if a.get("gen_ai.operation.name") == "chat" and "gen_ai.tool.call.id" in a:
            names = a["gen_ai.tool.name"].split(", ")
            ids = a["gen_ai.tool.call.id"].split(", ")
            args = _joined_json(a["gen_ai.tool.args"])
            flat += list(zip(names, ids, args, strict=True))
    flat_ok = flat == [(c["tool"], c["call_id"], c["args"]) for c in t["calls"]]

    # 3. the application's execute_tool spans (name, call id; status ERROR on the failure)
    tool_spans = [(s, a) for s, a in typed if a.get("gen_ai.operation.name") == "execute_tool"]
    tool_spans_ok = [
        (a.get("gen_ai.tool.name"), a.get("gen_ai.tool.call.id"), s.get("status", {}).get("code"))
        for s, a in tool_spans
    ] == [(c["tool"], c["call_id"], 2 if c["status"] == "error" else None) for c in t["calls"]]

    def result_sent(c: dict) -> bool:
        for p in parts_in:
            if p.get("type") != "tool_call_response" or p.get("id") != c["call_id"]:
                continue
            if c["status"] == "error" and p.get("response") == c["error"]:
                return True
            if c["status"] == "ok" and json.loads(p["response"]) == c["result"]:
                return True
        return False

    def text_of(m: dict) -> list[str]:
        return [p.get("content") for p in m.get("parts", []) if p.get("type") == "text"]

    messages_calls = all(asked_for(c, False) for c in t["calls"])
    messages_args = all(asked_for(c, True) for c in t["calls"])
    detail = {
        "calls_in_messages": messages_calls,
        "args_in_messages": messages_args,
        "chat_span_gen_ai.tool.*": flat_ok,
        "execute_tool_spans": tool_spans_ok,
        "log_records": len(logs),
    }
    holds = {
        "calls": messages_calls or flat_ok or tool_spans_ok,
        "args": messages_args or flat_ok,
        "results": all(result_sent(c) for c in t["calls"]),
        "user": all(
            any(m.get("role") == "user" and turn["user"] in text_of(m) for m in sent)
            for turn in t["turns"]
        ),
        "reply": all(any(turn["reply"] in text_of(m) for m in answered) for turn in t["turns"]),
    }
    return holds, detail


_SPANS = (
    "spans: one trace per turn: the application's 'invoke_agent <agent>' (INTERNAL, root, "
    "gen_ai.operation.name=invoke_agent, gen_ai.agent.name; no conversation/session id) > per "
    "model request 'chat scripted-model' (CLIENT, scope openlit.instrumentation.openai, "
    "gen_ai.operation.name=chat, gen_ai.provider.name=openai, status OK) > 'POST' (CLIENT, scope "
    "opentelemetry.instrumentation.httpx, http.method/http.url/http.status_code: OpenLIT "
    "enables the HTTP client instrumentations by default); and per tool execution the "
    "application's 'execute_tool <tool>' (INTERNAL, child of invoke_agent, sibling of the chat "
    "spans; gen_ai.operation.name=execute_tool, gen_ai.tool.name, gen_ai.tool.call.id, "
    "gen_ai.tool.type=function; no arguments, no result; status UNSET when it succeeds); "
    "parallel calls run one after the other, two sibling execute_tool spans"
)
_FLAT = (
    "calls/args (any capture setting): the chat span of a tool-calling response has OpenLIT's "
    "gen_ai.tool.name, gen_ai.tool.call.id and gen_ai.tool.args, each the response's tool "
    "calls joined with ', ' (common_chat_logic in openlit/instrumentation/openai/utils.py): "
    "g_parallel_calls 'get_weather, get_weather' / 'call_g1, call_g2' / "
    '\'{"city": "Paris"}, {"city": "London"}\' (the model\'s argument JSON texts '
    "joined); a text-only response's chat span has none of these keys"
)
_ERROR = (
    "error: the failed call's execute_tool span has status ERROR with description = the "
    "exception text ('payment gateway timeout, please retry'), error.type='ToolFailed' and an "
    "'exception' event (exception.type/message/stacktrace); OpenLIT's chat spans do not mark "
    "it: the loop sends the model the exception text as the tool message content"
)
_SETTINGS = (
    "settings: openlit.init(capture_message_content=%s, disable_metrics=True, "
    "collect_gpu_stats=False, pricing_json=<an empty local price list>) after the harness's "
    "global SDK TracerProvider/LoggerProvider are installed (OpenLIT reuses them, adds no "
    "exporter); no OTEL_*/OPENLIT_* variable set; events on (the default); the application "
    "loop is the plain OpenAI SDK (client.chat.completions.create, non-streaming, tools=)"
)
_LOGS = (
    "logs: one log record per model request, event_name "
    "'gen_ai.client.inference.operation.details', scope openlit.instrumentation.openai, body "
    "'' and trace/span id of the chat span; attributes gen_ai.operation.name, "
    "gen_ai.request/response.model, server.*, gen_ai.response.id/finish_reasons, usage, "
    "request parameters, openlit.agent.version_hash and gen_ai.tool.definitions (structured: "
    "array of kvlist {type, name, description, parameters})"
)

NOTES: dict[str, list[str]] = {
    "openlit-openai": [
        _SETTINGS % "True",
        _SPANS,
        "calls: chat span gen_ai.output.messages, JSON text [{role: assistant, parts: [{type: "
        "tool_call, id: call id, name, arguments: OBJECT (OpenLIT json.loads the model's "
        "argument text)}], finish_reason: 'tool_call'}]; one part per call (two parts in "
        "g_parallel_calls); also the execute_tool spans (name, call id)",
        _FLAT,
        "args: the tool_call parts' arguments object in gen_ai.output.messages (JSON), and "
        "gen_ai.tool.args (joined JSON texts)",
        "results: the NEXT chat span's gen_ai.input.messages {role: tool, parts: [{type: "
        "tool_call_response, id: call id, response: the loop's json.dumps of the result (JSON "
        "text inside the JSON text)}]}; no tool name on it; nothing on the execute_tool span",
        _ERROR,
        "user: chat span gen_ai.input.messages {role: user, parts: [{type: text, content}]}; "
        "nothing on the invoke_agent span",
        "reply: the last chat span's gen_ai.output.messages [{role: assistant, parts: [{type: "
        "text, content}], finish_reason: stop}]; nothing on the invoke_agent span",
        "history: gen_ai.input.messages is the whole request MINUS the assistant messages that "
        "only asked for tool calls (OpenLIT's build_input_messages keeps a message only when it "
        "has text parts; tool_calls of input messages are never read): system, user, tool "
        "responses, assistant text replies; turn 2 of e_two_turns repeats turn 1 that way",
        "system prompt: chat span gen_ai.system_instructions JSON text [{type: text, content}] "
        "(and the system message in gen_ai.input.messages)",
        _LOGS + "; with content: gen_ai.input.messages / gen_ai.output.messages / "
        "gen_ai.system_instructions as STRUCTURED values (array of kvlist, tool_call "
        "arguments a kvlist), the same content as the span attributes",
        "no span events (OpenLIT writes no gen_ai.content.prompt/completion events in this "
        "version); tools offered are not on the span (only in the log record)",
    ],
    "openlit-openai-nocontent": [
        _SETTINGS % "False",
        _SPANS,
        "content: the chat spans have no gen_ai.input.messages, gen_ai.output.messages or "
        "gen_ai.system_instructions; no redaction marker (the keys are absent)",
        _FLAT + "; so tool names, call ids and ARGUMENTS stay recorded with content capture "
        "off, only here (and the execute_tool spans' name/call id)",
        "results/user/reply: not recorded anywhere",
        _ERROR,
        _LOGS + "; gen_ai.input.messages / gen_ai.output.messages present as EMPTY arrays, no "
        "gen_ai.system_instructions; gen_ai.tool.definitions still there",
    ],
}


def record_variant(variant: str) -> None:
    for name in _SETTING_VARS:
        os.environ.pop(name, None)
    telemetry = dump.Telemetry.install(service=variant)
    import openlit

    content = variant == "openlit-openai"
    # OpenLIT fetches a model price list from the network unless given one: an empty local
    # list (no network; gen_ai.usage.cost is then 0)
    pricing = Path(tempfile.mkdtemp()) / "pricing.json"
    pricing.write_text('{"chat": {}}', "utf-8")
    openlit.init(
        capture_message_content=content,
        disable_metrics=True,
        collect_gpu_stats=False,
        pricing_json=str(pricing),
    )
    from openlit._config import OpenlitConfig

    assert OpenlitConfig.capture_message_content is content
    folder = dump.RECORDED / variant
    if folder.exists():  # only this script's own variant folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = run_scenario(scenario)
        spans, logs = telemetry.take()
        # calls and arguments are recorded with content capture off too (the chat span's
        # gen_ai.tool.name / gen_ai.tool.call.id / gen_ai.tool.args, and the tool spans)
        holds = {"calls": True, "args": True, "results": content, "user": content, "reply": content}
        t = truth(
            scenario,
            executions,
            framework=FRAMEWORK,
            variant=variant,
            holds=holds,
            notes=NOTES[variant],
        )
        dump.write(folder, scenario.name, spans, logs, t)
        checked, detail = _check_holds(folder, scenario, t)
        if checked != holds:
            print(f"{variant}/{scenario.name}: expected holds {holds}, file holds {checked}")
        t["telemetry_holds"] = checked
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {checked} {detail}"
        )
    dump.write_versions(
        folder, FRAMEWORK, PACKAGES, f"recordings/record_openlit.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
