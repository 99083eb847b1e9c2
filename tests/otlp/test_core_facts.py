"""The compiled core's facts mode reads what the Python dialect readers read.

With ``convert.engine.READ_FACTS`` the core classifies each span with ``rules.json`` and hands
out the converter's ``SpanFact`` ready (a ``FactSpan``) for the spans its port covers; every
other span comes as a ``Span`` and the Python readers classify it. These tests hold the two
equal on generated GenAI traces, argument JSON the two JSON parsers could read differently
(ints near 2**63 and 2**64, floats, nesting, unicode, lone surrogates, repeated keys), byte
ranges of the batch pass, and check that the facts mode is used at all
(``convert.engine.facts_counts``). ``tests/convert/test_engine_differential.py`` compares
every fixture.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from core_paths import reading_with
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status, TracesData
from test_engine_differential import HAVE_CORE, assert_same

from tooltrail.batch.chunks import Chunk
from tooltrail.batch.tasks import read_chunk
from tooltrail.convert import engine as core
from tooltrail.convert import read_traces, reading
from tooltrail.convert.collect import TraceCollector
from tooltrail.convert.engine import READ_FACTS, READ_PARTS, SPANS
from tooltrail.convert.facts import FactSpan, SpanFact, TraceFacts
from tooltrail.dialects import DialectCall, ModelCall, rules
from tooltrail.otlp import encode_for_file, frame, json_line
from tooltrail.otlp.decode.span import Diagnostic, Span, SpanEvent, SpanHead

needs_core = pytest.mark.skipif(
    not HAVE_CORE, reason="the compiled core (tooltrail-core, core/) is not installed"
)

#: A GenAI fixture every span of which the core's port covers.
GENAI = Path(__file__).parents[1] / "data/corpus/mlflow-genai-semconv/a_refund_ok.otlp.pb"


def _counts(path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> tuple[int, ...]:
    monkeypatch.delenv(core.CORE_ENV, raising=False)
    core.reset()
    try:
        assert list(read_traces(path, diagnostics=[], **options))
        return core.facts_counts()
    finally:
        core.reset()


@needs_core
def test_the_core_reads_the_facts_of_a_genai_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    facts, spans, heads = _counts(GENAI, monkeypatch)
    assert facts == 9 and spans == 0 and heads == 0
    assert _counts(GENAI, monkeypatch, usage=True)[0] == 9  # usage: read by the core too


@needs_core
def test_reading_content_takes_no_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Content (tool results, the user's input) is the Python readers': a read that wants it
    gets whole spans."""
    facts, spans, _ = _counts(GENAI, monkeypatch, content=True)
    assert facts == 0 and spans == 9


def test_the_python_path_hands_out_no_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(core.CORE_ENV, core.PYTHON)
    core.reset()
    try:
        assert list(read_traces(GENAI))
        assert core.facts_counts() == (0, 0, 0)
    finally:
        core.reset()


@needs_core
def test_the_core_checks_the_fields_it_builds() -> None:
    """The core builds ``SpanFact`` and ``FactSpan`` by position: a class whose fields are not
    the ones it fills is refused when the reader is made, not filled wrongly."""
    import tooltrail_core

    text = rules.TEXT
    sizes = (1 << 20, 32, 128, 128)
    good = (text, FactSpan, SpanFact, DialectCall, ModelCall)
    tooltrail_core.Reader(Span, SpanHead, SpanEvent, None, sizes, good)
    for bad in (
        (text, SpanHead, SpanFact, DialectCall, ModelCall),
        (text, FactSpan, SpanFact, ModelCall, ModelCall),
        ("{}", FactSpan, SpanFact, DialectCall, ModelCall),
    ):
        with pytest.raises(ValueError):
            tooltrail_core.Reader(Span, SpanHead, SpanEvent, None, sizes, bad)


# -- generated GenAI traces, with argument JSON the parsers might read differently -----------

_EDGE_INTS = [0, -1, 2**53, 2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1]
_ODD_NUMBERS = ["-0", "-0.0", "1E2", "1e-400", "1e400", "1.5e+3", "0.1", "01", "1.", "NaN"]
_ODD_STRINGS = [
    '"\\ud83d\\ude00"',  # a surrogate pair: one character
    '"\\ud800"',  # a lone surrogate: orjson refuses it, the standard library keeps it
    '"\\udc00"',
    '"a\\u0000b"',
    '"tab\there"',  # a raw control character: not JSON
    '"\\/\\b\\f\\n\\r\\t\\"\\\\"',
    '"caf\\u00e9"',
]


def _number() -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(-(2**64) - 2, 2**64 + 2).map(str),
        st.sampled_from(_EDGE_INTS).map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.sampled_from(_ODD_NUMBERS),
    )


def _string() -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=8).map(lambda t: json.dumps(t, ensure_ascii=False)),
        st.text(max_size=8).map(json.dumps),
        st.sampled_from(_ODD_STRINGS),
    )


def _json_text() -> st.SearchStrategy[str]:
    """JSON text (and a little that is not), written out: repeated keys, spacing, numbers
    spelled as the test chooses."""
    scalar = st.one_of(
        _number(), _string(), st.sampled_from(["true", "false", "null", "'py'", "[1,]"])
    )
    key = st.sampled_from(['"a"', '"b"', '"é"', '"a"']) | _string()

    def nest(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        members = st.lists(st.tuples(key, inner), max_size=4)
        space = st.sampled_from(["", " ", "\n", "\t"])
        return st.one_of(
            st.tuples(members, space).map(
                lambda m: "{" + m[1] + ",".join(f"{k}:{m[1]}{v}" for k, v in m[0]) + "}"
            ),
            st.lists(inner, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        )

    return st.recursive(scalar, nest, max_leaves=12)


def _arguments() -> st.SearchStrategy[str]:
    """Tool arguments: mostly an object, as instrumentations write them."""
    members = st.lists(st.tuples(_string(), _json_text()), max_size=4)
    obj = members.map(lambda m: "{" + ",".join(f"{k}:{v}" for k, v in m) + "}")
    return st.one_of(obj, obj, _json_text(), st.sampled_from(["", "<elided>", "{'a': 1}"]))


def _kv(key: str, value: Any) -> KeyValue:
    if isinstance(value, bool):
        return KeyValue(key=key, value=AnyValue(bool_value=value))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    if isinstance(value, float):
        return KeyValue(key=key, value=AnyValue(double_value=value))
    if isinstance(value, list):
        out = KeyValue(key=key)
        for item in value:
            out.value.array_value.values.add(string_value=item)
        return out
    return KeyValue(key=key, value=AnyValue(string_value=value))


_label = st.one_of(
    st.text(max_size=6),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.booleans(),
    st.just("x" * 1025),
    st.just("é" * 1000),  # over 1024 bytes, within 1024 characters
)


@st.composite
def genai_traces(draw: st.DrawFn) -> TracesData:
    """A GenAI agent trace: a root agent span, model spans listing tool calls, tool spans."""
    data = TracesData()
    rs = data.resource_spans.add()
    rs.resource.attributes.append(_kv("service.name", "shop"))
    if draw(st.booleans()):
        rs.resource.attributes.append(_kv("tooltrail.case_id", draw(st.sampled_from(["c1", ""]))))
    ss = rs.scope_spans.add()
    ss.scope.name = draw(st.sampled_from(["agent", "pydantic-ai", "gcp.vertex.agent"]))
    trace_id = b"\x01" * 16
    root = ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, start_time_unix_nano=10)
    root.end_time_unix_nano = 99
    root.name = draw(st.sampled_from(["invoke_agent shop", "invoke_agent  ", "run", "agent run"]))
    if draw(st.booleans()):
        root.attributes.append(_kv("gen_ai.operation.name", "invoke_agent"))
    for key, value in draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    [
                        "gen_ai.agent.name",
                        "gen_ai.conversation.id",
                        "session.id",
                        "user",
                        "tooltrail.case_id",
                        "gen_ai.input.messages",
                        "count",
                    ]
                ),
                _label,
            ),
            max_size=5,
            unique_by=lambda kv: kv[0],
        )
    ):
        root.attributes.append(_kv(key, value))
    for n in range(draw(st.integers(1, 4))):
        span = ss.spans.add(trace_id=trace_id, parent_span_id=b"\x02" * 8)
        span.span_id = bytes([3 + n]) * 8
        span.start_time_unix_nano = 20 + n
        span.end_time_unix_nano = 30 + n
        if draw(st.booleans()):
            _model_span(draw, span)
        else:
            _tool_span(draw, span)
    return data


