"""Record Google ADK sub-agents (``transfer_to_agent``) with ADK's own OpenTelemetry spans.

Run in the virtualenv of ``requirements-adk-multiagent.txt``::

    python3 -m venv /tmp/rec-adk
    /tmp/rec-adk/bin/pip install -r recordings/requirements-adk-multiagent.txt
    cd recordings && /tmp/rec-adk/bin/python record_adk_multiagent.py

Two agents (``harness/multiagent.py``): ``triage``, an ``LlmAgent`` with the tools and the
sub-agent ``refunds`` (``sub_agents=[refunds]``: ADK offers the model ``transfer_to_agent``,
whose ``agent_name`` names the target), and ``refunds``, an ``LlmAgent`` with the tools. Both
run on ``LiteLlm`` (ADK's documented way to an OpenAI-compatible server) with ``api_base`` the
scripted model (``LITELLM_LOCAL_MODEL_COST_MAP=True``: LiteLLM reads its bundled cost map, no
download); ``InMemoryRunner.run`` per scenario. ADK writes its spans (scope
``gcp.vertex.agent``) to the global tracer provider, the harness's in-memory one;
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY`` as in the shared corpus.

Output: ``tests/data/recorded/google-adk-multiagent/<scenario>.*`` with a truth file each.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import dump  # noqa: E402
from harness.model_server import Call, ScriptedModel  # noqa: E402
from harness.multiagent import REFUNDS, REPLY, SCENARIOS, TRIAGE, MultiScenario, truth  # noqa: E402
from harness.scenarios import REFUND_USER, ToolBox  # noqa: E402

FRAMEWORK = "google-adk"
VARIANT = "google-adk-multiagent"
PACKAGES = ("google-adk", "google-genai", "litellm", "openai", "opentelemetry-", "protobuf")
TOOLS = ("lookup_order", "issue_refund")
HANDOFF_TOOL = "transfer_to_agent"

NOTES = [
    "spans: one trace per run: 'invocation' root > 'invoke_agent triage' > 'call_llm' per "
    "model request (with the provider's 'generate_content' inside when LiteLLM records one) "
    "and 'execute_tool <name>' per tool execution; after a transfer the refunds agent's "
    "'invoke_agent refunds' span",
    "handoff: the model's transfer_to_agent call is an 'execute_tool transfer_to_agent' span "
    "with gen_ai.agent.name of the agent that called it; its arguments (agent_name) in "
    "gen_ai.tool.call.arguments / gcp.vertex.agent.tool_call_args",
    "agent: gen_ai.agent.name on the invoke_agent and execute_tool spans",
]


def _handoff_call(target: str, call_id: str) -> Call:
    return Call(name=HANDOFF_TOOL, args={"agent_name": target}, call_id=call_id)


def _run(scenario: MultiScenario) -> list[Any]:
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    box = ToolBox()
    functions = box.functions()
    with ScriptedModel(scenario.script(_handoff_call)) as model:

        def llm() -> LiteLlm:
            return LiteLlm(model="openai/scripted-model", api_base=model.base_url, api_key="k")

        refunds = LlmAgent(
            name=REFUNDS,
            model=llm(),
            instruction="You issue refunds.",
            tools=[functions[name] for name in TOOLS],
        )
        triage = LlmAgent(
            name=TRIAGE,
            model=llm(),
            instruction="You triage requests; transfer refunds to the refunds agent.",
            tools=[functions[name] for name in TOOLS],
            sub_agents=[refunds],
        )
        runner = InMemoryRunner(agent=triage, app_name="refunds-app")
        session = runner.session_service.create_session_sync(
            app_name="refunds-app", user_id="user-1"
        )
        message = types.Content(role="user", parts=[types.Part(text=REFUND_USER)])
        texts = []
        for event in runner.run(user_id="user-1", session_id=session.id, new_message=message):
            for part in (event.content.parts if event.content else None) or ():
                if part.text:
                    texts.append(part.text)
        if not texts or texts[-1] != REPLY:
            raise AssertionError(f"{scenario.name}: reply {texts!r}")
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
    spans.sort(key=lambda s: int(s["startTimeUnixNano"]))

    def attrs(span: dict[str, Any]) -> dict[str, Any]:
        return {a["key"]: next(iter(a["value"].values()), None) for a in span["attributes"]}

    tools = [
        (a.get("gen_ai.tool.name"), a.get("gen_ai.agent.name"))
        for a in map(attrs, spans)
        if a.get("gen_ai.operation.name") == "execute_tool"
    ]
    return {"calls_with_agents": tools == [(c["tool"], c["agent"]) for c in t["calls"]]}


def main() -> None:
    telemetry = dump.Telemetry.install(service=VARIANT)
    folder = dump.RECORDED / VARIANT
    if folder.exists():  # only this script's own folder
        shutil.rmtree(folder)
    for scenario in SCENARIOS.values():
        telemetry.take()
        executions = _run(scenario)
        spans, logs = telemetry.take()
        t = truth(
            scenario,
            executions,
            framework=FRAMEWORK,
            variant=VARIANT,
            handoff_tool=lambda target: HANDOFF_TOOL,
            notes=NOTES,
        )
        dump.write(folder, scenario.name, spans, logs, t)
        t["telemetry_holds"] = _raw_check(folder, scenario.name, t)
        dump.write(folder, scenario.name, spans, logs, t)
        print(f"{VARIANT}/{scenario.name}: {len(spans)} spans, holds {t['telemetry_holds']}")
    dump.write_versions(folder, FRAMEWORK, PACKAGES, "recordings/record_adk_multiagent.py")


if __name__ == "__main__":
    main()
