"""Record CrewAI instrumented by OpenInference (``openinference-instrumentation-crewai``, with
``openinference-instrumentation-openai`` for the model requests, as OpenInference's CrewAI
documentation pairs them).

Run in the virtualenv of ``requirements-crewai.txt``::

    cd recordings && /tmp/rec-crewai/bin/python record_crewai.py

Variant ``crewai-openinference``: both instrumentors on the harness's global provider, with
OpenInference's ``TraceConfig`` defaults (no ``OPENINFERENCE_*`` variable: inputs, outputs and
messages captured); CrewAI's own telemetry and tracing off (``CREWAI_DISABLE_TELEMETRY``,
``CREWAI_TRACING_ENABLED=false``), so nothing leaves the machine.

The crew is one ``Agent`` (role ``assistant``) on ``crewai.LLM("openai/scripted-model")`` (the
native OpenAI provider, Chat Completions, ``base_url`` the scripted model; native function
calling), the ToolBox functions as ``@tool`` tools, and one ``Task`` per user message whose
description is that message; ``Crew.kickoff()`` per turn (CrewAI keeps no conversation
between kickoffs: each turn of ``e_two_turns`` is a run of its own).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import ScriptedModel  # noqa: E402
from harness.raw import attrs_of, json_values, spans_of  # noqa: E402
from harness.scenarios import SCENARIOS, Execution, Scenario, truth  # noqa: E402

FRAMEWORK = "crewai"
VARIANT = "crewai-openinference"
PACKAGES = ("crewai", "openinference-", "openai", "opentelemetry-", "protobuf")

for _name in [n for n in os.environ if n.startswith(("OPENINFERENCE_", "OPENAI_", "CREWAI_"))]:
    os.environ.pop(_name)
os.environ["CREWAI_DISABLE_TELEMETRY"] = "true"
os.environ["CREWAI_TRACING_ENABLED"] = "false"
os.environ["OTEL_SDK_DISABLED"] = "false"

NOTES = [
    "settings: OpenInference TraceConfig defaults (everything captured); CrewAI's own "
    "telemetry and tracing off",
]


def _tools(scenario: Scenario, functions: dict[str, Any]) -> list[Any]:
    from crewai.tools import tool

    return [tool(name)(functions[name]) for name in scenario.tools]


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


def _run_scenario(scenario: Scenario) -> list[Execution]:
    from crewai import LLM, Agent, Crew, Task

    box = scenario.toolbox()
    functions = box.functions()
    with ScriptedModel(scenario.steps()) as model:
        llm = LLM(model="openai/scripted-model", base_url=model.base_url, api_key="k")
        agent = Agent(
            role="assistant",
            goal="Help the customer with their request, using the tools.",
            backstory="You are a helpful assistant.",
            tools=_tools(scenario, functions),
            llm=llm,
            allow_delegation=False,
            verbose=False,
        )
        for turn in scenario.turns:
            task = Task(
                description=turn.user, expected_output="The reply to the customer.", agent=agent
            )
            result = Crew(agents=[agent], tasks=[task], verbose=False).kickoff()
            expected = turn.steps[-1].text
            if result.raw != expected:
                raise AssertionError(f"{scenario.name}: reply {result.raw!r} != {expected!r}")
        if not model.done():
            raise AssertionError(
                f"{scenario.name}: {model.script.position} of {len(model.script.steps)} steps used"
            )
    return _in_script_order(scenario, box.executions)


def _check_holds(folder: Path, t: dict) -> dict[str, bool]:
    """What the raw file holds, read as OTLP/JSON (never tooltrail)."""
    spans = spans_of(folder, t["scenario"])
    named = [(s["name"], attrs_of(s)) for s in spans]
    everything = json.dumps([a for _, a in named], ensure_ascii=False)
    tools = [a for _, a in named if a.get("openinference.span.kind") == "TOOL"]
    calls = [a.get("tool.name") for a in tools] == [c["tool"] for c in t["calls"]]
    blobs = [a.get("input.value") for a in tools]
    args = all(any(c["args"] in json_values(b) for b in blobs) for c in t["calls"])
    outputs = " ".join(str(a.get("output.value")) for a in tools)
    results = all(
        c["error"] in everything
        if c["status"] == "error"
        else str(c["result"]) in outputs or json.dumps(c["result"]) in outputs
        for c in t["calls"]
    )
    user = all(json.dumps(turn["user"])[1:-1] in everything for turn in t["turns"])
    reply = all(json.dumps(turn["reply"])[1:-1] in everything for turn in t["turns"])
    return {"calls": calls, "args": args, "results": results, "user": user, "reply": reply}


def main() -> None:
    telemetry = dump.Telemetry.install(service=VARIANT)
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    OpenAIInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    folder = dump.RECORDED / VARIANT
    if folder.exists():  # only this script's own folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = _run_scenario(scenario)
        spans, logs = telemetry.take()
        holds = {"calls": True, "args": True, "results": True, "user": True, "reply": True}
        t = truth(
            scenario, executions, framework=FRAMEWORK, variant=VARIANT, holds=holds, notes=NOTES
        )
        dump.write(folder, scenario.name, spans, logs, t)
        t["telemetry_holds"] = _check_holds(folder, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(f"{VARIANT}/{scenario.name}: {len(spans)} spans, holds {t['telemetry_holds']}")
    dump.write_versions(folder, FRAMEWORK, PACKAGES, "recordings/record_crewai.py")


if __name__ == "__main__":
    main()