def _model_span(draw: st.DrawFn, span: Any) -> None:
    span.name = "chat"
    span.attributes.append(_kv("gen_ai.operation.name", "chat"))
    parts = []
    for i in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            parts.append({"type": "text", "content": draw(st.sampled_from(["ok", "", "<elided>"]))})
            continue
        call: dict[str, Any] = {"type": "tool_call", "name": draw(st.sampled_from(["refund", ""]))}
        call["id"] = draw(st.sampled_from([f"c{i}", i, 2**63, None, "<elided>"]))
        args = draw(st.sampled_from(["text", "object", "none", "absent"]))
        if args == "text":
            call["arguments"] = draw(_arguments())
        elif args == "object":
            call["arguments"] = "@ARGS@"
        elif args == "none":
            call["arguments"] = None
        parts.append(call)
    text = json.dumps([{"role": "assistant", "parts": parts}])
    if '"@ARGS@"' in text:
        text = text.replace('"@ARGS@"', draw(_arguments()), 1).replace('"@ARGS@"', "{}")
    if draw(st.integers(0, 5)):
        span.attributes.append(_kv("gen_ai.output.messages", text))
    finish = draw(st.sampled_from([None, ["tool_calls"], ["stop"], "TOOL_USE", ["Tool_Calls"]]))
    if finish is not None:
        span.attributes.append(_kv("gen_ai.response.finish_reasons", finish))
    for key in draw(
        st.lists(
            st.sampled_from(["gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"]),
            unique=True,
        )
    ):
        span.attributes.append(_kv(key, draw(st.sampled_from([5, -1, "12", "x", 2**62]))))
    if draw(st.booleans()):
        span.attributes.append(_kv("gen_ai.request.model", "m1"))


def _tool_span(draw: st.DrawFn, span: Any) -> None:
    name = draw(st.sampled_from(["refund", "final_result", "", "<elided>"]))
    span.name = draw(st.sampled_from([f"execute_tool {name}", "execute_tool", "tool"]))
    span.attributes.append(_kv("gen_ai.operation.name", "execute_tool"))
    if draw(st.booleans()):
        span.attributes.append(_kv("gen_ai.tool.name", name))
    call_id = draw(st.sampled_from([None, "call-1", 7, "<elided>"]))
    if call_id is not None:
        span.attributes.append(_kv("gen_ai.tool.call.id", call_id))
    if draw(st.integers(0, 5)):
        span.attributes.append(_kv("gen_ai.tool.call.arguments", draw(_arguments())))
    if draw(st.booleans()):
        span.attributes.append(_kv("gen_ai.agent.name", draw(st.sampled_from(["shop", ""]))))
    if draw(st.booleans()):  # Pydantic AI's message: an output function is not a call
        message = draw(st.sampled_from(["running tool: refund", "running output function: f"]))
        span.attributes.append(_kv("logfire.msg", message))
    retried = '{"response_type": "ERROR_HANDLED_BY_REFLECT_AND_RETRY_PLUGIN", "error_type": "E"}'
    for key in draw(
        st.lists(
            st.sampled_from(
                [
                    "gcp.vertex.agent.event_id",
                    "gcp.vertex.agent.tool_response",
                    "gen_ai.tool.call.result",
                ]
            ),
            unique=True,
        )
    ):
        span.attributes.append(_kv(key, draw(st.sampled_from(["e1", "{}", retried]))))
    if draw(st.booleans()):
        span.status.CopyFrom(Status(code=2, message=draw(st.sampled_from(["", "boom"]))))
        if draw(st.booleans()):
            event = span.events.add(name="exception", time_unix_nano=25)
            for key in draw(st.lists(st.sampled_from(["exception.message", "exception.type"]))):
                event.attributes.append(_kv(key, draw(st.sampled_from(["", "bad", "ValueError"]))))


