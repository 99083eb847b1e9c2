"""Record DSPy (``dspy.ReAct``) instrumented by OpenInference
(``openinference-instrumentation-dspy``).

Variant ``dspy-openinference``: ``DSPyInstrumentor().instrument(tracer_provider=...)`` on the
global provider of ``harness.dump.Telemetry``; no LiteLLM instrumentor (DSPy's own docs do not
ask for it; DSPy 3.4 calls the model through its own ``lm15`` engine by default anyway).

DSPy's ReAct does not use native tool calls: its ChatAdapter asks the model for text in DSPy's
field format (``[[ ## next_thought ## ]]``, ``[[ ## next_tool_name ## ]]``,
``[[ ## next_tool_args ## ]]``, ``[[ ## completed ## ]]``), one tool per step, a ``finish`` tool
to end the loop, then one more request (the ``extract`` ChainOfThought: ``reasoning``, ``answer``).
So this script turns each scenario's steps into the text replies DSPy expects, served by the
harness's ``ScriptedModel`` unchanged (each one a ``Reply`` whose text is in DSPy's field format):

- every scripted call -> one ReAct step naming that tool and its arguments (JSON);
- every scripted ``Reply`` -> a ``finish`` step, then the extract step whose ``answer`` is the
  reply text.

``g_parallel_calls``: ReAct picks one tool per step, so the two ``get_weather`` calls are asked
for in two consecutive model responses; the truth is built from a copy of the scenario with the
same tools, arguments and call ids, one call per step (``parallel_group`` None).

``e_two_turns``: turn 2 is a new ``ReAct`` call whose ``history`` input is a ``dspy.History``
made the way DSPy documents it (``History(messages=[{"question": ..., **outputs}])``, the first
turn's prediction: trajectory, reasoning, answer).

Run: ``cd recordings && /tmp/rec-dspy/bin/python record_dspy.py``
"""

import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

# The model-metadata refresh of DSPy/LiteLLM would try the network; use the bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness.dump import RECORDED, Telemetry, write, write_versions  # noqa: E402
from harness.model_server import Calls, Reply, ScriptedModel, Step  # noqa: E402
from harness.scenarios import SCENARIOS, Scenario, TurnScript, truth  # noqa: E402

FRAMEWORK = "dspy"
VARIANT = "dspy-openinference"
PACKAGES = ("dspy", "openinference-", "opentelemetry-", "litellm", "openai", "pydantic", "wrapt")

THOUGHT_CALL = "I will call {name}."
THOUGHT_FINISH = "I have everything I need."
REASONING = "The trajectory holds everything needed for the answer."


def react_step(thought: str, tool: str, args: dict[str, Any]) -> Reply:
    """A ReAct step in ChatAdapter's field format."""
    return Reply(
        f"[[ ## next_thought ## ]]\n{thought}\n\n"
        f"[[ ## next_tool_name ## ]]\n{tool}\n\n"
        f"[[ ## next_tool_args ## ]]\n{json.dumps(args)}\n\n"
        "[[ ## completed ## ]]\n"
    )


def extract_step(answer: str) -> Reply:
    """ReAct's extract step (ChainOfThought: reasoning, then the signature's answer)."""
    return Reply(
        f"[[ ## reasoning ## ]]\n{REASONING}\n\n[[ ## answer ## ]]\n{answer}\n\n"
        "[[ ## completed ## ]]\n"
    )


def one_call_per_step(scenario: Scenario) -> Scenario:
    """The scenario with each model response asking for one call (ReAct's one tool per step)."""
    turns = []
    for turn in scenario.turns:
        steps: list[Step] = []
        for step in turn.steps:
            if isinstance(step, Calls) and len(step.calls) > 1:
                steps.extend(Calls((call,)) for call in step.calls)
            else:
                steps.append(step)
        turns.append(TurnScript(turn.user, tuple(steps)))
    return replace(scenario, turns=tuple(turns))


def dspy_steps(turn: TurnScript) -> list[Step]:
    """The model responses DSPy's ReAct needs for one turn."""
    out: list[Step] = []
    for step in turn.steps:
        if isinstance(step, Calls):
            for call in step.calls:
                out.append(react_step(THOUGHT_CALL.format(name=call.name), call.name, call.args))
        else:
            out.append(react_step(THOUGHT_FINISH, "finish", {}))
            out.append(extract_step(step.text))
    return out


# --- checking what the written file holds (raw OTLP/JSON, no tooltrail) -----------------------


