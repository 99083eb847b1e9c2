"""Record LangChain 1.x agents (``langchain.agents.create_agent``, a LangGraph graph) instrumented
by OpenLLMetry (``opentelemetry-instrumentation-langchain``).

Run in the virtualenv of ``requirements-langchain.txt``::

    cd recordings && /tmp/rec-langchain/bin/python record_langchain.py

Each variant runs in its own process:

- ``langchain-openllmetry``: ``LangchainInstrumentor().instrument(...)`` with its defaults
  (``TRACELOOP_TRACE_CONTENT`` unset is on; prompts and completions as span attributes);
- ``langchain-openllmetry-events``: ``LangchainInstrumentor(use_attributes=False)``, the
  instrumentation's switch to message content as OpenTelemetry log events, on the harness's
  logger provider.

The agent is ``create_agent`` on ``ChatOpenAI`` (Chat Completions, ``base_url`` the scripted
model), the ToolBox functions as ``@tool`` tools, ``agent.invoke({"messages": [...]})`` per
turn; the second turn of ``e_two_turns`` is given the first turn's messages and the new user
message (a run of its own: LangChain keeps no conversation without a checkpointer).
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
from harness.raw import attrs_of, json_values, spans_of  # noqa: E402
from harness.scenarios import SCENARIOS, Execution, Scenario, ToolFailed, truth  # noqa: E402

FRAMEWORK = "langchain"
VARIANTS = ("langchain-openllmetry", "langchain-openllmetry-events")
PACKAGES = ("langchain", "langgraph", "openai", "opentelemetry-", "protobuf")
INSTRUCTIONS = "You are a helpful assistant. Use the tools."

for _name in [
    n for n in os.environ if n.startswith(("TRACELOOP_", "OPENAI_", "LANGCHAIN_", "LANGSMITH_"))
]:
    os.environ.pop(_name)

NOTES = {
    "langchain-openllmetry": [
        "settings: LangchainInstrumentor() defaults (content traced, as span attributes)",
    ],
    "langchain-openllmetry-events": [
        "settings: LangchainInstrumentor(use_attributes=False) (content as log events)",
    ],
}


def _in_script_order(scenario: Scenario, executions: list[Execution]) -> list[Execution]:
    """The tool log in the script's call order: parallel calls may run on several threads,
    which log in either order (matched by tool and arguments)."""
    pending = list(executions)
    ordered = []
    for step in scenario.steps():
        for call in getattr(step, "calls", ()):
            found = next((e for e in pending if e.tool == call.name and e.args == call.args), None)
            if found is not None:
                pending.remove(found)
                ordered.append(found)
    return ordered + pending


def _tool(function: Any) -> Any:
    """``function`` as a LangChain tool whose failure the model is told of: a tool reports an
    error to the model by raising ``ToolException`` with ``handle_tool_error`` set (LangChain's
    documented way); the harness's ``ToolFailed`` is raised as one."""
    import functools

    from langchain_core.tools import StructuredTool, ToolException

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ToolFailed as exc:
            raise ToolException(str(exc)) from exc

    return StructuredTool.from_function(run, handle_tool_error=True)


def _run_scenario(scenario: Scenario) -> list[Execution]:
    from langchain.agents import create_agent
    from langchain_openai import ChatOpenAI

    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        chat = ChatOpenAI(model="scripted-model", base_url=model.base_url, api_key="k")
        agent = create_agent(
            model=chat,
            tools=[_tool(functions[name]) for name in scenario.tools],
            system_prompt=INSTRUCTIONS,
        )
        messages: list[Any] = []
        for turn in scenario.turns:
            result = agent.invoke({"messages": [*messages, {"role": "user", "content": turn.user}]})
            messages = result["messages"]
            expected = turn.steps[-1].text
            if messages[-1].content != expected:
                raise AssertionError(f"{scenario.name}: reply {messages[-1].content!r}")
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return _in_script_order(scenario, box.executions)


def _check_holds(folder: Path, t: dict, logs: list[Any]) -> dict[str, bool]:
    """What the raw files hold, read as OTLP/JSON (never tooltrail): each fact anywhere in the
    spans' attributes and the log records' bodies."""
    spans = spans_of(folder, t["scenario"])
    named = [(s["name"], attrs_of(s)) for s in spans]
    texts = [str(v) for _, a in named for v in a.values()]
    path = folder / f"{t['scenario']}.logs.otlp.jsonl"
    if path.exists():
        texts.append(path.read_text("utf-8"))
    everything = "\n".join(texts)
    tools = [a.get("gen_ai.tool.name") for _, a in named if a.get("traceloop.span.kind") == "tool"]
    calls = tools == [c["tool"] for c in t["calls"]]
    blobs = [str(v) for _, a in named for v in a.values()]
    args = all(
        any(c["args"] in json_values(b) for b in blobs) or json.dumps(c["args"]) in everything
        for c in t["calls"]
    )
    values = [v for b in blobs for v in json_values(b)]
    if path.exists():
        for line in path.read_text("utf-8").splitlines():
            values.extend(json_values(line))
    results = all(
        c["error"] in everything if c["status"] == "error" else c["result"] in values
        for c in t["calls"]
    )
    user = all(json.dumps(turn["user"])[1:-1] in everything for turn in t["turns"])
    reply = all(json.dumps(turn["reply"])[1:-1] in everything for turn in t["turns"])
    return {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}


def record_variant(variant: str) -> None:
    telemetry = dump.Telemetry.install(service=variant)
    from opentelemetry.instrumentation.langchain import LangchainInstrumentor

    if variant == "langchain-openllmetry-events":
        LangchainInstrumentor(use_attributes=False).instrument(
            tracer_provider=telemetry.tracer_provider, logger_provider=telemetry.logger_provider
        )
    else:
        LangchainInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
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
        t["telemetry_holds"] = _check_holds(folder, t, logs)
        dump.write(folder, scenario.name, spans, logs, t)
        print(
            f"{variant}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, "
            f"holds {t['telemetry_holds']}"
        )
    dump.write_versions(
        folder, FRAMEWORK, PACKAGES, f"recordings/record_langchain.py (variant {variant})"
    )


def main() -> None:
    if len(sys.argv) > 1:
        record_variant(sys.argv[1])
        return
    for variant in VARIANTS:
        subprocess.run([sys.executable, __file__, variant], check=True)


if __name__ == "__main__":
    main()
