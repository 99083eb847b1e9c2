"""The frameworks recorded in ``tests/data/recorded`` (``recordings/``: LiteLLM's otel callback,
Agno, DSPy, Haystack, smolagents, LlamaIndex, LangGraph and CrewAI via OpenInference, Microsoft
Agent Framework, AutoGen and Semantic Kernel by their own telemetry, the OpenAI Agents SDK by
the OpenTelemetry contrib instrumentation, LangChain agents by OpenLLMetry, a plain OpenAI loop
under OpenLIT), read by
``tooltrail convert`` and ``convert --content`` on both reading paths and both formats, against
the truth their recording scripts wrote: every call, argument, result, user message and reply
the telemetry holds (``telemetry_holds``) is read, and no redaction marker is ever a value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from core_paths import HAVE_CORE, reading_with
from fixtures import DATA, RECORDED_GAPS

from tooltrail.cli import main
from tooltrail.convert import engine as core
from tooltrail.convert import read_traces
from tooltrail.dialects.values import PLACEHOLDERS

RECORDED = DATA / "recorded"
#: (The multi-agent recordings' truth says which agent made each call and which handoffs
#: happened: ``tests/checks/test_handoffs.py`` holds them to it.)
SCENARIOS = sorted(
    p for p in RECORDED.glob("*/*.truth.json") if not p.parent.name.endswith("-multiagent")
)
PATHS = [core.PYTHON, core.CORE] if HAVE_CORE else [core.PYTHON]
#: Markers an instrumentation writes for hidden content (``values.placeholders``), the empty
#: string aside: none may be the value of anything ``convert --content`` prints.
MARKERS = sorted(p for p in PLACEHOLDERS if p.strip())


def _scenario(path: Path) -> Any:
    gap = RECORDED_GAPS.get(path.parent.name)
    if gap is None:
        return path
    return pytest.param(path, marks=pytest.mark.xfail(strict=True, reason=gap))


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name[: -len('.truth.json')]}"


def _inputs(truth_path: Path, fmt: str) -> list[str]:
    stem = truth_path.name[: -len(".truth.json")]
    files = [truth_path.with_name(f"{stem}.otlp.{fmt}")]
    logs = truth_path.with_name(f"{stem}.logs.otlp.{fmt}")
    return [str(p) for p in files + ([logs] if logs.exists() else [])]


def _convert(monkeypatch: pytest.MonkeyPatch, path: str, args: list[str]) -> list[dict[str, Any]]:
    with reading_with(monkeypatch, path):
        result = CliRunner().invoke(main, ["convert", *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]


def _normal(value: Any) -> Any:
    """A result as the truth writes it: JSON text parsed."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def test_every_recorded_framework_is_here() -> None:
    frameworks = {json.loads(p.read_text())["framework"] for p in SCENARIOS}
    assert frameworks == {
        *("litellm", "agno", "agent-framework", "dspy", "haystack"),
        *("smolagents", "llamaindex", "langgraph", "autogen", "openlit"),
        *("semantic-kernel", "openai-agents", "crewai", "langchain"),
    }
    scenarios = {json.loads(p.read_text())["scenario"] for p in SCENARIOS}
    assert scenarios == {"a_refund_ok", "f_tool_error_retry", "g_parallel_calls", "e_two_turns"}


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt", ["jsonl", "pb"])
@pytest.mark.parametrize(
    "truth_path", [_scenario(p) for p in SCENARIOS], ids=[_id(p) for p in SCENARIOS]
)
def test_convert_reads_what_the_telemetry_holds(
    truth_path: Path, fmt: str, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    truth = json.loads(truth_path.read_text())
    holds = truth["telemetry_holds"]
    inputs = _inputs(truth_path, fmt)
    for args, content in (([], False), (["--content"], True)):
        traces = _convert(monkeypatch, path, [*args, *inputs])
        calls = [c for t in traces for c in t["tool_calls"]]
        expected = truth["calls"]
        if holds["calls"]:
            assert [c["name"] for c in calls] == [c["tool"] for c in expected]
        else:
            assert calls == [] or all(c["args"] is None for c in calls)
        for got, want in zip(calls, expected, strict=False):
            if holds["args"]:
                assert got["args"] == want["args"], (got, want)
            if want["status"] == "error" and not got["source"].startswith("model:"):
                assert got["status"] == "error", got  # a tool span records the failure
            if content and holds["results"] and want["status"] == "ok":
                assert _normal(got["result"]) == want["result"], (got, want)
        if not content:
            continue
        turns = [turn for t in traces for turn in t["turns"]]
        assert len(turns) == truth["turn_count"]
        for got, want in zip(turns, truth["turns"], strict=True):
            assert got["input"] == (want["user"] if holds["user"] else None)
            if holds["reply"]:
                assert got["reply"] == want["reply"]
        printed = json.dumps(traces)
        for marker in MARKERS:
            assert json.dumps(marker) not in printed, marker


def test_hidden_inputs_take_the_arguments_recorded_beside_them() -> None:
    """Agno with OPENINFERENCE_HIDE_INPUTS: ``input.value`` is ``__REDACTED__``, the arguments
    are still in ``tool.parameters``; the agent's hidden input is no user message."""
    truth_path = RECORDED / "agno-openinference-hidden-inputs" / "a_refund_ok.truth.json"
    raw = Path(_inputs(truth_path, "jsonl")[0]).read_text()
    assert '"__REDACTED__"' in raw  # the recording hides inputs
    result = CliRunner().invoke(main, ["convert", "--content", *_inputs(truth_path, "jsonl")])
    (trace,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert [c["source"] for c in trace["tool_calls"]] == ["openinference:tool.parameters"] * 3
    assert trace["turns"][0]["input"] is None
    assert "content_missing" not in trace


@pytest.mark.parametrize("path", PATHS)
def test_a_call_belongs_to_the_agent_span_above_it_not_to_a_default_name_on_every_span(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The OpenTelemetry contrib instrumentation of the OpenAI Agents SDK writes its default
    ``gen_ai.agent.name`` (``OpenAI Agent``) on every tool and model span; the agent that ran
    is the one its ``invoke_agent assistant`` span names, and a suite matches it by that name."""
    truth_path = RECORDED / "openai-agents-otel" / "a_refund_ok.truth.json"
    raw = Path(_inputs(truth_path, "jsonl")[0]).read_text()
    assert raw.count('"OpenAI Agent"') > 3 and '"invoke_agent assistant"' in raw
    (printed,) = _convert(monkeypatch, path, _inputs(truth_path, "jsonl"))
    assert printed["metadata"]["agent_name"] == "assistant"
    with reading_with(monkeypatch, path):
        (trace,) = read_traces(_inputs(truth_path, "pb"))
    assert trace.metadata["agent_name"] == "assistant"
    assert [call.agent for call in trace.tool_calls] == ["assistant"] * 3


@pytest.mark.parametrize("path", PATHS)
def test_a_langchain_tool_error_handled_into_a_tool_message_is_the_calls_failure(
    path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LangChain turns a tool's handled exception into a ``ToolMessage`` with ``status:
    "error"``; the tool span itself ends without an error status. OpenLLMetry records that
    message as the span's ``gen_ai.tool.call.result``: the call failed, with its text."""
    truth_path = RECORDED / "langchain-openllmetry" / "f_tool_error_retry.truth.json"
    truth = json.loads(truth_path.read_text())
    with reading_with(monkeypatch, path):
        runs = [t for t in read_traces(_inputs(truth_path, "pb"), content=True) if t.tool_calls]
    (run,) = runs
    assert [c.status for c in run.tool_calls] == ["unset", "unset", "error", "unset"]
    failed = run.tool_calls[2]
    assert failed.error == truth["calls"][2]["error"] == failed.result
    assert [c.result for c in run.tool_calls[:2]] == [c["result"] for c in truth["calls"][:2]]