@needs_core
@pytest.mark.parametrize("fmt", ["proto", "json"])
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=genai_traces())
def test_generated_genai_traces_read_the_same_both_ways(
    fmt: str, data: TracesData, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / f"in.{fmt}"
    path.write_bytes(encode_for_file(data, fmt))
    assert_same(path, monkeypatch)
    assert_same(path, monkeypatch, usage=True)


@needs_core
@settings(max_examples=300, deadline=None)
@given(arguments=_arguments())
def test_argument_json_reads_the_same_both_ways(arguments: str, tmp_path_factory: Any) -> None:
    """One tool span's ``gen_ai.tool.call.arguments`` and a model span's listed call, each
    holding ``arguments``: the core's JSON reading, or its decline, gives the Python path's
    arguments (types, int or float, key order, repeated keys, big ints, unicode)."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    trace_id = b"\x01" * 16
    ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, name="invoke_agent shop")
    tool = ss.spans.add(trace_id=trace_id, span_id=b"\x03" * 8, parent_span_id=b"\x02" * 8)
    tool.name = "execute_tool refund"
    tool.attributes.append(_kv("gen_ai.tool.call.arguments", arguments))
    model = ss.spans.add(trace_id=trace_id, span_id=b"\x04" * 8, parent_span_id=b"\x02" * 8)
    model.name = "chat"
    listed = json.dumps([{"parts": [{"type": "tool_call", "name": "refund", "arguments": "@"}]}])
    model.attributes.append(_kv("gen_ai.output.messages", listed.replace('"@"', arguments)))
    other = ss.spans.add(trace_id=trace_id, span_id=b"\x05" * 8, parent_span_id=b"\x02" * 8)
    other.name = "chat"
    model.attributes.append(_kv("gen_ai.operation.name", "chat"))
    other.attributes.append(_kv("gen_ai.operation.name", "chat"))
    other.attributes.append(
        _kv(
            "gen_ai.output.messages",
            json.dumps(
                [{"parts": [{"type": "tool_call", "name": "refund", "arguments": arguments}]}]
            ),
        )
    )
    path = tmp_path_factory.mktemp("args") / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert_same(path, monkeypatch)


@needs_core
def test_plain_arguments_are_read_by_the_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The decline is not the rule: plain argument JSON is read in the core (the tool and the
    model span come as facts), repeated keys and ints near 2**63 and 2**64 included (the
    arguments of a model's listed call are parsed with the messages, by orjson alone; tool
    arguments with a run of 19 digits go to the Python path's standard-library parse)."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    trace_id = b"\x01" * 16
    ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, name="invoke_agent shop")
    tool = ss.spans.add(trace_id=trace_id, span_id=b"\x03" * 8, parent_span_id=b"\x02" * 8)
    tool.name = "execute_tool refund"
    arguments = '{"id": 576460752303423488, "n": -1, "x": 1.5e3, "id": "\\u00e9"}'
    tool.attributes.append(_kv("gen_ai.tool.call.arguments", arguments))
    model = ss.spans.add(trace_id=trace_id, span_id=b"\x04" * 8, parent_span_id=b"\x02" * 8)
    model.name = "chat"
    listed = '{"big": 18446744073709551615, "low": -9223372036854775808, "big": 2}'
    part = '{"type": "tool_call", "name": "refund", "id": 7, "arguments": ' + listed + "}"
    model.attributes.append(_kv("gen_ai.operation.name", "chat"))
    model.attributes.append(_kv("gen_ai.output.messages", '[{"parts": [' + part + "]}]"))
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (3, 0, 0)
    (trace,) = read_traces(path)
    (call,) = trace.tool_calls
    assert call.args == {"id": "\u00e9", "n": -1, "x": 1500.0}
    assert list(call.args) == ["id", "n", "x"] and isinstance(call.args["x"], float)
    assert_same(path, monkeypatch)
    arguments = arguments.replace("576460752303423488", "5764607523034234880")
    tool.attributes[0].value.string_value = arguments  # 19 digits: the Python path's
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (2, 1, 0)
    assert_same(path, monkeypatch)


# -- the batch pass's byte ranges --------------------------------------------------------------


def _batch_traces(path: Path, monkeypatch: pytest.MonkeyPatch, which: str) -> list[str]:
    with reading_with(monkeypatch, which):
        diagnostics: list[Diagnostic] = []
        collector = TraceCollector(None, diagnostics)
        framing = "lines" if path.suffix == ".jsonl" else "prefixed"
        chunk = Chunk(index=0, path=str(path), framing=framing, end=path.stat().st_size)
        for _, spans in read_chunk(chunk, None, diagnostics, READ_PARTS):
            for span in spans:
                collector.add(span)
        traces = [repr(collector.build([t])) for t in collector.take_all()]
    return [*traces, repr(diagnostics)]


@needs_core
@pytest.mark.parametrize("fmt", ["proto", "json"])
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=genai_traces())
def test_batch_chunks_read_the_same_both_ways(
    fmt: str, data: TracesData, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / ("dump.jsonl" if fmt == "json" else "dump.pb")
    body = data.SerializeToString()
    path.write_bytes(json_line(data) * 2 if fmt == "json" else frame(body) * 2)
    core_read = _batch_traces(path, monkeypatch, core.CORE)
    assert core_read == _batch_traces(path, monkeypatch, core.PYTHON)


@needs_core
def test_batch_chunks_hand_out_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """``read_chunk(READ_PARTS)`` (the chunk and merge tasks of ``tooltrail eval`` when the
    suite reads no content) reads in the facts mode, in parts (``READ_PARTS``: every span of
    this fixture is the core's); without ``facts``, spans as before."""
    monkeypatch.delenv(core.CORE_ENV, raising=False)
    core.reset()
    try:
        chunk = Chunk(index=0, path=str(GENAI), framing="whole")
        read = read_chunk(chunk, None, [], READ_PARTS)
        kinds = {type(s).__name__ for _, spans in read for s in spans}
        assert kinds == {"TracePart"}
        kinds = {type(s).__name__ for _, spans in read_chunk(chunk, None, []) for s in spans}
        assert kinds == {"Span"}
    finally:
        core.reset()


def test_read_facts_is_the_converter_interest_in_the_facts_mode() -> None:
    from tooltrail import dialects

    assert READ_FACTS.facts and not READ_FACTS.parts
    assert READ_FACTS.interest is dialects.INTEREST


def test_a_core_built_before_the_facts_mode_reads_spans() -> None:
    """An older ``tooltrail-core`` (no ``FACTS_MODE``: its ``Reader`` takes no ``facts``) next
    to this tooltrail reads spans as before instead of failing."""

    class Before:
        pass

    class Now:
        FACTS_MODE = 1

    assert core.CoreEngine(Before())._facts_terms(READ_FACTS) is None
    terms = core.CoreEngine(Now())._facts_terms(READ_FACTS)
    assert terms is not None and terms[1] is FactSpan
    assert core.CoreEngine(Now())._facts_terms(core.SPANS) is None


# -- tool spans of other conventions: OpenInference, Vercel, Traceloop (``core/src/tools.rs``) --

VERCEL = Path(__file__).parents[1] / "data/corpus/vercel-ai/a_refund_ok.otlp.pb"


@needs_core
def test_the_core_reads_the_tool_spans_of_a_vercel_fixture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every span comes as facts: the three ``ai.toolCall`` spans, and the agent and model
    spans with Vercel's own reply and listed calls (``ai.response.text``,
    ``ai.response.toolCalls``: 3 of 8 before), and reads as the Python path reads it."""
    assert _counts(VERCEL, monkeypatch) == (8, 0, 0)
    assert_same(VERCEL, monkeypatch, usage=True)


TRACELOOP = Path(__file__).parents[1] / "data/corpus/traceloop/a_refund_ok.otlp.pb"
POSITIONAL = Path(__file__).parents[1] / "data/corpus/traceloop/j_positional_args.otlp.pb"


@needs_core
def test_the_core_reads_the_tool_spans_of_a_traceloop_fixture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The three ``@tool`` spans (``{"args": [], "kwargs": {...}}`` inputs) come as facts, and
    so do the agent and root spans with their ``traceloop.entity.output`` reply (7 of 9
    before); in the fixture with positional values, the two tools called so stay Python's."""
    assert _counts(TRACELOOP, monkeypatch) == (9, 0, 0)
    assert _counts(POSITIONAL, monkeypatch) == (7, 2, 0)
    for path in (TRACELOOP, POSITIONAL):
        assert_same(path, monkeypatch, usage=True)


#: Argument values of the three conventions: JSON objects, text that is no object, a Python
#: repr, envelopes, placeholders, a structured value, numbers and lists.
_TOOL_ARGS: list[Any] = [
    '{"order_id": "ORD-1", "amount": 49.99}',
    '{"kwargs": {"a": 1}, "args": []}',
    '{"kwargs": {"a": 1}, "args": [2]}',
    '{"args": [1]}',
    "{'order_id': 'ORD-1'}",
    "  {'a': 1}",
    "refund policy",
    "[1, 2]",
    '"text"',
    "",
    "<elided>",
    "7",
    7,
    1.5,
    True,
    ["a", "b"],
    {"order_id": "ORD-1"},
    {"kwargs": "x"},
    {"input_str": "x", "inputs": {"a": 1}},
    '{"kwargs": {"a": 1, "a": 2}, "sanitize_inputs_outputs": true}',
    '{"kwargs": {"a": 1}, "args": "x"}',
    '{"kwargs": [1], "args": []}',
    '{"kwargs": {"a": 1}, "other": 1}',
    '{"args": [], "kwargs": {"a": 1}, "kwargs": {"b": 2}}',
    '{"input_str": "x", "inputs": {"a": 1}}',
    '{"input_str": "x", "inputs": "{\'a\': 1}"}',
    '{"input_str": "x", "other": 1}',
    '{"args": [], "kwargs": {"input_str": "x", "inputs": {}}}',
]


def _tool_value(value: Any) -> AnyValue:
    if isinstance(value, dict):
        out = AnyValue()
        for key, item in value.items():
            out.kvlist_value.values.append(KeyValue(key=key, value=_tool_value(item)))
        return out
    return _kv("_", value).value


@st.composite
def other_tool_traces(draw: st.DrawFn) -> TracesData:
    """An agent with OpenInference ``TOOL``, Vercel ``ai.toolCall`` and Traceloop ``tool``
    spans, each with or without its name, id and argument keys (both of Vercel's and of
    Traceloop's, in either order)."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    ss.scope.name = draw(st.sampled_from(["openinference.instrumentation.smolagents", "ai"]))
    trace_id = b"\x01" * 16
    ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, name="invoke_agent shop")
    for n in range(draw(st.integers(1, 4))):
        span = ss.spans.add(trace_id=trace_id, parent_span_id=b"\x02" * 8)
        span.span_id = bytes([3 + n]) * 8
        span.start_time_unix_nano = 20 + n
        names = st.sampled_from(["lookup", "final_answer", "", "<elided>"])
        kind = draw(st.sampled_from(["openinference", "vercel", "traceloop"]))
        if kind == "openinference":
            span.name = draw(names)
            span.attributes.append(_kv("openinference.span.kind", "TOOL"))
            keys = ["tool.name", "tool.id", "tool_call.id", "input.value", "output.value"]
        elif kind == "traceloop":
            span.name = draw(names) + draw(st.sampled_from([".tool", ""]))
            span.attributes.append(_kv("traceloop.span.kind", "tool"))
            keys = [
                "traceloop.entity.name",
                "gen_ai.tool.name",
                "gen_ai.tool.call.id",
                "gen_ai.tool.call.arguments",
                "traceloop.entity.input",
            ]
        else:
            span.name = "ai.toolCall"
            keys = ["ai.toolCall.name", "ai.toolCall.id", "ai.toolCall.args", "ai.toolCall.input"]
        for key in draw(st.lists(st.sampled_from(keys), unique=True)):
            if key.endswith("name") and key != "traceloop.span.kind":
                value = _kv(key, draw(names)).value
            elif key.endswith("id"):
                value = _kv(key, draw(st.sampled_from(["call-1", 7, "", "<elided>"]))).value
            else:
                value = _tool_value(draw(st.sampled_from(_TOOL_ARGS)))
            span.attributes.append(KeyValue(key=key, value=value))
        if draw(st.booleans()):
            span.status.CopyFrom(Status(code=2, message="boom"))
    return data


@needs_core
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=other_tool_traces())
def test_generated_tool_spans_of_other_conventions_read_the_same_both_ways(
    data: TracesData, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert_same(path, monkeypatch)


@needs_core
def test_plain_openinference_tool_spans_are_read_by_the_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """OpenInference tool spans with JSON or structured arguments, or a call envelope without
    positional values (``unwrap_call_envelope``), come as facts (and so does the root
    ``AGENT`` span); a Python repr and an envelope with positional values go to the Python
    readers."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    ss.scope.name = "openinference.instrumentation.langchain"
    trace_id = b"\x01" * 16
    agent = ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, name="AgentExecutor")
    agent.attributes.append(_kv("openinference.span.kind", "AGENT"))
    inputs: list[Any] = [
        '{"order_id": "ORD-7731", "amount": 49.99}',
        {"query": "refund policy"},
        "{'order_id': 'ORD-7731'}",
        '{"args": [], "kwargs": {"order_id": "ORD-7731"}}',
        '{"args": [1], "kwargs": {"order_id": "ORD-7731"}}',
    ]
    for n, value in enumerate(inputs):
        span = ss.spans.add(trace_id=trace_id, parent_span_id=b"\x02" * 8, name="tool")
        span.span_id = bytes([3 + n]) * 8
        span.start_time_unix_nano = 20 + n
        span.attributes.append(_kv("openinference.span.kind", "TOOL"))
        span.attributes.append(_kv("tool.name", f"t{n}"))
        span.attributes.append(_kv("tool_call.id", f"call-{n}"))
        span.attributes.append(KeyValue(key="input.value", value=_tool_value(value)))
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (4, 2, 0)
    (trace,) = read_traces(path)
    assert [(c.name, c.args, c.call_id) for c in trace.tool_calls] == [
        ("t0", {"order_id": "ORD-7731", "amount": 49.99}, "call-0"),
        ("t1", {"query": "refund policy"}, "call-1"),
        ("t2", {"order_id": "ORD-7731"}, "call-2"),
        ("t3", {"order_id": "ORD-7731"}, "call-3"),
        ("t4", {"order_id": "ORD-7731", "args": [1]}, "call-4"),
    ]
    assert_same(path, monkeypatch)


# -- replies of agent and root spans, model spans of Vercel and OpenInference, and the tool
# -- spans of Pydantic AI v2, MLflow and LangSmith (``core/src/facts.rs``, ``tools.rs``) ------

