"""Typed OTLP/JSON spans whose attribute values are all simple get a plain ``dict``
(otlp/jsontyped.py ``_plain_attributes``): the same keys, order, values and value types as the
``orjson`` path's lazy attributes answer, and every other span keeps the lazy reader with its
diagnostics.

The reference is ``spans_from_json`` given what ``orjson.loads`` returns (the unchanged
``orjson`` path); the fast path is ``spans_from_json`` given what ``parse_json`` returns.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from tooltrail import dialects
from tooltrail.convert import read_traces
from tooltrail.otlp import DEFAULT_LIMITS, Diagnostic, Limits, otlpjson
from tooltrail.otlp.encode import json_line
from tooltrail.otlp.jsontyped import StructAttributes
from tooltrail.otlp.lazy import Where
from tooltrail.otlp.otlpjson import parse_json, spans_from_json
from tooltrail.otlp.span import SpanHead

CORPUS = Path(__file__).parent / "data" / "corpus"
CORPUS_FILES = sorted(CORPUS.rglob("*.otlp.jsonl"))
TRACE = "5a50218595e4f754599d6af1d3f8d89d"
SPAN = "db1518f67e439f59"
PARENT = "3fb244ff5120ecfc"
SMALL = Limits(max_attribute_value_bytes=8, max_attributes=3, max_depth=2)
#: Strings up to 16 characters are certain to fit (4 bytes a character at most).
SHORT = Limits(max_attribute_value_bytes=64)


def _typed(value: Any) -> Any:
    """``value`` with the type of every part spelled out (``1 == 1.0 == True`` and
    ``[1] == (1,)`` must not pass), NaN comparable, dict order kept."""
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


def _answers(attributes: Any) -> Any:
    """What a reader gets from ``attributes``: each key's ``get``, in iteration order, then
    ``items()`` (the lazy reader may answer ``get`` and ``items`` from different places)."""
    keys = list(attributes)
    return (
        [(key, _typed(attributes.get(key)), key in attributes) for key in keys],
        _typed(dict(attributes.items())),
        len(attributes),
        bool(attributes),
    )


def _spans(data: Any, limits: Limits, **mode: Any) -> tuple[list[Any], list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    where = Where("dump.jsonl", 3, None, limits, diagnostics)
    return list(spans_from_json(data, where, **mode)), diagnostics


def _both(line: bytes, limits: Limits = DEFAULT_LIMITS, **mode: Any) -> tuple[Any, Any]:
    """(orjson path, typed path): spans and diagnostics, every attribute read."""
    out = []
    for data in (orjson.loads(line), parse_json(line)):
        spans, diagnostics = _spans(data, limits, **mode)
        answers = [None if isinstance(s, SpanHead) else _answers(s.attributes) for s in spans]
        out.append((answers, diagnostics))
    return out[0], out[1]


def _typed_attributes(line: bytes, limits: Limits = DEFAULT_LIMITS, **mode: Any) -> list[Any]:
    spans, _ = _spans(parse_json(line), limits, **mode)
    return [s.attributes for s in spans if not isinstance(s, SpanHead)]


def _line(attributes: list[dict[str, Any]]) -> bytes:
    span = {
        "traceId": TRACE,
        "spanId": SPAN,
        "parentSpanId": PARENT,
        "name": "execute_tool lookup_order",
        "kind": 1,
        "startTimeUnixNano": "1796002339386388406",
        "endTimeUnixNano": "1796002339388009260",
        "attributes": attributes,
        "status": {},
    }
    request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [span]}]}]}
    return json.dumps(request).encode()


def _one(value: Any) -> bytes:
    """A tool span with ``gen_ai.tool.name`` and the attribute ``k`` holding ``value``."""
    name = {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup_order"}}
    return _line([name, {"key": "k", "value": value}])


# --- real records ----------------------------------------------------------------------------


def _corpus_lines() -> list[tuple[str, bytes]]:
    return [
        (f"{path.relative_to(CORPUS)}:{i + 1}", line)
        for path in CORPUS_FILES
        for i, line in enumerate(path.read_bytes().splitlines())
        if line.strip()
    ]


CORPUS_LINES = _corpus_lines()


@pytest.mark.parametrize("mode", [{"lazy": True, "interest": dialects.INTEREST}, {"lazy": False}])
def test_every_corpus_span_answers_the_same_keys_values_and_types_on_both_paths(mode):
    assert len({name.split("/")[0] for name, _ in CORPUS_LINES}) >= 9
    for name, line in CORPUS_LINES:
        old, new = _both(line, **mode)
        assert new == old, name


def test_corpus_spans_with_simple_values_get_a_plain_dict():
    kinds = [
        type(attributes)
        for _, line in CORPUS_LINES
        for attributes in _typed_attributes(line, lazy=True, interest=dialects.INTEREST)
        if attributes
    ]
    assert kinds.count(dict) > 500


def test_every_corpus_span_under_small_limits_answers_and_reports_the_same():
    for name, line in CORPUS_LINES:
        old, new = _both(line, SMALL, lazy=True)
        assert old[1], name  # the limits were hit and reported
        assert new == old, name


def test_read_traces_over_the_corpus_equals_the_orjson_path(monkeypatch):
    def everything() -> tuple[list[Any], list[Diagnostic]]:
        diagnostics: list[Diagnostic] = []
        paths = [str(path) for path in CORPUS_FILES]
        return list(read_traces(paths, group="trace", diagnostics=diagnostics)), diagnostics

    fast = everything()
    monkeypatch.setattr(otlpjson, "decode_typed", lambda data: None)
    assert fast == everything()
    assert sum(len(trace.tool_calls) for trace in fast[0]) > 100


def _sdk_agent_line() -> bytes:
    """An agent run in the benchmark's shape (invoke_agent, chat, execute_tool), made by the
    OpenTelemetry SDK and written as a collector JSON line."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("pydantic-ai", "1.0.0")
    common = {"gen_ai.agent.name": "support_agent", "gen_ai.conversation.id": "conv-13deef86"}
    root = {"gen_ai.operation.name": "invoke_agent", "gen_ai.usage.input_tokens": 2000}
    with tracer.start_as_current_span("invoke_agent support_agent", attributes={**root, **common}):
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.usage.input_tokens": 250,
            "gen_ai.response.finish_reasons": ["tool_calls"],
            "gen_ai.request.temperature": 0.5,
            "gen_ai.request.stop_sequences": ("x", "y"),
            "gen_ai.output.messages": '[{"role": "assistant", "parts": []}]',
            **common,
        }
        with tracer.start_as_current_span(
            "chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=chat
        ):
            pass
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "lookup_order",
            "gen_ai.tool.call.id": "call_e01fca02135e",
            "gen_ai.tool.call.arguments": '{"order_id": "ORD-7731"}',
            "gen_ai.tool.call.result": '{"status": "ok"}',
            "tool.retried": False,
            **common,
        }
        with tracer.start_as_current_span("execute_tool lookup_order", attributes=tool):
            pass
    provider.shutdown()
    return json_line(encode_spans(exporter.get_finished_spans()))


