"""A trace that only creates an agent (the GenAI conventions' ``create_agent``, which AutoGen
and OpenLLMetry's LangChain instrumentation make a trace of its own when an agent is built)
records no run: it is still read, with no turn, and no policy of a suite selects it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from core_paths import HAVE_CORE, reading_with
from fixtures import DATA

from tooltrail.batch import run_batch
from tooltrail.convert import engine as core
from tooltrail.convert import read_traces
from tooltrail.suite import TestSuite

PATHS = [core.PYTHON, core.CORE] if HAVE_CORE else [core.PYTHON]
AUTOGEN = DATA / "recorded" / "autogen-native" / "a_refund_ok.otlp.jsonl"
AUTOGEN_LOGS = AUTOGEN.with_name("a_refund_ok.logs.otlp.jsonl")


def _span(name: str, span_id: str, parent: str, attributes: dict[str, str]) -> dict[str, Any]:
    return {
        "traceId": "0102030405060708090a0b0c0d0e0f10",
        "spanId": span_id,
        "parentSpanId": parent,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
    }


def _dump(tmp_path: Path, *spans: dict[str, Any]) -> Path:
    path = tmp_path / "dump.json"
    scope = {"scope": {"name": "t"}, "spans": list(spans)}
    path.write_text(json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [scope]}]}))
    return path


CREATE = {"gen_ai.operation.name": "create_agent", "gen_ai.agent.name": "assistant"}


@pytest.mark.parametrize("path", PATHS)
def test_a_trace_that_only_creates_an_agent_has_no_turn(
    tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = _dump(tmp_path, _span("create_agent assistant", "0102030405060708", "", CREATE))
    with reading_with(monkeypatch, path):
        (trace,) = read_traces(dump, content=True)
    assert not trace.records_a_run and trace.turn_count is None and trace.turns == []
    assert "create_agent" in trace.metadata["not_a_run"]


@pytest.mark.parametrize("path", PATHS)
def test_an_agent_created_and_then_calling_a_tool_is_a_run(
    tmp_path: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"}
    dump = _dump(
        tmp_path,
        _span("create_agent assistant", "0102030405060708", "", CREATE),
        _span("execute_tool lookup_order", "0102030405060709", "0102030405060708", tool),
    )
    with reading_with(monkeypatch, path):
        (trace,) = read_traces(dump)
    assert trace.records_a_run and trace.turn_count == 1
    assert [call.name for call in trace.tool_calls] == ["lookup_order"]


def test_a_plain_trace_without_agent_spans_is_still_a_run(tmp_path: Path) -> None:
    dump = _dump(tmp_path, _span("GET /orders", "0102030405060708", "", {"http.method": "GET"}))
    (trace,) = read_traces(dump)
    assert trace.records_a_run and trace.turn_count == 1


def test_no_policy_selects_a_trace_that_builds_an_agent() -> None:
    """AutoGen's recording: the agent built (a trace of its own), then its run. A policy that
    matches every trace gives one row, the run's."""
    suite = TestSuite.from_dict(
        {"name": "s", "cases": [{"id": "a", "match": "all", "required_tools": ["lookup_order"]}]}
    )
    traces = list(read_traces([AUTOGEN, AUTOGEN_LOGS]))
    assert [t.records_a_run for t in traces] == [False, True]
    assert [len(suite.cases_for(t)) for t in traces] == [0, 1]
    with run_batch(suite, [str(AUTOGEN), str(AUTOGEN_LOGS)], workers=1) as result:
        rows = list(result.results)
        assert [row.trace_id for row in rows] == [traces[1].trace_id]
        assert rows[0].passed
        assert [u.key for u in result.unmatched] == [traces[0].trace_id]