#: What an ``agents.reply`` key (or Vercel's model reply) may hold: text, text ending like a
#: repr, JSON strings, objects with a framework's wrappers (nested past the depth limit too),
#: text blocks, placeholders, numbers, JSON either parser reads alone, structured values.
_REPLIES: list[Any] = [
    "Refund issued.",
    "",
    "<elided>",
    "AgentRunResult(output='Refund issued.')",
    "done (see above)",
    '"Refund issued."',
    '"f(x)"',
    '""',
    '"<elided>"',
    '{"output": "Refund issued."}',
    '{"outputs": {"output": "ok"}, "answer": "no"}',
    '{"answer": {"answer": {"answer": {"answer": {"answer": "deep"}}}}}',
    '{"answer": {"answer": {"answer": {"answer": {"text": "deep"}}}}}',
    '{"result": 5}',
    '{"result": ""}',
    '{"text": "hi"}',
    '{"text": null, "content": "c"}',
    '{"content": "c"}',
    '{"order_id": 1}',
    '{"output": "RunResult(final_output=\'x\')"}',
    '{"output": [{"text": "a"}, {"text": "b"}]}',
    '[{"text": "a"}, {"text": "b"}, 1, {"text": "<elided>"}, {"text": 2}]',
    "[]",
    "[1, 2]",
    "{'output': 'x'}",
    "[not json",
    '{"a": 1234567890123456789012}',
    '{"a": 12345678901234567890}',
    "NaN",
    '{"a": NaN}',
    '"\\ud800"',
    7,
    1.5,
    True,
    {"output": "x"},
    ["a"],
]


def _reply(draw: st.DrawFn) -> AnyValue:
    if draw(st.integers(0, 4)):
        return _tool_value(draw(st.sampled_from(_REPLIES)))
    return _tool_value(draw(_json_text()))


#: Keys that hold an agent's or a model's reply, of every convention.
_REPLY_KEYS = [
    "final_result",
    "ai.response.text",
    "output.value",
    "traceloop.entity.output",
    "mlflow.spanOutputs",
    "gen_ai.output.messages",
    "llm.output_messages.0.message.content",
]


def _vercel_calls(draw: st.DrawFn) -> AnyValue:
    """``ai.response.toolCalls``: a JSON list of listed calls (each with or without its
    members; some items JSON text themselves), or text and values that are no list."""
    items: list[Any] = []
    for i in range(draw(st.integers(0, 3))):
        item: dict[str, Any] = {}
        for member in draw(st.lists(st.sampled_from(["toolCallId", "toolName", "input", "args"]))):
            if member == "toolCallId":
                item[member] = draw(st.sampled_from([f"call-{i}", i, None, True, "<elided>"]))
            elif member == "toolName":
                item[member] = draw(st.sampled_from(["lookup", "", "<elided>", 3]))
            else:
                plain = st.sampled_from(['{"a": 1}', "{}", "[1]", "", {"a": [1]}, None, 2])
                odd = st.sampled_from(["{'a': 1}", '{"a": 1, "a": NaN}', "<elided>"])
                item[member] = draw(st.one_of(plain, plain, plain, odd, _arguments()))
        items.append(json.dumps(item) if draw(st.integers(0, 9)) == 0 else item)
    items += draw(st.lists(st.sampled_from(["x", 1, None, ["y"]]), max_size=1))
    text = json.dumps(items)
    odd = ['{"toolName": "x"}', json.dumps(text), "", "calls", "[1,", {"toolName": "x"}, ["a"]]
    return _tool_value(text if draw(st.integers(0, 4)) else draw(st.sampled_from(odd)))


#: ``tool_arguments``, ``mlflow.spanInputs``, ``gen_ai.prompt``: JSON text of an object,
#: encoded once more (MLflow), a LangChain run's single ``input`` holding JSON or a repr,
#: text a Python literal or whitespace may start, structured values.
_PLAIN_ARGS: list[Any] = [
    json.dumps('{"a": 1}'),
    json.dumps("[1]"),
    json.dumps(""),
    json.dumps("{bad"),
    json.dumps('{"a": 1234567890123456789012}'),
    '"\\ud800"',
    "null",
    '{"input": "{\'a\': 1}"}',
    '{"input": "{\\"a\\": 1}"}',
    '{"input": "plain text"}',
    '{"input": " {\\"a\\": 1}"}',
    '{"input": "\\u00a0{\'a\': 1}"}',
    '{"input": "\\u001c{}"}',
    '{"input": "[1]"}',
    '{"input": 1}',
    '{"input": "x", "other": 1}',
    '{"input": "<elided>"}',
    '{"input": "{}", "input": "{\\"b\\": 2}"}',
    '{"input": {"a": 1}}',
    "\u00a0{'a': 1}",
    "\x1c{}",
    " plain",
    "\x0b{}",
    {"input": "x"},
    {"input": 3},
    {"input": "a", "b": "c"},
]


def _plain_tool_span(draw: st.DrawFn, span: Any) -> None:
    names = st.sampled_from(["lookup", "final_result", "", "<elided>"])
    kind = draw(st.sampled_from(["pydantic_v2", "mlflow", "langsmith"]))
    if kind == "pydantic_v2":
        span.name = "running tool"
        keys = ["gen_ai.tool.name", "gen_ai.tool.call.id", "tool_arguments"]
    elif kind == "mlflow":
        span.name = draw(names)
        span.attributes.append(_kv("mlflow.spanType", draw(st.sampled_from(['"TOOL"', "TOOL"]))))
        keys = ["mlflow.spanInputs", "mlflow.spanOutputs"]
    else:
        span.name = draw(names)
        span.attributes.append(_kv("langsmith.span.kind", draw(st.sampled_from(["tool", "TOOL"]))))
        keys = ["gen_ai.prompt", "gen_ai.completion"]
    for key in draw(st.lists(st.sampled_from(keys), unique=True)):
        if key == "gen_ai.tool.name":
            value = _kv(key, draw(names)).value
        elif key == "gen_ai.tool.call.id":
            value = _kv(key, draw(st.sampled_from(["call-1", 7, "", "<elided>"]))).value
        else:
            choice = draw(st.integers(0, 3))
            if choice == 0:
                value = _tool_value(draw(st.sampled_from(_TOOL_ARGS)))
            elif choice == 1:
                value = _tool_value(json.dumps(draw(_arguments())))  # encoded once more
            else:
                value = _tool_value(draw(st.sampled_from(_PLAIN_ARGS)))
        span.attributes.append(KeyValue(key=key, value=value))


def _reply_span(draw: st.DrawFn, span: Any) -> None:
    """An agent span of one convention (or a workflow span) with reply keys of any."""
    kind = draw(st.sampled_from(["vercel", "traceloop", "openinference", "pydantic", "workflow"]))
    if kind == "vercel":
        span.name = "ai.generateText"
        span.attributes.append(_kv("ai.telemetry.functionId", "shop"))
    elif kind == "traceloop":
        span.name = "refund_agent.agent"
        span.attributes.append(_kv("traceloop.span.kind", "agent"))
        span.attributes.append(_kv("traceloop.entity.name", "refund_agent"))
    elif kind == "openinference":
        span.name = "Agent"
        span.attributes.append(_kv("openinference.span.kind", "AGENT"))
    elif kind == "pydantic":
        span.name = "agent run"
    else:
        span.name = "invocation"
    _reply_keys(draw, span)


def _reply_keys(draw: st.DrawFn, span: Any, keys: list[str] = _REPLY_KEYS) -> None:
    for key in draw(st.lists(st.sampled_from(keys), unique=True, max_size=3)):
        span.attributes.append(KeyValue(key=key, value=_reply(draw)))
    if draw(st.integers(0, 5)) == 0:
        event = span.events.add(name=draw(st.sampled_from(["gen_ai.choice", "exception"])))
        event.attributes.append(_kv("message", "from an event"))


def _other_model_span(draw: st.DrawFn, span: Any) -> None:
    """A Vercel ``doGenerate`` or OpenInference ``LLM`` span: listed calls, reply, finish
    reason, usage; sometimes ADK's response or GenAI output messages besides."""
    if draw(st.booleans()):
        span.name = "ai.generateText.doGenerate"
        if draw(st.integers(0, 3)):
            span.attributes.append(KeyValue(key="ai.response.toolCalls", value=_vercel_calls(draw)))
        finish = draw(st.sampled_from([None, None, "tool-calls", "stop", "TOOL-CALLS", "ſtop"]))
        if finish is not None:
            span.attributes.append(_kv("ai.response.finishReason", finish))
        for key in draw(
            st.lists(st.sampled_from(["ai.usage.inputTokens", "ai.usage.outputTokens"]))
        ):
            span.attributes.append(_kv(key, draw(st.sampled_from([5, "12", -1]))))
        span.attributes.append(_kv("ai.model.id", "m1"))
    else:
        span.name = "llm"
        span.attributes.append(_kv("openinference.span.kind", "LLM"))
        if draw(st.integers(0, 3)) == 0:
            key = "llm.output_messages.0.message.tool_calls.0.tool_call.function.name"
            span.attributes.append(_kv(key, "lookup"))
    if draw(st.integers(0, 3)):  # a model's own reply keys, mostly
        _reply_keys(draw, span, ["ai.response.text", "llm.output_messages.0.message.content"])
    else:
        _reply_keys(draw, span)
    if draw(st.integers(0, 6)) == 0:
        span.attributes.append(_kv("gcp.vertex.agent.llm_response", "{}"))