def test_an_sdk_agent_run_in_the_benchmark_shape_gets_plain_dicts_equal_to_the_orjson_path():
    line = _sdk_agent_line()
    mode = {"lazy": True, "interest": dialects.INTEREST}
    attributes = _typed_attributes(line, **mode)
    assert [type(a) for a in attributes] == [dict, dict, dict]
    assert attributes[0]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    old, new = _both(line, **mode)
    assert new == old
    assert old[1] == []


# --- each shape of value ---------------------------------------------------------------------

#: AnyValue objects read without a report: the span gets a plain dict.
SIMPLE = {
    "string": {"stringValue": "lookup_order"},
    "empty string": {"stringValue": ""},
    "string of exactly a quarter of the limit": {"stringValue": "é" * 16},
    "bool": {"boolValue": False},
    "int string": {"intValue": "123"},
    "negative int string": {"intValue": "-42"},
    "int string with sign and spaces": {"intValue": " +7 "},
    "int string past int64": {"intValue": "99999999999999999999999"},
    "int number": {"intValue": 9007199254740993},
    "uint64 number": {"intValue": 2**64 - 1},
    "double": {"doubleValue": 0.25},
    "double written as an integer": {"doubleValue": 3},
    "array of strings": {"arrayValue": {"values": [{"stringValue": "stop"}]}},
    "array of scalars": {
        "arrayValue": {
            "values": [
                {"stringValue": "a"},
                {"intValue": "5"},
                {"boolValue": True},
                {"doubleValue": 1.5},
                {},
            ]
        }
    },
    "empty array": {"arrayValue": {"values": []}},
    "array without values": {"arrayValue": {}},
    "array with null values": {"arrayValue": {"values": None}},
}

