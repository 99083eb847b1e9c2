"""An MCP tool error is a failed call, though its JSON-RPC response succeeded.

In MCP a tool that fails answers with a ``CallToolResult`` marked ``isError: true``, so the
span status may say nothing. ``tests/data/dialects/mcp_is_error.json`` is hand-written after
the instrumentations' own sources, one trace per place a failure is recorded:

- the MCP semantic conventions (open-telemetry/semantic-conventions-genai,
  ``docs/gen-ai/mcp.md``: client and server ``tools/call`` spans, ``error.type`` = ``tool_error``
  when the result has ``isError`` true, ``gen_ai.tool.call.result`` opt-in): trace 1 (the
  server span's result as JSON text, marked; the retry's structured and not), trace 2 (the
  client span's ``error.type`` alone), trace 3 (a structured result marked);
- OpenLLMetry's ``opentelemetry-instrumentation-mcp`` (``instrumentation.py``, the
  ``{tool}.tool`` span): a result marked ``isError`` without content gives the output
  ``{"is_error": true}`` and leaves the status unset: trace 4;
- ADK running an MCP tool (kagent, recorded in the external corpus' ``samples/helm.json``):
  the ``CallToolResult`` in ``gcp.vertex.agent.tool_response``: trace 5 (marked), trace 6
  (``isError`` false: no failure, and the compiled core reads it itself).

Both reading paths read them alike (the compiled core declines the spans whose result names
the marker, and the Python readers decide).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from core_paths import needs_core, reading_with
from fixtures import DATA
from test_engine_differential import assert_same

from tooltrail import dialects
from tooltrail.convert import engine as core
from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace
from tooltrail.otlp import encode_for_file, encode_request, read_spans
from tooltrail.otlp.decode.span import Span

FIXTURE = DATA / "dialects" / "mcp_is_error.json"
TRACE = "0af7651916cd43dd8448eb211c80319c"

#: Per trace (last two hex digits of its id): each call's (name, status, error).
EXPECTED = {
    "01": [
        ("lookup_order", "error", "Order ORD-0000 was not found"),
        ("lookup_order", "unset", None),
    ],
    "02": [("issue_refund", "error", "tool_error")],
    "03": [("verify_identity", "error", "Identity service rejected C-118")],
    "04": [("issue_refund", "error", "error")],
    "05": [("helm_get_release", "error", "Error: release: not found")],
    "06": [("helm_list_releases", "unset", None)],
}


def _by_trace(traces: list[EvalTrace]) -> dict[str, list[tuple[str, str, str | None]]]:
    return {t.trace_id[-2:]: [(c.name, c.status, c.error) for c in t.tool_calls] for t in traces}


def test_every_recorded_mcp_tool_error_is_a_failed_call() -> None:
    traces = list(read_traces(FIXTURE))
    assert _by_trace(traces) == EXPECTED
    # the outermost span is the call (the framework's), its arguments kept
    (refund,) = next(t for t in traces if t.trace_id.endswith("04")).tool_calls
    assert refund.args == {"order_id": "ORD-7731", "amount": 49.99}
    assert refund.span_id == "5d00000000000302"


def _encoded(directory: Path, fmt: str) -> Path:
    """The fixture's spans as the collector's file exporter writes them."""
    request = encode_request(read_spans(FIXTURE))
    path = directory / f"mcp_is_error.{'pb' if fmt == 'proto' else 'jsonl'}"
    path.write_bytes(encode_for_file(request, fmt))  # type: ignore[arg-type]
    return path


@needs_core
@pytest.mark.parametrize("fmt", ["proto", "json"])
def test_both_reading_paths_read_the_failures_alike(
    fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _encoded(tmp_path, fmt)
    assert_same(path, monkeypatch)
    assert_same(path, monkeypatch, usage=True, content=True)
    with reading_with(monkeypatch, core.CORE):
        assert _by_trace(list(read_traces(path))) == EXPECTED
        facts, spans, _ = core.facts_counts()
    # the core read the agent spans, the unmarked tool spans and trace 2's error.type itself,
    # and handed on the five whose result is (or may be) marked: 1's two server spans (text
    # marked, a structured result), 3's structured one, 4's output and 5's ADK result
    assert (facts, spans) == (14, 5)


# -- the rules, span by span -------------------------------------------------------------


def _span(name: str, attributes: dict[str, Any]) -> Span:
    return Span(TRACE, "b7ad6b7169203331", name=name, attributes=attributes, events=[])


def _mcp(**extra: Any) -> Span:
    attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": "lookup_order", **extra}
    return _span("tools/call lookup_order", attributes)


def _failure(span: Span) -> str | None:
    call = dialects.read_tool_call(span)
    assert call is not None
    return call.failure


def _marked(text: str, error: Any = True) -> str:
    return json.dumps({"content": [{"type": "text", "text": text}], "isError": error})


def test_an_mcp_result_is_a_failure_only_when_marked_at_its_top() -> None:
    assert _failure(_mcp(**{"gen_ai.tool.call.result": _marked("no such order")})) == (
        "no such order"
    )
    for result in (
        _marked("fine", error=False),
        _marked("fine", error="true"),  # not the boolean: no marker
        json.dumps({"content": [{"type": "text", "text": '{"isError": true}'}]}),  # inside
        json.dumps([{"isError": True}]),  # not a CallToolResult
        "isError: true",  # not JSON
    ):
        assert _failure(_mcp(**{"gen_ai.tool.call.result": result})) is None, result
    structured = {"content": [], "isError": True}
    assert _failure(_mcp(**{"gen_ai.tool.call.result": structured})) == "error"


def test_the_result_of_a_tool_span_of_no_mcp_kind_is_not_read_for_the_marker() -> None:
    """Only MCP spans (``mcp.method.name``) and ADK's are read for ``isError``: the result of
    every other tool span is left alone (the always-read path decodes no result)."""
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup_order",
        "gen_ai.tool.call.result": _marked("no such order"),
    }
    assert _failure(_span("execute_tool lookup_order", attributes)) is None


def test_error_type_is_a_failure_on_any_genai_tool_span() -> None:
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order"}
    assert _failure(_span("execute_tool x", {**attributes, "error.type": "timeout"})) == "timeout"
    assert _failure(_mcp(**{"error.type": "tool_error"})) == "tool_error"
    # the result's text says more than the error's type
    marked = _mcp(**{"error.type": "tool_error", "gen_ai.tool.call.result": _marked("gone")})
    assert _failure(marked) == "gone"


def _openllmetry(output: Any) -> Span:
    attributes = {
        "traceloop.span.kind": "tool",
        "traceloop.entity.name": "issue_refund",
        "traceloop.entity.output": output,
    }
    return _span("issue_refund.tool", attributes)


def test_openllmetry_marks_a_failure_in_an_output_of_its_own_shape_only() -> None:
    assert _failure(_openllmetry('{"is_error": true}')) == "error"
    assert _failure(_openllmetry('{"result": "refund refused", "is_error": true}')) == (
        "refund refused"
    )
    for output in (
        '{"result": "issued"}',
        '{"result": "x", "is_error": false}',
        '{"is_error": true, "refund_id": "RF-1"}',  # a tool's own output, not the instrumentation's
        '"is_error"',
    ):
        assert _failure(_openllmetry(output)) is None, output


def test_adk_reads_an_mcp_tools_marked_result_beside_its_retry_plugin() -> None:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "helm_get_release",
        "gcp.vertex.agent.event_id": "e-1",
        "gcp.vertex.agent.tool_response": _marked("release: not found"),
    }
    assert _failure(_span("execute_tool helm_get_release", attributes)) == "release: not found"
    attributes["gcp.vertex.agent.tool_response"] = _marked("deployed", error=False)
    assert _failure(_span("execute_tool helm_get_release", attributes)) is None