def _value(v: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return int(v["intValue"])
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    return v


def read_spans(path: Path) -> list[dict[str, Any]]:
    spans = []
    for line in path.read_text("utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["attrs"] = {
                        a["key"]: _value(a["value"]) for a in span.get("attributes", [])
                    }
                    spans.append(span)
    spans.sort(key=lambda s: int(s["startTimeUnixNano"]))
    return spans


def check(path: Path, record: dict[str, Any]) -> dict[str, bool]:
    spans = read_spans(path)
    tools = [
        s
        for s in spans
        if s["attrs"].get("openinference.span.kind") == "TOOL" and s["name"] != "finish.__call__"
    ]
    calls = record["calls"]
    names = [s["name"].removesuffix(".__call__") for s in tools] == [c["tool"] for c in calls]
    args = names and all(
        json.loads(s["attrs"]["input.value"]) == {"kwargs": c["args"]}
        for s, c in zip(tools, calls, strict=False)
    )
    results = names
    for s, c in zip(tools, calls, strict=False):
        if c["status"] == "ok":
            results = results and json.loads(s["attrs"]["output.value"]) == c["result"]
        else:
            events = [e for e in s.get("events", []) if e["name"] == "exception"]
            message = (
                {a["key"]: _value(a["value"]) for a in events[0]["attributes"]} if events else {}
            )
            results = (
                results
                and s["status"].get("code") == 2
                and message.get("exception.message") == c["error"]
            )
    roots = [s for s in spans if s["name"] == "ReAct.forward"]
    user = len(roots) == len(record["turns"]) and all(
        json.loads(r["attrs"]["input.value"])["input_args"]["question"] == t["user"]
        for r, t in zip(roots, record["turns"], strict=False)
    )
    reply = len(roots) == len(record["turns"]) and all(
        json.loads(r["attrs"]["output.value"])["answer"] == t["reply"]
        for r, t in zip(roots, record["turns"], strict=False)
    )
    return {
        "calls": bool(names),
        "args": bool(args),
        "results": bool(results),
        "user": bool(user),
        "reply": bool(reply),
    }


NOTES = [
    "DSPy ReAct asks the model for DSPy's field-format text, not native tool calls: the script "
    "serves each scripted call as a ReAct step ([[ ## next_tool_name ## ]] / "
    "[[ ## next_tool_args ## ]] JSON), each scripted reply as a 'finish' step plus ReAct's "
    "extract step (ChainOfThought reasoning + answer); the harness ScriptedModel serves them as "
    "text replies.",
    "Call ids: not recorded anywhere; DSPy ReAct has no call ids (truth call_id is only the "
    "scenario's label).",
    "Tool call: span '<tool>.__call__' (kind INTERNAL, openinference.span.kind=TOOL), child of "
    "the ReAct.forward span; name only in the span name (no tool-name attribute).",
    "Arguments: the tool span's input.value, JSON text of Tool.__call__'s bound arguments: "
    '{"kwargs": {...}} (input.mime_type application/json).',
    "Result: the tool span's output.value, JSON text of the returned value "
    "(output.mime_type application/json).",
    "Tool error: the tool span has status ERROR with the exception message as description, an "
    "'exception' event (exception.type/message/stacktrace) and no output.value; the error text "
    "the model sees (with a Python traceback) is in the next step's trajectory (LLM input).",
    "ReAct's own 'finish' tool runs too: span 'finish.__call__' (TOOL) with input.value "
    '{"kwargs": {}} and output.value "Completed."; it is not a scenario call.',
    "Model step text (tool name/args as the model wrote them): LLM span 'LM.__call__' "
    "(openinference.span.kind=LLM), flattened llm.output_messages.0.message.content and "
    "output.value (JSON list of the completion strings); request messages flattened as "
    "llm.input_messages.<i>.message.role/.content, also input.value (JSON of the call's "
    "arguments: messages, kwargs).",
    "User message: the root span 'ReAct.forward' (CHAIN) input.value, JSON text "
    '{"input_args": {"question": ..., "history": "messages=[...]"}} (the History is '
    "its str(), Python-style text, not JSON); also the Predict/ChainOfThought spans' input.value "
    '{"question": ...} and inside the LLM input messages\' DSPy field-format text '
    "([[ ## question ## ]]).",
    "Not deterministic between runs (besides ids and times): the scripted server's port in "
    "llm.invocation_parameters api_base, the LM object address in ChatAdapter.__call__ "
    "input.value ('<dspy.clients.lm.LM object at 0x...>'), and venv paths in tracebacks.",
    "Reply: the root span 'ReAct.forward' output.value, JSON text of the Prediction "
    '{"trajectory": {...}, "reasoning": ..., "answer": ...}; also the extract step\'s '
    "'ChainOfThought.forward' output.value and the last LLM output text ([[ ## answer ## ]]).",
]

PARALLEL_NOTE = (
    "g_parallel_calls: ReAct picks one tool per step, so the two get_weather calls were asked "
    "for in two consecutive model responses and ran one after the other; the truth is built "
    "from the scenario with one call per step (same tools, arguments, call ids), so "
    "parallel_group is None."
)
TWO_TURNS_NOTE = (
    "e_two_turns: each turn is one ReAct call and one trace; turn 2 gets "
    "history=dspy.History(messages=[{'question': turn-1 question, **turn-1 prediction}]) as DSPy "
    "documents it; there is no session/conversation id attribute linking the two traces. In turn "
    "2 the root input.value history is Python repr text (single quotes) of turn 1's question, "
    "trajectory, reasoning and answer; in the LLM input messages DSPy renders it as a user "
    "message (question + turn-1 trajectory) and an assistant message: the ReAct steps' has "
    "'None' for next_thought/next_tool_name/next_tool_args, the extract step's has turn 1's "
    "reasoning and answer."
)


def record(telemetry: Telemetry, scenario: Scenario) -> None:
    import dspy

    truth_scenario = one_call_per_step(scenario)
    box = scenario.toolbox()
    functions = box.functions()
    steps = [step for turn in truth_scenario.turns for step in dspy_steps(turn)]
    predictions = []
    with ScriptedModel(steps) as model:
        lm = dspy.LM("openai/scripted-model", api_base=model.base_url, api_key="k", cache=False)
        dspy.configure(lm=lm)
        agent = dspy.ReAct(Support, tools=[dspy.Tool(functions[name]) for name in scenario.tools])
        history = dspy.History(messages=[])
        for turn in truth_scenario.turns:
            prediction = agent(question=turn.user, history=history)
            predictions.append(prediction)
            history = dspy.History(
                messages=[*history.messages, {"question": turn.user, **prediction}]
            )
        assert model.done(), f"{scenario.name}: {model.script.position}/{len(steps)} steps used"
    for prediction, turn in zip(predictions, truth_scenario.turns, strict=False):
        expected = next(s.text for s in reversed(turn.steps) if isinstance(s, Reply))
        assert prediction.answer == expected, (prediction.answer, expected)
    spans, logs = telemetry.take()
    notes = list(NOTES)
    if truth_scenario != scenario:
        notes.append(PARALLEL_NOTE)
    if len(scenario.turns) > 1:
        notes.append(TWO_TURNS_NOTE)
    folder = RECORDED / VARIANT
    placeholder = {k: False for k in ("calls", "args", "results", "user", "reply")}
    record_ = truth(
        truth_scenario,
        box.executions,
        framework=FRAMEWORK,
        variant=VARIANT,
        holds=placeholder,
        notes=notes,
    )
    write(folder, scenario.name, spans, logs, record_)
    holds = check(folder / f"{scenario.name}.otlp.jsonl", record_)
    record_ = truth(
        truth_scenario,
        box.executions,
        framework=FRAMEWORK,
        variant=VARIANT,
        holds=holds,
        notes=notes,
    )
    write(folder, scenario.name, spans, logs, record_)
    print(f"{VARIANT}/{scenario.name}: {len(spans)} spans, {len(logs)} logs, holds {holds}")


def main() -> None:
    telemetry = Telemetry.install(VARIANT)
    from openinference.instrumentation.dspy import DSPyInstrumentor

    DSPyInstrumentor().instrument(tracer_provider=telemetry.tracer_provider)
    import dspy

    global Support

    class Support(dspy.Signature):
        """Help the customer."""

        question: str = dspy.InputField()
        history: dspy.History = dspy.InputField()
        answer: str = dspy.OutputField()

    for scenario in SCENARIOS.values():
        record(telemetry, scenario)
    write_versions(
        RECORDED / VARIANT,
        FRAMEWORK,
        PACKAGES,
        "recordings/record_dspy.py: dspy.ReAct + ChatAdapter (default) against the scripted "
        "model (DSPy field-format text replies), "
        "DSPyInstrumentor().instrument(tracer_provider=...)",
    )


if __name__ == "__main__":
    main()