@st.composite
def reply_traces(draw: st.DrawFn) -> TracesData:
    """A trace whose root (an agent span of some convention, or a span no dialect names)
    records a reply under any convention's key, with agent, model and tool spans below."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    ss.scope.name = draw(st.sampled_from(["ai", "pydantic-ai", "traceloop"]))
    trace_id = b"\x01" * 16
    root = ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, start_time_unix_nano=10)
    if draw(st.booleans()):
        _reply_span(draw, root)
    else:
        root.name = "handle request"
        _reply_keys(draw, root)
    for n in range(draw(st.integers(1, 4))):
        span = ss.spans.add(trace_id=trace_id, parent_span_id=b"\x02" * 8)
        span.span_id = bytes([3 + n]) * 8
        span.start_time_unix_nano = 20 + n
        kind = draw(st.sampled_from(["agent", "model", "tool"]))
        if kind == "agent":
            _reply_span(draw, span)
        elif kind == "model":
            _other_model_span(draw, span)
        else:
            _plain_tool_span(draw, span)
    return data


@needs_core
@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=reply_traces())
def test_generated_replies_and_tool_spans_read_the_same_both_ways(
    data: TracesData, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert_same(path, monkeypatch, usage=True)
    # the span facts themselves, fields the traces may not show included (a listed call's
    # arguments, a model's empty reply)
    assert _span_facts(path, monkeypatch, core.CORE) == _span_facts(path, monkeypatch, core.PYTHON)


def _span_facts(path: Path, monkeypatch: pytest.MonkeyPatch, which: str) -> list[str]:
    """``repr`` of every ``SpanFact`` ``TraceFacts`` keeps reading ``path`` through ``which``
    path (with usage), in span order."""
    kept: list[SpanFact] = []
    add = TraceFacts.add

    def keep(self: TraceFacts, span: Any) -> bool:
        added = add(self, span)
        if added and span.span_id in self.facts:
            kept.append(self.facts[span.span_id])
        return added

    with reading_with(monkeypatch, which), one_by_one(monkeypatch):
        monkeypatch.setattr(TraceFacts, "add", keep)
        assert list(read_traces(path, usage=True))
        monkeypatch.setattr(TraceFacts, "add", add)
    return [repr(fact) for fact in sorted(kept, key=lambda fact: fact.span_id)]


@contextmanager
def one_by_one(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``read_traces`` inside the block reads in the facts mode one span at a time
    (``READ_FACTS``, every span through ``TraceFacts.add``), not in parts."""
    with monkeypatch.context() as m:
        m.setattr(reading, "decoding_for", lambda needs: SPANS if needs.content else READ_FACTS)
        yield


def _one_span_trace(*spans: tuple[str, dict[str, Any]]) -> TracesData:
    """A root ``invoke_agent`` span and, under it, a span of each (name, attributes)."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    ss.scope.name = "ai"
    trace_id = b"\x01" * 16
    ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, name="invoke_agent shop")
    for n, (name, attributes) in enumerate(spans):
        span = ss.spans.add(trace_id=trace_id, parent_span_id=b"\x02" * 8, name=name)
        span.span_id = bytes([3 + n]) * 8
        span.start_time_unix_nano = 20 + n
        for key, value in attributes.items():
            span.attributes.append(KeyValue(key=key, value=_tool_value(value)))
    return data


@needs_core
def test_plain_replies_and_listed_calls_are_read_by_the_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Agent spans with a framework's reply key (text, JSON text, a wrapper), Vercel model
    spans with their listed calls and an ADK response come as facts; a repr and a listed
    call as JSON text of its own do not."""
    calls = [
        {"toolCallId": "c1", "toolName": "lookup", "input": '{"order_id": "ORD-1"}'},
        {"toolCallId": 2, "toolName": "refund", "args": {"amount": 5}},
        {"toolName": "<elided>", "input": "{}"},
        {"toolName": "both", "input": '{"a": 1}', "args": '{"b": 2}'},
    ]
    data = _one_span_trace(
        ("agent run", {"final_result": "Refund issued."}),
        ("agent run", {"final_result": '{"outputs": {"output": "Wrapped."}}'}),
        ("ai.generateText", {"ai.response.text": '"Quoted."'}),
        ("ai.generateText.doGenerate", {"ai.response.toolCalls": json.dumps(calls)}),
        ("ai.generateText.doGenerate", {"ai.response.text": "Done."}),
        (
            "ai.generateText.doGenerate",
            {"ai.response.text": "", "ai.response.finishReason": "tool-calls"},
        ),
        ("agent run", {"final_result": "AgentRunResult(output='x')"}),
        ("call_llm", {"gcp.vertex.agent.llm_response": "{}"}),
        # a listed call as JSON text of its own: the Python readers'
        (
            "ai.generateText.doGenerate",
            {"ai.response.toolCalls": json.dumps([json.dumps(calls[0])])},
        ),
    )
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (8, 2, 0)
    facts = _facts_of(path, monkeypatch)
    assert [(f.reply, f.asked_unlisted) for f in facts if f.name.endswith("doGenerate")] == [
        (None, False),
        ("Done.", False),
        (None, True),  # an empty reply is none: the finish reason tells of calls not listed
    ]
    replies = [span.reply for span in _facts_of(path, monkeypatch) if span.reply is not None]
    assert replies == ["Refund issued.", "Wrapped.", "Quoted.", "Done."]
    listed = [
        (c.name, c.call_id, c.args, c.source)
        for span in _facts_of(path, monkeypatch)
        for c in span.model_calls
    ]
    assert listed == [
        ("lookup", "c1", {"order_id": "ORD-1"}, "model:ai.response.toolCalls"),
        ("refund", "2", {"amount": 5}, "model:ai.response.toolCalls"),
        ("both", None, {"a": 1}, "model:ai.response.toolCalls"),  # ``input`` first
    ]
    assert_same(path, monkeypatch, usage=True)


