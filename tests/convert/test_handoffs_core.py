"""The agent spans and handoffs of a trajectory (docs/convert.md, "Handoffs") are the same
whichever engine builds the trace: the compiled core's builder (``core/src/build.rs``) makes
``EvalTrace.agent_spans`` as the Python builder does, and the handoffs are found from them by
one step after both (``convert/build.py``, ``convert/handoffs.py``). A tool span with the
semconv handoff attributes is read by Python (the core's facts mode hands it over whole).

``test_core_builder.py`` holds every fixture's whole trace equal both ways; this file holds
the multi-agent ones to what they must show, on both paths, in every reading mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fixtures import CORPUS, DATA

from tooltrail.convert import engine as core
from tooltrail.convert import read_traces

try:
    import tooltrail_core
except ImportError:
    HAS_BUILDER = False
else:
    HAS_BUILDER = hasattr(tooltrail_core, "Builder")

MULTI_AGENT = [
    *sorted((DATA / "recorded" / "google-adk-multiagent").glob("*.otlp.jsonl")),
    *sorted((DATA / "recorded" / "google-adk-multiagent").glob("*.otlp.pb")),
    *sorted((DATA / "recorded" / "openai-agents-multiagent").glob("*.otlp.*")),
    *sorted((DATA / "realworld").glob("*.json")),
    CORPUS / "google-adk" / "h_nested_agent_tool.otlp.jsonl",
    CORPUS / "google-adk" / "h_nested_agent_tool.otlp.pb",
    DATA / "dialects" / "genai_handoff_semconv.json",
    DATA / "dialects" / "genai_handoff_semconv.otlp.jsonl",
]
MULTI_AGENT = [p for p in MULTI_AGENT if ".truth." not in p.name and ".logs." not in p.name]


def _read(path: Path, engine: str, **options: Any) -> list[Any]:
    """Each trace's agents and handoffs, read with ``engine`` (``core`` or ``python``)."""
    with pytest.MonkeyPatch.context() as patch:
        if engine == "python":
            patch.setenv(core.CORE_ENV, core.PYTHON)
        else:
            patch.delenv(core.CORE_ENV, raising=False)
        core.reset()
        try:
            traces = read_traces([path], diagnostics=[], **options)
            return [
                (t.trace_id, repr(t.agent_spans), repr(t.handoffs), t.content_missing)
                for t in traces
            ]
        finally:
            core.reset()


@pytest.mark.skipif(not HAS_BUILDER, reason="the compiled core with a builder is absent")
@pytest.mark.parametrize("path", MULTI_AGENT, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize(
    "options",
    [{}, {"usage": True}, {"content": True}, {"group": "conversation"}],
    ids=["facts", "usage", "content", "conversation"],
)
def test_both_engines_give_the_same_agents_and_handoffs(
    path: Path, options: dict[str, Any]
) -> None:
    got = _read(path, "core", **options)
    assert got == _read(path, "python", **options)
    assert any(row[1] != "[]" for row in got)  # a multi-agent fixture: agent spans read


@pytest.mark.skipif(not HAS_BUILDER, reason="the compiled core with a builder is absent")
def test_the_facts_mode_hands_a_span_naming_a_handoff_to_python() -> None:
    path = DATA / "dialects" / "genai_handoff_semconv.otlp.jsonl"  # (JSON lines: the core's)
    core.reset()
    try:
        (trace,) = read_traces([path])
        facts, whole, _ = core.facts_counts()
    finally:
        core.reset()
    (handoff,) = trace.handoffs
    assert (handoff.source, handoff.target) == ("Triage agent", "Billing agent")
    assert (facts, whole) == (4, 1)  # the core read the other spans, and declined that one


def test_an_agent_span_knows_the_agent_and_tool_above_it() -> None:
    (trace,) = read_traces([CORPUS / "google-adk" / "h_nested_agent_tool.otlp.pb"])
    triage, nested = trace.agent_spans
    assert (triage.name, triage.parent_span_id, triage.tool_span_id) == ("triage_agent", None, None)
    assert nested.name == "refund_specialist"
    assert nested.parent_span_id == triage.span_id
    (tool_call,) = [c for c in trace.tool_calls if c.name == "refund_specialist"]
    assert nested.tool_span_id == tool_call.span_id
    assert [a.span_id for a in trace.agent_spans] == trace.metadata["agent_span_ids"]


def test_a_handoff_record_without_arguments_is_no_content_left_uncaptured() -> None:
    path = DATA / "recorded" / "openai-agents-multiagent" / "a_handoff_refund_ok.otlp.jsonl"
    (trace,) = read_traces([path])
    record = [c for c in trace.tool_calls if c.name == "handoff to refunds"]
    assert record and record[0].args is None  # OpenInference's handoff span: no arguments
    assert trace.content_missing is None
