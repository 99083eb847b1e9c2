"""Record OpenAI Agents handoffs with the OpenInference instrumentation
(openinference-instrumentation-openai-agents).

Run in the virtualenv of ``requirements-openai-agents-multiagent.txt``::

    python3 -m venv /tmp/rec-openai-agents
    /tmp/rec-openai-agents/bin/pip install -r recordings/requirements-openai-agents-multiagent.txt
    cd recordings && /tmp/rec-openai-agents/bin/python record_openai_agents_multiagent.py

Two agents (``harness/multiagent.py``): ``triage``, with the tools and a handoff to
``refunds`` (``Agent(handoffs=[refunds])``: the SDK offers the model a tool
``transfer_to_refunds``), and ``refunds``, with the tools. Both run on
``OpenAIChatCompletionsModel`` with an ``AsyncOpenAI`` client whose ``base_url`` is the scripted
model; ``Runner.run_sync`` per scenario. ``OpenAIAgentsInstrumentor().instrument()`` replaces
the SDK's trace processors with its own (``exclusive_processor``, its default: nothing is sent
to OpenAI's trace backend), which turns the SDK's spans into OpenTelemetry spans on the
harness's in-memory tracer provider; TraceConfig defaults (everything captured).

(The OpenTelemetry contrib instrumentation, opentelemetry-instrumentation-openai-agents-v2
0.1.0, was tried first: it writes ``gen_ai.agent.name='OpenAI Agent'``, its default, on every
tool and model span, and a model response as a Python repr inside one text part, so neither
the agent of a call nor the model's handoff call can be read from it.)

Output: ``tests/data/recorded/openai-agents-multiagent/<scenario>.*`` with a truth file each.
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
from harness.model_server import Call, ScriptedModel  # noqa: E402
from harness.multiagent import REFUNDS, REPLY, SCENARIOS, TRIAGE, MultiScenario, truth  # noqa: E402
from harness.scenarios import REFUND_USER, ToolBox  # noqa: E402

FRAMEWORK = "openai-agents"
VARIANT = "openai-agents-multiagent"
PACKAGES = ("openai", "openinference-", "opentelemetry-", "protobuf")
TOOLS = ("lookup_order", "issue_refund")

NOTES = [
    "spans: one trace per run: 'Agent workflow' root (CHAIN) > an AGENT span per agent turn, "
    "named by the agent (agent.name, graph.node.id), siblings: the agent handed to runs "
    "after the one that handed off > LLM spans ('response', one per model request) and TOOL "
    "spans (the function's name, one per execution)",
    "handoff: the model's call of transfer_to_refunds is in the LLM span's "
    "llm.output_messages.0.message.tool_calls (no TOOL span of that name); the SDK's handoff "
    "span is a TOOL span 'handoff to refunds' under the triage AGENT span, input.value the "
    "source agent, output.value the target; the refunds AGENT span names the source in "
    "graph.node.parent_id",
    "agent: a TOOL span has no agent attribute; its agent is the AGENT span above it",
]


def _handoff_tool(target: str) -> str:
    return f"transfer_to_{target}"


def _handoff_call(target: str, call_id: str) -> Call:
    return Call(name=_handoff_tool(target), args={}, call_id=call_id)


def _tools(box: ToolBox) -> list[Any]:
    from agents import function_tool

    functions = box.functions()
    return [function_tool(functions[name]) for name in TOOLS]


def _run(scenario: MultiScenario) -> list[Any]:
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI

    box = ToolBox()
    with ScriptedModel(scenario.script(_handoff_call)) as model:
        client = AsyncOpenAI(base_url=model.base_url, api_key="k")
        chat = OpenAIChatCompletionsModel(model="scripted-model", openai_client=client)
        refunds = Agent(
            name=REFUNDS, instructions="You issue refunds.", model=chat, tools=_tools(box)
        )
        triage = Agent(
            name=TRIAGE,
            instructions="You triage requests; hand refunds to the refunds agent.",
            model=chat,
            tools=_tools(box),
            handoffs=[refunds],
        )
        result = Runner.run_sync(triage, REFUND_USER)
        if result.final_output != REPLY:
            raise AssertionError(f"{scenario.name}: reply {result.final_output!r}")
        if not model.done():
            raise AssertionError(f"{scenario.name}: not every scripted step was asked for")
    return box.executions


def _raw_check(folder: Path, scenario: str, t: dict[str, Any]) -> dict[str, bool]:
    """What the raw file holds, read as OTLP/JSON (never tooltrail)."""
    spans = []
    for line in (folder / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                spans.extend(ss["spans"])

    def attrs(span: dict[str, Any]) -> dict[str, Any]:
        return {a["key"]: next(iter(a["value"].values()), None) for a in span["attributes"]}

    named = [(s["name"], attrs(s)) for s in spans]
    kind = "openinference.span.kind"
    agents = {a.get("agent.name") for _, a in named if a.get(kind) == "AGENT"}
    handoff_spans = [n for n, a in named if a.get(kind) == "TOOL" and n.startswith("handoff to ")]
    tools = [n for n, a in named if a.get(kind) == "TOOL" and not n.startswith("handoff to ")]
    return {
        "agent_spans": agents >= {c["agent"] for c in t["calls"]},
        "handoff_spans": len(handoff_spans) == len(t["handoffs"]),
        "calls": tools == [c["tool"] for c in t["calls"] if "args" in c],
    }


def main() -> None:
    for name in [n for n in os.environ if n.startswith(("OPENINFERENCE_", "OPENAI_"))]:
        os.environ.pop(name)  # (the caller's shell must not change what is captured)
    telemetry = dump.Telemetry.install(service=VARIANT)
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    folder = dump.RECORDED / VARIANT
    if folder.exists():  # only this script's own folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = _run(scenario)
        from agents import flush_traces

        flush_traces()
        spans, logs = telemetry.take()
        t = truth(
            scenario,
            executions,
            framework=FRAMEWORK,
            variant=VARIANT,
            handoff_tool=_handoff_tool,
            notes=NOTES,
        )
        dump.write(folder, scenario.name, spans, logs, t)
        t["telemetry_holds"] = _raw_check(folder, scenario.name, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(f"{VARIANT}/{scenario.name}: {len(spans)} spans, holds {t['telemetry_holds']}")
    dump.write_versions(
        folder,
        FRAMEWORK,
        ("openai-agents", *PACKAGES),
        "recordings/record_openai_agents_multiagent.py",
    )


if __name__ == "__main__":
    main()