def _facts_of(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[SpanFact]:
    """The span facts the core hands out (``FactSpan``) reading ``path``, in span order."""
    collected: list[SpanFact] = []
    add = TraceFacts.add

    def keep(self: TraceFacts, span: Any) -> bool:
        if isinstance(span, FactSpan):
            collected.append(span.fact)
        return add(self, span)

    with reading_with(monkeypatch, core.CORE), one_by_one(monkeypatch):
        monkeypatch.setattr(TraceFacts, "add", keep)
        assert list(read_traces(path))
        monkeypatch.setattr(TraceFacts, "add", add)
    return sorted(collected, key=lambda fact: fact.start_ns)


@needs_core
def test_plain_tool_spans_of_pydantic_v2_mlflow_and_langsmith_are_read_by_the_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Pydantic AI v2 ``running tool``, MLflow ``TOOL`` (arguments encoded once more) and
    LangSmith ``tool`` spans (a single ``input`` holding JSON, text that is no object) come
    as facts; LangSmith's Python reprs do not."""
    data = _one_span_trace(
        (
            "running tool",
            {
                "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": "c1",
                "tool_arguments": '{"order_id": "ORD-1"}',
            },
        ),
        ("refund", {"mlflow.spanType": '"TOOL"', "mlflow.spanInputs": json.dumps('{"amount": 5}')}),
        ("search", {"langsmith.span.kind": "tool", "gen_ai.prompt": '{"input": "{\\"q\\": 1}"}'}),
        ("notes", {"langsmith.span.kind": "tool", "gen_ai.prompt": '{"input": "plain"}'}),
        ("repr", {"langsmith.span.kind": "tool", "gen_ai.prompt": "{'input': 'x'}"}),
        # a repr after a space Python's ``lstrip`` takes and ASCII trimming does not
        ("nbsp", {"langsmith.span.kind": "tool", "gen_ai.prompt": "\u00a0{'a': 1}"}),
        ("text", {"langsmith.span.kind": "tool", "gen_ai.prompt": " plain"}),
        ("structured", {"mlflow.spanType": "TOOL", "mlflow.spanInputs": {"amount": 7}}),
        # a structured single input holding JSON text: the Python readers'
        ("single", {"langsmith.span.kind": "tool", "gen_ai.prompt": {"input": '{"a": 1}'}}),
    )
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (7, 3, 0)
    (trace,) = read_traces(path)
    assert [(c.name, c.args, c.call_id) for c in trace.tool_calls][:4] == [
        ("lookup", {"order_id": "ORD-1"}, "c1"),
        ("refund", {"amount": 5}, None),
        ("search", {"q": 1}, None),
        ("notes", {"input": "plain"}, None),
    ]
    assert ("structured", {"amount": 7}) in [(c.name, c.args) for c in trace.tool_calls]
    assert_same(path, monkeypatch, usage=True)


# -- Strands: tool arguments, replies and a model's calls in span events ------------------------

#: A ``gen_ai.choice`` event's message or a tool's result, as Strands writes them and near
#: them: text, JSON text of a string, of text blocks, of an object; placeholders; text the
#: core declines (not JSON though it looks so, a repr, a lone surrogate, a wide int); list
#: and structured values; values of other types.
_EVENT_TEXTS: list[Any] = [
    "Refund issued.",
    "Refund issued.",
    '[{"text": "Refund "}, {"text": "issued."}]',
    '[{"toolUse": {"toolUseId": "c1", "name": "lookup", "input": {"a": 1}}}]',
    '[{"text": "<elided>"}, {"text": 3}, "x", {"text": ""}]',
    '"Quoted."',
    '"<elided>"',
    '{"text": "In text."}',
    '{"content": "In content."}',
    '{"text": 1, "content": "skipped"}',
    '{"text": "a", "text": "b"}',
    '{"a": 12345678901234567890}',
    "",
    "<elided>",
    "[not json",
    "{bad",
    " [1]",
    "Result(output='x')",
    '"\\ud800"',
    "[]",
    "{}",
    7,
    True,
    ["a", "b"],
    {"text": "structured"},
]


#: The texts of ``_EVENT_TEXTS`` that both paths read (drawn as often as all of them).
_PLAIN_EVENT_TEXTS = ["Done.", '[{"text": "a"}, {"text": "b"}]', '"Q."', '{"text": "t"}', ""]


def _event_text(draw: st.DrawFn) -> AnyValue:
    texts = st.one_of(st.sampled_from(_PLAIN_EVENT_TEXTS), st.sampled_from(_EVENT_TEXTS))
    return _tool_value(draw(texts))


#: Arguments as most instrumentations write them: JSON text both parsers read alike.
_PLAIN_ARGUMENTS = st.sampled_from(['{"a": 1}', '{"q": "x", "n": [1, 2.5]}', "{}"])


def _parts(draw: st.DrawFn, names: list[Any]) -> list[Any]:
    """GenAI message parts: text, tool calls (a name of ``names``, an id, arguments as JSON
    text, an object, null or absent), tool responses, and items that are no part."""
    parts: list[Any] = []
    for i in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["text", "tool_call", "tool_call", "response", "odd"]))
        if kind == "text":
            content = draw(st.sampled_from(["ok", "", "<elided>", 3]))
            parts.append({"type": "text", "content": content})
        elif kind == "tool_call":
            call: dict[str, Any] = {"type": "tool_call", "name": draw(st.sampled_from(names))}
            call["id"] = draw(st.sampled_from([f"c{i}", i, 2**63, None, "<elided>"]))
            args = draw(st.sampled_from(["text", "object", "null", "absent", "list"]))
            if args == "text":
                call["arguments"] = draw(st.one_of(_PLAIN_ARGUMENTS, _arguments()))
            elif args == "object":
                call["arguments"] = draw(st.sampled_from([{"a": 1}, {}, {"a": {"b": [1, 2.5]}}]))
            elif args == "null":
                call["arguments"] = None
            elif args == "list":
                call["arguments"] = [1]
            parts.append(call)
        elif kind == "response":
            parts.append({"type": "tool_call_response", "id": "c0", "response": [{"text": "r"}]})
        else:
            parts.append(draw(st.sampled_from(["part", 1, None])))
    return parts


def _messages(draw: st.DrawFn, names: list[Any]) -> AnyValue:
    """GenAI input or output messages: JSON text of a list (messages with parts, or a plain
    ``content``), and values that are none: other JSON, text that is not JSON, lists and
    structured values, an empty value."""
    messages: list[Any] = []
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.integers(0, 4)):
            messages.append({"role": "assistant", "parts": _parts(draw, names)})
        else:
            messages.append({"role": "assistant", "content": draw(st.sampled_from(["Hi.", ""]))})
    text = json.dumps(messages)
    if draw(st.integers(0, 5)):
        return _tool_value(text)
    odd = st.sampled_from(['{"parts": []}', "[1,", "none", "", ["a"], {"parts": "x"}, 5, None])
    value = draw(odd)
    return AnyValue() if value is None else _tool_value(value)


#: The events Strands writes (both of its conventions), and one no reader reads.
_DETAILS = "gen_ai.client.inference.operation.details"
_EVENTS = ["gen_ai.choice", _DETAILS, "gen_ai.user.message", "gen_ai.tool.message", "exception"]


def _events(draw: st.DrawFn, span: Any, names: list[Any]) -> None:
    """Up to four events of the kinds Strands writes, each with the keys its readers look
    at (or others, or twice)."""
    for _ in range(draw(st.integers(0, 4))):
        event = span.events.add(name=draw(st.sampled_from(_EVENTS)), time_unix_nano=25)
        if event.name == "gen_ai.choice":
            for key in draw(st.lists(st.sampled_from(["message", "message", "finish_reason"]))):
                event.attributes.append(KeyValue(key=key, value=_event_text(draw)))
        elif event.name == _DETAILS:
            keys = ["gen_ai.output.messages", "gen_ai.input.messages", "gen_ai.system_instructions"]
            for key in draw(st.lists(st.sampled_from(keys), max_size=2)):
                event.attributes.append(KeyValue(key=key, value=_messages(draw, names)))
        elif event.name == "gen_ai.tool.message":
            for key in draw(st.lists(st.sampled_from(["content", "id", "role"]), max_size=3)):
                if key == "content":
                    odd = st.sampled_from([{"a": 1}, {}, 3, ["a"], "", "<elided>"])
                    value = _tool_value(draw(st.one_of(_PLAIN_ARGUMENTS, _arguments(), odd)))
                    if draw(st.integers(0, 9)) == 0:
                        value = AnyValue(bytes_value=b'{"a": 1}')
                elif key == "id":
                    value = _tool_value(draw(st.sampled_from(["c9", 9, "", "<elided>", 1.5])))
                else:
                    value = _tool_value("tool")
                event.attributes.append(KeyValue(key=key, value=value))
        else:
            event.attributes.append(KeyValue(key="exception.message", value=_event_text(draw)))


def _strands_tool_span(draw: st.DrawFn, span: Any) -> None:
    """An ``execute_tool`` span: arguments in an attribute (the latest conventions) or in
    events, a status (``error``: a failure whose text is in a choice event or the result),
    and now and then a key of another framework's arguments (the Python readers')."""
    name = draw(st.sampled_from(["lookup", "refund", "final_result", ""]))
    span.name = f"execute_tool {name}"
    span.attributes.append(_kv("gen_ai.operation.name", "execute_tool"))
    if draw(st.integers(0, 4)):
        span.attributes.append(_kv("gen_ai.tool.name", name))
    call_id = draw(st.sampled_from([None, None, None, "c1", 7, "<elided>"]))
    if call_id is not None:
        span.attributes.append(_kv("gen_ai.tool.call.id", call_id))
    if draw(st.integers(0, 3)) == 0:
        arguments = draw(st.one_of(_PLAIN_ARGUMENTS, _arguments()))
        span.attributes.append(_kv("gen_ai.tool.call.arguments", arguments))
    status = draw(st.sampled_from([None, "success", "error", "error", "ERROR", 1]))
    if status is not None:
        span.attributes.append(_kv("gen_ai.tool.status", status))
    if draw(st.booleans()):
        span.attributes.append(KeyValue(key="gen_ai.tool.call.result", value=_event_text(draw)))
    if draw(st.integers(0, 4)) == 0:  # ADK's legacy pair: "{}" twice is "not captured"
        pair = ["gcp.vertex.agent.tool_call_args", "gcp.vertex.agent.tool_response"]
        for key in pair:
            value = draw(st.sampled_from(["{}", "{}", '{"a": 1}']))
            span.attributes.append(_kv(key, value))
    elif draw(st.integers(0, 4)) == 0:  # one of those, Pydantic AI v2's, Traceloop's input
        other = [
            "gcp.vertex.agent.tool_call_args",
            "gcp.vertex.agent.tool_response",
            "tool_arguments",
            "traceloop.entity.input",
        ]
        values = st.sampled_from(["{}", "{}", '{"a": 1}', "", {"a": 1}, 3])
        for key in draw(st.lists(st.sampled_from(other), min_size=1, max_size=2, unique=True)):
            span.attributes.append(KeyValue(key=key, value=_tool_value(draw(values))))
    names = [name, "lookup", "other", 3, "<elided>"]
    if draw(st.booleans()):  # the events Strands writes on a tool span, mostly well formed
        event = span.events.add(name="gen_ai.tool.message", time_unix_nano=21)
        odd = st.sampled_from(["", "<elided>", "[1]", 3])
        content = draw(st.one_of(_PLAIN_ARGUMENTS, _PLAIN_ARGUMENTS, odd))
        event.attributes.append(_kv("content", content))
        if draw(st.integers(0, 3)):
            call_ids = ["m1", "m1", 9, "", "<elided>"]
            event.attributes.append(_kv("id", draw(st.sampled_from(call_ids))))
    if draw(st.booleans()):
        event = span.events.add(name=_DETAILS, time_unix_nano=22)
        messages = [{"role": "tool", "parts": _parts(draw, names)} for _ in range(2)]
        event.attributes.append(_kv("gen_ai.input.messages", json.dumps(messages)))
    if draw(st.booleans()):
        _events(draw, span, names)
    if draw(st.integers(0, 3)) == 0:
        span.status.CopyFrom(Status(code=2, message=draw(st.sampled_from(["", "boom"]))))