#: AnyValue objects that need the full reader: the span keeps the lazy attributes.
FALL_BACK = {
    "string over a quarter of the limit": {"stringValue": "x" * 17},
    "string over the limit": {"stringValue": "x" * 100},
    "string not a string": {"stringValue": 5},
    "null string": {"stringValue": None},
    "bytes": {"bytesValue": "AAE="},
    "bad bytes": {"bytesValue": "!!"},
    "kvlist": {"kvlistValue": {"values": [{"key": "a", "value": {"intValue": "1"}}]}},
    "nested array": {"arrayValue": {"values": [{"arrayValue": {"values": []}}]}},
    "array of bytes": {"arrayValue": {"values": [{"bytesValue": "AAE="}]}},
    "array of long strings": {"arrayValue": {"values": [{"stringValue": "x" * 40}]}},
    "array of over-limit strings": {"arrayValue": {"values": [{"stringValue": "x" * 90}]}},
    "array member not an object": {"arrayValue": {"values": ["stop"]}},
    "array member with two members": {"arrayValue": {"values": [{"stringValue": "a", "x": 1}]}},
    "array values not a list": {"arrayValue": {"values": 3}},
    "array not an object": {"arrayValue": 3},
    "null array": {"arrayValue": None},
    "int string not an int": {"intValue": "five"},
    "int string with a decimal point": {"intValue": "1.0"},
    "int number past 64 bits": {"intValue": 2**64},
    "int as a float": {"intValue": 5.0},
    "int as a bool": {"intValue": True},
    "bool not a bool": {"boolValue": "yes"},
    "double as NaN text": {"doubleValue": "NaN"},
    "double not a number": {"doubleValue": "much"},
    "double number past 64 bits": {"doubleValue": -(2**70)},
    "double as a bool": {"doubleValue": True},
    "empty value": {},
    "null value": None,
    "snake_case member": {"int_value": 5},
    "unknown member": {"somethingNew": 1},
}


@pytest.mark.parametrize("what", sorted(SIMPLE))
def test_a_simple_value_gives_a_plain_dict_answering_as_the_orjson_path(what):
    line = _one(SIMPLE[what])
    limits = SHORT
    (attributes,) = _typed_attributes(line, limits, lazy=True)
    assert type(attributes) is dict
    old, new = _both(line, limits, lazy=True)
    assert new == old
    assert new[1] == []


@pytest.mark.parametrize("what", sorted(FALL_BACK))
def test_any_other_value_keeps_the_lazy_reader_answering_and_reporting_as_before(what):
    line = _one(FALL_BACK[what])
    limits = SHORT
    (attributes,) = _typed_attributes(line, limits, lazy=True)
    assert isinstance(attributes, StructAttributes)
    old, new = _both(line, limits, lazy=True)
    assert new == old


@pytest.mark.parametrize("what", sorted(SIMPLE) + sorted(FALL_BACK))
def test_every_value_reads_the_same_when_read_eagerly(what):
    line = _one({**SIMPLE, **FALL_BACK}[what])
    old, new = _both(line, SHORT, lazy=False)
    assert new == old


def test_a_long_string_among_simple_values_is_still_cut_and_reported_with_its_path():
    line = _line(
        [
            {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
            {"key": "n", "value": {"intValue": "3"}},
            {"key": "long", "value": {"stringValue": "x" * 80}},
        ]
    )
    old, new = _both(line, SHORT, lazy=True)
    assert new == old
    assert [d.message for d in new[1]] == [
        "resourceSpans[0].scopeSpans[0].spans[0].attributes.long: value of 80 bytes truncated to 64"
    ]
    assert ("long", ("str", "x" * 64 + "...[truncated by tooltrail]"), True) in new[0][0][0]


def test_a_repeated_key_keeps_its_first_place_and_its_last_value():
    line = _line(
        [
            {"key": "a", "value": {"stringValue": "first"}},
            {"key": "gen_ai.tool.name", "value": {"stringValue": "lookup"}},
            {"key": "a", "value": {"intValue": "2"}},
        ]
    )
    (attributes,) = _typed_attributes(line, lazy=True)
    assert type(attributes) is dict
    assert list(attributes.items()) == [("a", 2), ("gen_ai.tool.name", "lookup")]
    old, new = _both(line, lazy=True)
    assert new == old


def test_more_attributes_than_the_limit_keeps_the_lazy_reader_and_its_report():
    line = _line([{"key": f"k{i}", "value": {"stringValue": "v"}} for i in range(4)])
    (attributes,) = _typed_attributes(line, SMALL, lazy=True)
    assert isinstance(attributes, StructAttributes)
    old, new = _both(line, SMALL, lazy=True)
    assert new == old
    assert [d.message for d in new[1]] == [
        "resourceSpans[0].scopeSpans[0].spans[0].attributes: more than 3 attributes; rest dropped"
    ]


def test_an_array_under_a_depth_limit_of_zero_keeps_the_lazy_reader_and_its_report():
    line = _one(SIMPLE["array of strings"])
    limits = Limits(max_depth=0)
    (attributes,) = _typed_attributes(line, limits, lazy=True)
    assert isinstance(attributes, StructAttributes)
    old, new = _both(line, limits, lazy=True)
    assert new == old
    assert len(new[1]) == 1 and "nested deeper than 0 levels" in new[1][0].message


def test_plain_dicts_are_not_shared_between_spans():
    line = _sdk_agent_line()
    first = _typed_attributes(line, lazy=True)
    second = _typed_attributes(line, lazy=True)
    assert first == second
    assert all(a is not b for a, b in zip(first, second, strict=True))