@st.composite
def strands_traces(draw: st.DrawFn) -> TracesData:
    """A Strands agent trace: an ``invoke_agent`` root, then chat, tool, event-loop cycle and
    agent spans, whose replies, calls and arguments are in span events."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    ss.scope.name = "strands.telemetry.tracer"
    trace_id = b"\x01" * 16
    root = ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, start_time_unix_nano=10)
    root.name = "invoke_agent shop"
    root.attributes.append(_kv("gen_ai.operation.name", "invoke_agent"))
    root.attributes.append(_kv("gen_ai.agent.name", "shop"))
    _reply_events(draw, root)
    for n in range(draw(st.integers(1, 4))):
        span = ss.spans.add(trace_id=trace_id, parent_span_id=b"\x02" * 8)
        span.span_id = bytes([3 + n]) * 8
        span.start_time_unix_nano = 20 + n
        kind = draw(st.sampled_from(["chat", "chat", "tool", "tool", "cycle", "agent"]))
        if kind == "tool":
            _strands_tool_span(draw, span)
            continue
        operation, span.name = {
            "chat": ("chat", "chat"),
            "cycle": ("execute_event_loop_cycle", "execute_event_loop_cycle"),
            "agent": ("invoke_agent", "invoke_agent helper"),
        }[kind]
        span.attributes.append(_kv("gen_ai.operation.name", operation))
        if kind == "chat":
            finish = draw(st.sampled_from([None, ["tool_use"], ["end_turn"]]))
            if finish is not None:
                span.attributes.append(_kv("gen_ai.response.finish_reasons", finish))
            span.attributes.append(_kv("gen_ai.usage.input_tokens", 10))
        _reply_events(draw, span)
    return data


def _reply_events(draw: st.DrawFn, span: Any) -> None:
    """The events a Strands chat or agent span has, mostly well formed: output messages in
    an inference-details event (the latest conventions), a choice event (the older ones),
    then others."""
    names = ["lookup", "lookup", "refund", "", "<elided>", 3]
    if draw(st.booleans()):  # a response that calls a tool (and maybe more)
        call = {"type": "tool_call", "name": draw(st.sampled_from(names)), "id": "r1"}
        call["arguments"] = draw(st.one_of(_PLAIN_ARGUMENTS, st.just({"a": [1]})))
        messages = [{"role": "assistant", "parts": [call, *_parts(draw, names)]}]
        event = span.events.add(name=_DETAILS, time_unix_nano=24)
        event.attributes.append(_kv("gen_ai.output.messages", json.dumps(messages)))
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            event = span.events.add(name=_DETAILS, time_unix_nano=25)
            event.attributes.append(
                KeyValue(key="gen_ai.output.messages", value=_messages(draw, names))
            )
        else:
            event = span.events.add(name="gen_ai.choice", time_unix_nano=25)
            event.attributes.append(KeyValue(key="message", value=_event_text(draw)))
    if draw(st.booleans()):
        _events(draw, span, names)


@needs_core
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=strands_traces())
def test_generated_strands_traces_read_the_same_both_ways(
    data: TracesData, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert_same(path, monkeypatch, usage=True)
    assert _span_facts(path, monkeypatch, core.CORE) == _span_facts(path, monkeypatch, core.PYTHON)


_CORPUS = Path(__file__).parents[1] / "data/corpus"


@needs_core
@pytest.mark.parametrize("family", ["strands", "strands-latest-semconv"])
def test_the_core_reads_the_spans_of_the_strands_fixtures(
    family: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both Strands conventions (arguments, replies and calls in span events) come as facts:
    the tool calls with their arguments and ids, a failed call's text from its events."""
    path = _CORPUS / family / "f_tool_error_retry.otlp.pb"
    assert _counts(path, monkeypatch, usage=True) == (10, 0, 5)  # the loop cycles: heads
    found = _facts_of(path, monkeypatch)
    calls = [f.call for f in found if f.call is not None]
    legacy = family == "strands"  # arguments in a tool message event, not an attribute
    source = "strands:gen_ai.tool.message" if legacy else "genai:gen_ai.tool.call.arguments"
    assert [(c.name, c.args, c.call_id, c.source) for c in calls][0] == (
        "lookup_order",
        {"order_id": "ORD-7731"},
        "call_t1_s1_1",
        source,
    )
    # the failed call: its text from the choice event (legacy) or none but "error"; the
    # span's exception message is the error
    failure = (
        "Error: ConnectionError - payment gateway timeout, please retry" if legacy else "error"
    )
    assert [c.failure for c in calls if c.failure] == [failure]
    assert [f.error for f in found if f.error] == ["payment gateway timeout, please retry"]
    listed = [c.name for f in found for c in f.model_calls]
    # the legacy chat spans list their calls in a choice event's toolUse blocks: not read
    assert listed == ([] if legacy else ["lookup_order", "verify_identity"] + ["issue_refund"] * 2)
    replies = [f.reply for f in found if f.reply is not None]
    assert len(replies) == 2 and replies[0].startswith("Your refund of $49.99")
    assert_same(path, monkeypatch, usage=True)


@needs_core
def test_strands_arguments_in_events_are_read_by_the_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A tool span without arguments or a call id reads them from its events: the first tool
    message event with arguments (its ``id``), else the first inference-details event part
    calling the tool by name; a failure's text is its first choice event's."""
    data = _one_span_trace(
        ("execute_tool lookup", {"gen_ai.operation.name": "execute_tool"}),
        ("execute_tool refund", {"gen_ai.operation.name": "execute_tool"}),
        (
            "execute_tool lookup",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.status": "error"},
        ),
    )
    spans = data.resource_spans[0].scope_spans[0].spans
    message, details, failed = spans[1], spans[2], spans[3]
    for content, call_id in (("<elided>", "m0"), ('{"q": "x"}', "m1"), ('{"q": "y"}', "m2")):
        event = message.events.add(name="gen_ai.tool.message")
        event.attributes.extend([_kv("content", content), _kv("id", call_id)])
    parts = [
        {"type": "tool_call", "name": "lookup", "id": "d0", "arguments": {"a": 0}},
        {"type": "tool_call", "name": "refund", "id": "d1", "arguments": '{"a": 1}'},
        {"type": "tool_call", "name": "refund", "id": "d2", "arguments": {"a": 2}},
    ]
    event = details.events.add(name="gen_ai.client.inference.operation.details")
    event.attributes.append(_kv("gen_ai.input.messages", json.dumps([{"parts": parts}])))
    for text in ('[{"text": "<elided>"}]', '[{"text": "Timed "}, {"text": "out."}]', "later"):
        failed.events.add(name="gen_ai.choice").attributes.append(_kv("message", text))
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (4, 0, 0)
    calls = [f.call for f in _facts_of(path, monkeypatch) if f.call is not None]
    assert [(c.name, c.args, c.call_id, c.source, c.failure) for c in calls] == [
        ("lookup", {"q": "x"}, "m1", "strands:gen_ai.tool.message", None),
        ("refund", {"a": 1}, "d1", "strands:gen_ai.input.messages", None),
        ("lookup", None, None, "genai:gen_ai.tool.name", "Timed out."),
    ]
    assert [f.error for f in _facts_of(path, monkeypatch) if f.error] == ["Timed out."]
    assert_same(path, monkeypatch, usage=True)


@needs_core
def test_adk_legacy_and_pydantic_v2_arguments_are_read_by_the_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """GenAI tool spans with their arguments under ADK's legacy key (``"{}"`` next to a
    response ``"{}"``: not captured; alone: no arguments) or Pydantic AI v2's come as facts;
    Traceloop's input (its envelopes) does not."""
    tool = {"gen_ai.operation.name": "execute_tool"}
    adk = "gcp.vertex.agent.tool_call_args"
    data = _one_span_trace(
        ("execute_tool a", tool | {adk: "{}", "gcp.vertex.agent.tool_response": "{}"}),
        ("execute_tool b", tool | {adk: "{}", "gcp.vertex.agent.tool_response": '{"ok": 1}'}),
        ("execute_tool c", tool | {adk: '{"q": 1}', "tool_arguments": '{"q": 2}'}),
        ("execute_tool d", tool | {"tool_arguments": {"q": 3}}),
        ("execute_tool e", tool | {"traceloop.entity.input": '{"q": 4}'}),
    )
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (5, 1, 0)
    calls = [f.call for f in _facts_of(path, monkeypatch) if f.call is not None]
    adk_source = "adk:gcp.vertex.agent.tool_call_args"
    assert [(c.name, c.args, c.source) for c in calls] == [
        ("a", None, adk_source),
        ("b", {}, adk_source),
        ("c", {"q": 1}, adk_source),
        ("d", {"q": 3}, "pydantic-ai:tool_arguments"),
    ]
    assert_same(path, monkeypatch, usage=True)


# -- the calls a model lists in ADK's response and in OpenInference's flattened keys -----------


def _adk_part(draw: st.DrawFn, i: int) -> Any:
    """A part of an ADK ``LlmResponse``: a function call (a name or none, arguments as an
    object, JSON text, null, absent or other), text (a thought or not), or neither."""
    kind = draw(st.sampled_from(["call", "call", "text", "odd"]))
    if kind == "call":
        call: dict[str, Any] = {"name": draw(st.sampled_from(["lookup", "", "<elided>", 3]))}
        for member in draw(st.lists(st.sampled_from(["args", "id"]), unique=True)):
            if member == "id":
                call["id"] = draw(st.sampled_from([f"adk-{i}", i, None, "<elided>"]))
            else:
                plain = st.sampled_from([{"a": 1}, {}, None, '{"a": 1}', "[1]", 2, "<elided>"])
                call["args"] = draw(st.one_of(plain, plain, _arguments()))
        part: dict[str, Any] = {"function_call": call}
        if draw(st.integers(0, 5)) == 0:
            part["text"] = "besides"
        return part
    if kind == "text":
        part = {"text": draw(st.sampled_from(["Done.", "", "<elided>", 3]))}
        if draw(st.booleans()):
            part["thought"] = draw(st.sampled_from([True, False, None, 0, 1, "", "x", [], {}]))
        return part
    return draw(st.sampled_from(["part", None, {"function_call": "x", "text": "odd"}]))


def _adk_response(draw: st.DrawFn) -> AnyValue:
    """``gcp.vertex.agent.llm_response``: JSON text of a response (parts, or content that is
    no object), ``{}`` (content capture off), text that is no JSON object, wide ints (the
    standard library's), a structured value, a number."""
    parts = [_adk_part(draw, i) for i in range(draw(st.integers(0, 3)))]
    response: Any = {"content": {"role": "model", "parts": parts}}
    if draw(st.integers(0, 6)) == 0:
        response = draw(st.sampled_from([{"content": "x"}, {"content": {"parts": {}}}, {}]))
    text = json.dumps(response)
    if draw(st.integers(0, 4)):
        return _tool_value(text)
    odd = st.sampled_from(
        [
            "{}",
            "",
            "[]",
            "{bad",
            '{"content": {"parts": [{"text": "a", "n": 12345678901234567890}]}}',
            ' {"content": {}}',
            {"content": "x"},
            7,
        ]
    )
    return _tool_value(draw(odd))


#: Indices of OpenInference's flattened keys: digits, and what Python's ``isdigit`` and
#: ``int`` read otherwise (a leading zero, other scripts' digits) or not at all.
_FLAT_INDICES = ["0", "0", "0", "1", "1", "1", "2", "10", "10", "01", "x", "", "\u0661"]
_FLAT_FIELDS = [
    "tool_call.function.name",
    "tool_call.function.name",
    "tool_call.function.arguments",
    "tool_call.id",
    "tool_call.function",
    "",
]


def _flat_calls(draw: st.DrawFn, span: Any) -> None:
    """``llm.output_messages.{i}.message.tool_calls.{j}.{field}`` keys, some repeated."""
    for _ in range(draw(st.integers(0, 8))):
        i, j = draw(st.sampled_from(_FLAT_INDICES)), draw(st.sampled_from(_FLAT_INDICES))
        field = draw(st.sampled_from(_FLAT_FIELDS))
        key = f"llm.output_messages.{i}.message.tool_calls.{j}" + (f".{field}" if field else "")
        if field.endswith("name"):
            value = _tool_value(draw(st.sampled_from(["lookup", "refund", "", "<elided>", 3])))
        elif field.endswith("arguments"):
            odd = st.sampled_from(["{'a': 1}", " {'a': 1}", "\u00a0{'a': 1}", {"a": 1}, 5, ""])
            value = _tool_value(draw(st.one_of(_arguments(), odd)))
        else:
            value = _tool_value(draw(st.sampled_from(["c1", 7, "", "<elided>"])))
        span.attributes.append(KeyValue(key=key, value=value))


@st.composite
def listed_traces(draw: st.DrawFn) -> TracesData:
    """An agent whose model spans are ADK ``call_llm`` spans (a response, maybe GenAI output
    messages or a choice event besides) and OpenInference ``LLM`` spans (flattened calls,
    a reply key); the root records an ADK response now and then."""
    data = TracesData()
    ss = data.resource_spans.add().scope_spans.add()
    ss.scope.name = draw(st.sampled_from(["gcp.vertex.agent", "openinference.instrumentation"]))
    trace_id = b"\x01" * 16
    root = ss.spans.add(trace_id=trace_id, span_id=b"\x02" * 8, start_time_unix_nano=10)
    root.name = draw(st.sampled_from(["invocation", "invoke_agent shop"]))
    if draw(st.integers(0, 3)) == 0:
        root.attributes.append(KeyValue(key=_ADK_RESPONSE, value=_adk_response(draw)))
    for n in range(draw(st.integers(1, 4))):
        span = ss.spans.add(trace_id=trace_id, parent_span_id=b"\x02" * 8)
        span.span_id = bytes([3 + n]) * 8
        span.start_time_unix_nano = 20 + n
        if draw(st.booleans()):
            span.name = "call_llm"
            if draw(st.integers(0, 5)):
                span.attributes.append(KeyValue(key=_ADK_RESPONSE, value=_adk_response(draw)))
            if draw(st.integers(0, 6)) == 0:
                span.attributes.append(_kv("gen_ai.output.messages", "[]"))
            if draw(st.integers(0, 3)) == 0:
                event = span.events.add(name="gen_ai.choice")
                event.attributes.append(_kv("message", draw(st.sampled_from(["Hi.", ""]))))
            if draw(st.booleans()):
                span.attributes.append(_kv("gen_ai.response.finish_reasons", ["tool_calls"]))
        else:
            span.name = "llm"
            span.attributes.append(_kv("openinference.span.kind", "LLM"))
            _flat_calls(draw, span)
            if draw(st.booleans()):
                key = "llm.output_messages.0.message.content"
                span.attributes.append(_kv(key, draw(st.sampled_from(["Hi.", ""]))))
    return data


_ADK_RESPONSE = "gcp.vertex.agent.llm_response"


@needs_core
@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=listed_traces())
def test_generated_adk_and_openinference_listed_calls_read_the_same_both_ways(
    data: TracesData, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert_same(path, monkeypatch, usage=True)
    assert _span_facts(path, monkeypatch, core.CORE) == _span_facts(path, monkeypatch, core.PYTHON)


@needs_core
def test_adk_responses_and_flattened_calls_are_read_by_the_core(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """ADK ``call_llm`` spans (function calls, text without thoughts) and OpenInference
    ``LLM`` spans (flattened calls in index order, a repr as arguments not parsed) come as
    facts; a response as a structured value and a call's repr do not."""
    response = {
        "content": {
            "parts": [
                {"text": "thinking", "thought": True},
                {"function_call": {"name": "lookup", "args": {"order_id": "ORD-1"}, "id": "a1"}},
                {"function_call": {"name": "refund"}},
                {"text": "Looking it up."},
            ]
        }
    }
    flat = "llm.output_messages.0.message.tool_calls"
    data = _one_span_trace(
        ("call_llm", {_ADK_RESPONSE: json.dumps(response)}),
        (
            "llm",
            {
                "openinference.span.kind": "LLM",
                "llm.output_messages.1.message.tool_calls.0.tool_call.function.name": "third",
                f"{flat}.1.tool_call.function.name": "second",
                f"{flat}.0.tool_call.function.name": "first",
                f"{flat}.0.tool_call.function.arguments": '{"q": "x"}',
                f"{flat}.0.tool_call.id": "oi-1",
                f"{flat}.1.tool_call.function.arguments": "not an object",
            },
        ),
        ("call_llm", {_ADK_RESPONSE: {"content": "structured"}}),
        (
            "llm",
            {"openinference.span.kind": "LLM", f"{flat}.0.tool_call.function.name": "repr"}
            | {f"{flat}.0.tool_call.function.arguments": "{'q': 'x'}"},
        ),
    )
    path = tmp_path / "in.pb"
    path.write_bytes(frame(data.SerializeToString()))
    assert _counts(path, monkeypatch) == (3, 2, 0)
    found = _facts_of(path, monkeypatch)
    listed = [(c.name, c.call_id, c.args, c.source) for f in found for c in f.model_calls]
    assert listed == [
        ("lookup", "a1", {"order_id": "ORD-1"}, "model:gcp.vertex.agent.llm_response"),
        ("refund", None, {}, "model:gcp.vertex.agent.llm_response"),  # no args: none asked
        ("first", "oi-1", {"q": "x"}, "model:llm.output_messages"),
        ("second", None, None, "model:llm.output_messages"),
        ("third", None, None, "model:llm.output_messages"),  # message by message
    ]
    assert [f.reply for f in found if f.reply] == ["Looking it up."]
    assert_same(path, monkeypatch, usage=True)
