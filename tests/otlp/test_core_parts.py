"""The compiled core reads traces in parts and collects and builds them in Rust (issue 25).

``Reader.trace_parts`` / ``json_line_parts`` hand out a ``TracePart`` for each run of
consecutive heads and fact spans of one trace, and whole ``Span``s for the rest; a
``CoreTrace`` records parts as ``TraceFacts.add`` records their spans one by one, and
``Builder.build_core`` builds it as ``Builder.build`` builds the ``TraceFacts`` it exports.
The references are the spans ``Reader.traces`` makes of the same records, ``TraceFacts.add``
and the builders of ``convert/build.py``, over every fixture
``tests/convert/test_engine_differential.py`` reads (each record a reader in the facts mode
reads in ``read_traces``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from core_paths import reading_with
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData
from replay import fixture_name, fixture_paths
from test_core_facts import (
    genai_traces,
    listed_traces,
    other_tool_traces,
    reply_traces,
    strands_traces,
)
from test_engine_differential import HAVE_CORE

from tooltrail.convert import engine as core
from tooltrail.convert import read_traces
from tooltrail.convert.build import build_in_python
from tooltrail.convert.engine import READ_FACTS
from tooltrail.convert.facts import FactSpan, SpanFact, TraceFacts
from tooltrail.dialects import DialectCall, ModelCall, rules
from tooltrail.otlp import json_line
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS
from tooltrail.otlp.decode.span import Span, SpanEvent, SpanHead

if HAVE_CORE:
    import tooltrail_core

pytestmark = pytest.mark.skipif(
    not HAVE_CORE, reason="the compiled core (tooltrail-core, core/) is not installed"
)


@dataclass(frozen=True)
class Record:
    """One record a facts-mode reader of ``read_traces`` was given."""

    terms: tuple[Any, ...]
    kind: str  # "pb" or "json"
    data: bytes
    origin: str


def _records(path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Record]:
    """The records ``read_traces`` hands the core's facts-mode readers for ``path``."""
    real = tooltrail_core.Reader
    seen: list[Record] = []

    class Recording:
        def __init__(self, *terms: Any) -> None:
            self.inner = real(*terms)
            self.terms = terms

        def _note(self, kind: str, data: bytes, origin: str) -> None:
            if len(self.terms) == 6:  # made with the facts terms
                seen.append(Record(self.terms, kind, bytes(data), origin))

        def counts(self) -> Any:
            return self.inner.counts()

        def traces(self, data: bytes, origin: str) -> Any:
            self._note("pb", data, origin)
            return self.inner.traces(data, origin)

        def trace_parts(self, data: bytes, origin: str) -> Any:
            self._note("pb", data, origin)
            return self.inner.trace_parts(data, origin)

        def json_line(self, line: bytes, origin: str) -> Any:
            self._note("json", line, origin)
            return self.inner.json_line(line, origin)

        def json_line_parts(self, line: bytes, origin: str) -> Any:
            self._note("json", line, origin)
            return self.inner.json_line_parts(line, origin)

    with monkeypatch.context() as m:
        m.setattr(tooltrail_core, "Reader", Recording)
        with reading_with(monkeypatch, core.CORE):
            list(read_traces(path, diagnostics=[], usage=True))
    return seen


_readers: dict[int, Any] = {}


def _reader(terms: tuple[Any, ...]) -> Any:
    key = id(terms)
    if key not in _readers:
        _readers.clear()
        _readers[key] = (terms, tooltrail_core.Reader(*terms))
    return _readers[key][1]


def _read(record: Record, parts: bool) -> list[Any] | None:
    reader = _reader(record.terms)
    if record.kind == "pb":
        method = reader.trace_parts if parts else reader.traces
    else:
        method = reader.json_line_parts if parts else reader.json_line
    result: list[Any] | None = method(record.data, record.origin)
    return result


def _flatten(items: list[Any], origin: str) -> list[Any]:
    """The spans of ``items`` in order, each part checked: one trace, its count, maximal."""
    out: list[Any] = []
    previous: Any = None
    for item in items:
        if isinstance(item, tooltrail_core.TracePart):
            assert item.origin == origin
            if isinstance(previous, tooltrail_core.TracePart):
                assert previous.trace_id != item.trace_id  # else one run, one part
            spans = item.fact_spans()
            assert len(spans) == item.count > 0
            assert all(type(s) in (FactSpan, SpanHead) for s in spans)
            assert all(s.trace_id == item.trace_id for s in spans)
            out.extend(spans)
        else:
            assert type(item) is Span
            out.append(item)
        previous = item
    return out


def _fixtures() -> list[Any]:
    return [pytest.param(path, id=fixture_name(path)) for path in fixture_paths()]


@pytest.mark.parametrize("path", _fixtures())
def test_parts_hold_the_spans_the_reader_makes(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = _records(path, monkeypatch)
    for record in records:
        want = _read(record, parts=False)
        got = _read(record, parts=True)
        if want is None:
            assert got is None
            continue
        assert got is not None
        spans = _flatten(got, record.origin)
        assert [type(s) for s in spans] == [type(s) for s in want]
        assert [repr(s) for s in spans] == [repr(s) for s in want]  # every field, in order


def _collect(
    records: list[Record], max_spans: int, usage: bool, twice: bool
) -> tuple[dict[str, Any], dict[str, TraceFacts]]:
    """Every trace of ``records`` as a ``CoreTrace`` fed parts and as a ``TraceFacts`` fed
    the same spans by ``TraceFacts.add`` (the spans of parts only: whole spans are Python's)."""
    cores: dict[str, Any] = {}
    python: dict[str, TraceFacts] = {}
    for record in records * 2 if twice else records:
        items = _read(record, parts=True)
        spans = _read(record, parts=False)
        if items is None or spans is None:
            continue
        for item in items:
            if isinstance(item, tooltrail_core.TracePart):
                if item.trace_id not in cores:
                    cores[item.trace_id] = tooltrail_core.CoreTrace(item.trace_id, max_spans, usage)
                cores[item.trace_id].add(item)
        for span in spans:
            if type(span) in (FactSpan, SpanHead):
                facts = python.setdefault(
                    span.trace_id, TraceFacts(span.trace_id, max_spans=max_spans, read_usage=usage)
                )
                facts.add(span)
    assert list(cores) == list(python)
    return cores, python


#: (max_spans, read_usage, each record read twice): all spans, duplicates, spans dropped.
CASES: list[tuple[int, bool, bool]] = [
    (1_000_000, True, False),
    (1_000_000, False, True),
    (3, True, True),
    (1, False, False),
]


@pytest.mark.parametrize("path", _fixtures())
def test_a_core_trace_records_what_trace_facts_records(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records = _records(path, monkeypatch)
    for max_spans, usage, twice in CASES:
        cores, python = _collect(records, max_spans, usage, twice)
        for trace_id, collected in cores.items():
            want = python[trace_id]
            got = TraceFacts(**collected.export())
            assert got == want
            assert repr(got) == repr(want)  # every field, each dict's order
            assert repr(TraceFacts(**collected.export())) == repr(want)  # export keeps it
            assert collected.trace_id == trace_id
            assert collected.span_count == want.span_count
            assert collected.dropped == want.dropped
            assert collected.conversation_id == want.conversation_id
            assert collected.case_id == want.case_id
            assert collected.read_usage is usage
            assert collected.log_events is None and collected.read_content is False


def _builder() -> Any:
    b = core
    return tooltrail_core.Builder(
        (b.EvalTrace, b.ToolCall, b.Turn, b.deferred_spans, b.AgentSpan),
        (b.fits, b.lost_precision, b.is_final_answer, b.final_text),
    )


def _groups(cores: dict[str, Any]) -> Iterator[list[Any]]:
    """Each trace alone, then the traces of each conversation together."""
    conversations: dict[str, list[Any]] = {}
    for collected in cores.values():
        yield [collected]
        if collected.conversation_id is not None:
            conversations.setdefault(collected.conversation_id, []).append(collected)
    yield from (group for group in conversations.values() if len(group) > 1)


@pytest.mark.parametrize("path", _fixtures())
def test_build_core_builds_what_build_builds(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = _records(path, monkeypatch)
    builder = _builder()
    for max_spans, usage, twice in [(1_000_000, True, False), (2, False, False)]:
        cores, _ = _collect(records, max_spans, usage, twice)
        for group in _groups(cores):
            exported = [TraceFacts(**c.export()) for c in group]
            before = builder.counts()
            want = builder.build(exported)
            got = builder.build_core(group)
            after = builder.counts()
            if want is None:
                assert got is None
                assert after[0] == before[0]
                continue
            assert got is not None
            assert after[0] == before[0] + 2  # counted as built, like ``build``
            assert got == want
            assert repr(got) == repr(want)
            for mine, theirs in zip(got.tool_calls, want.tool_calls, strict=True):
                assert mine.args is theirs.args  # the values read, not copies
            assert repr(got) == repr(build_in_python(exported))
            again = [TraceFacts(**c.export()) for c in group]
            assert repr(again) == repr(exported)  # build_core left the traces as they were


# -- runs, splits and misuse --------------------------------------------------------------


def _facts_reader() -> Any:
    interest = READ_FACTS.interest
    terms = (sorted(interest.names), list(interest.name_prefixes), list(interest.keys))
    limits = DEFAULT_LIMITS
    sizes = (
        limits.max_attribute_value_bytes,
        limits.max_depth,
        limits.max_attributes,
        limits.max_events_per_span,
    )
    facts = (rules.TEXT, FactSpan, SpanFact, DialectCall, ModelCall)
    return tooltrail_core.Reader(Span, SpanHead, SpanEvent, terms, sizes, facts)


def _text(key: str, value: str) -> KeyValue:
    return KeyValue(key=key, value=AnyValue(string_value=value))


TRACE_A = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
TRACE_B = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")


def _record(spans: list[tuple[bytes, int, int, str, list[KeyValue]]]) -> TracesData:
    """One resource, one scope: ``(trace, span number, parent number or 0, name, attributes)``."""
    data = TracesData()
    scope = data.resource_spans.add()
    scope.resource.attributes.append(_text("service.name", "svc"))
    spans_of = scope.scope_spans.add()
    spans_of.scope.name = "agent.lib"
    for trace, number, parent, name, attributes in spans:
        span = spans_of.spans.add()
        span.trace_id = trace
        span.span_id = number.to_bytes(8, "big")
        if parent:
            span.parent_span_id = parent.to_bytes(8, "big")
        span.name = name
        span.start_time_unix_nano = 1_000 + number
        span.end_time_unix_nano = 2_000 + number
        span.attributes.extend(attributes)
    return data


def _tool(name: str) -> list[KeyValue]:
    return [
        _text("gen_ai.operation.name", "execute_tool"),
        _text("gen_ai.tool.name", name),
        _text("gen_ai.tool.call.arguments", '{"q": 1}'),
    ]


#: Trace A: a root agent, a tool call, a span the port declines (a final-answer tool: its
#: scope decides, Python's), a plain child; then a span of trace B; then A again.
SPLIT = [
    (TRACE_A, 1, 0, "invoke_agent helper", [_text("gen_ai.operation.name", "invoke_agent")]),
    (TRACE_A, 2, 1, "execute_tool search", _tool("search")),
    (TRACE_A, 3, 1, "execute_tool final_result", _tool("final_result")),
    (TRACE_A, 4, 1, "plain work", []),
    (TRACE_B, 5, 0, "invoke_agent other", [_text("gen_ai.operation.name", "invoke_agent")]),
    (TRACE_A, 6, 1, "more work", []),
]


def _split_items(kind: str) -> tuple[list[Any], list[Any]]:
    reader = _facts_reader()
    data = _record(SPLIT)
    if kind == "pb":
        raw = data.SerializeToString()
        return reader.trace_parts(raw, "in.pb"), reader.traces(raw, "in.pb")
    line = json_line(data)
    return reader.json_line_parts(line, "in.jsonl:1"), reader.json_line(line, "in.jsonl:1")


@pytest.mark.parametrize("kind", ["pb", "json"])
def test_a_declined_span_splits_a_run_in_record_order(kind: str) -> None:
    items, spans = _split_items(kind)
    part = tooltrail_core.TracePart
    assert [type(i) for i in items] == [part, Span, part, part, part]
    a, b = TRACE_A.hex(), TRACE_B.hex()
    runs = [(i.trace_id, i.count) for i in items if isinstance(i, part)]
    assert runs == [(a, 2), (a, 1), (b, 1), (a, 1)]
    flat = _flatten(items, items[0].origin)
    assert [s.span_id for s in flat] == [s.span_id for s in spans]
    assert [repr(s) for s in flat] == [repr(s) for s in spans]


def test_runs_follow_the_record_across_traces() -> None:
    reader = _facts_reader()
    plain = [s for s in SPLIT if s[1] != 3]  # no declined span
    items = reader.trace_parts(_record(plain).SerializeToString(), "in.pb")
    a, b = TRACE_A.hex(), TRACE_B.hex()
    assert [(i.trace_id, i.count) for i in items] == [(a, 3), (b, 1), (a, 1)]
    assert reader.counts() == (3, 0, 2)  # facts, whole spans, heads: as ``traces`` counts
    collected = tooltrail_core.CoreTrace(a, 100, False)
    collected.add(items[0])
    collected.add(items[2])
    assert collected.span_count == 4
    with pytest.raises(ValueError, match="another|trace"):
        collected.add(items[1])  # a part of trace B
    assert items[1].count == 1 and items[1].fact_spans()  # not taken by the refusal


def test_a_part_is_taken_once() -> None:
    reader = _facts_reader()
    items = reader.trace_parts(_record(SPLIT[:2]).SerializeToString(), "in.pb")
    (item,) = items
    collected = tooltrail_core.CoreTrace(item.trace_id, 100, True)
    collected.add(item)
    with pytest.raises(ValueError, match="already taken"):
        collected.add(item)
    with pytest.raises(ValueError, match="already taken"):
        item.fact_spans()
    assert collected.span_count == 2
    (again,) = reader.trace_parts(_record(SPLIT[:2]).SerializeToString(), "in.pb")
    again.fact_spans()
    with pytest.raises(ValueError, match="already taken"):
        tooltrail_core.CoreTrace(again.trace_id, 100, True).add(again)


def test_parts_need_the_facts_mode() -> None:
    reader = tooltrail_core.Reader(Span, SpanHead, SpanEvent, None, (1 << 20, 32, 128, 128))
    raw = _record(SPLIT[:1]).SerializeToString()
    with pytest.raises(ValueError, match="facts"):
        reader.trace_parts(raw, "in.pb")
    with pytest.raises(ValueError, match="facts"):
        reader.json_line_parts(json_line(_record(SPLIT[:1])), "in.jsonl:1")


def test_a_record_the_core_declines_gives_no_parts() -> None:
    reader = _facts_reader()
    assert reader.trace_parts(b"\x0a\x05abc", "in.pb") is None
    assert reader.traces(b"\x0a\x05abc", "in.pb") is None
    assert reader.json_line_parts(b"{not json", "in.jsonl:1") is None


def _agent(conversation: str, case: str) -> list[KeyValue]:
    return [
        _text("gen_ai.operation.name", "invoke_agent"),
        _text("gen_ai.conversation.id", conversation),
        _text("tooltrail.case_id", case),
    ]


def test_conversation_and_case_ids_are_collected_as_trace_facts_does() -> None:
    """The earliest span naming a conversation wins (by start, then a root before a child);
    the first case id noted stays. Starts are 1000 + the span's number."""
    spans = [
        (TRACE_A, 7, 3, "invoke_agent late", _agent("c-late", "case-first")),  # parent unseen
        (TRACE_A, 2, 0, "invoke_agent root", _agent("c-root", "case-root")),
        (TRACE_A, 1, 2, "invoke_agent early", _agent("c-early", "case-early")),
        (TRACE_A, 5, 2, "execute_tool search", _tool("search")),
    ]
    reader = _facts_reader()
    raw = _record(spans).SerializeToString()
    (item,) = reader.trace_parts(raw, "in.pb")
    collected = tooltrail_core.CoreTrace(item.trace_id, 100, False)
    collected.add(item)
    want = TraceFacts(TRACE_A.hex(), max_spans=100)
    for span in reader.traces(raw, "in.pb"):
        want.add(span)
    assert (collected.conversation_id, collected.case_id) == ("c-early", "case-first")
    assert (want.conversation_id, want.case_id) == ("c-early", "case-first")
    assert repr(TraceFacts(**collected.export())) == repr(want)
    # the same start: the root's wins over the child's
    same_start = [(TRACE_A, 12, 0, "invoke_agent r", _agent("c-r", "k"))]
    same_start.append((TRACE_A, 4, 12, "x", []))
    same_start.append((TRACE_A, 12 + (1 << 40), 3, "invoke_agent c", _agent("c-c", "k2")))
    record = _record(same_start)
    record.resource_spans[0].scope_spans[0].spans[2].start_time_unix_nano = 1_012
    (item,) = reader.trace_parts(record.SerializeToString(), "in.pb")
    collected = tooltrail_core.CoreTrace(item.trace_id, 100, False)
    collected.add(item)
    assert collected.conversation_id == "c-r"
    built = _builder().build_core([collected])
    assert built is not None and built.metadata["conversation_id"] == "c-r"
    assert repr(built) == repr(build_in_python([TraceFacts(**collected.export())]))


def test_the_root_resource_is_the_trace_resource() -> None:
    """A child's resource serves until the root arrives; a resource with no attributes never
    replaces one (``TraceFacts.add``'s rule)."""
    reader = _facts_reader()
    child = _record([(TRACE_A, 2, 1, "plain work", [])])
    child.resource_spans[0].resource.attributes[0].value.string_value = "child-svc"
    root = _record([(TRACE_A, 1, 0, "invoke_agent root", _agent("c", "k"))])
    root.resource_spans[0].resource.attributes[0].value.string_value = "root-svc"
    bare = _record([(TRACE_A, 3, 0, "invoke_agent again", _agent("c", "k"))])
    del bare.resource_spans[0].resource.attributes[:]
    collected = tooltrail_core.CoreTrace(TRACE_A.hex(), 100, False)
    want = TraceFacts(TRACE_A.hex(), max_spans=100)
    services = []
    for record in (child, root, bare):
        raw = record.SerializeToString()
        for item in reader.trace_parts(raw, "in.pb"):
            collected.add(item)
        for span in reader.traces(raw, "in.pb"):
            want.add(span)
        services.append(collected.export()["resource"].get("service.name"))
    assert services == ["child-svc", "root-svc", "root-svc"]
    assert repr(TraceFacts(**collected.export())) == repr(want)
    built = _builder().build_core([collected])
    assert built is not None and built.metadata["service.name"] == "root-svc"


# -- generated agent traces of every convention the facts port reads ----------------------------


def _generated() -> st.SearchStrategy[TracesData]:
    return st.one_of(
        genai_traces(), other_tool_traces(), reply_traces(), strands_traces(), listed_traces()
    )


def _same_both_ways(items: list[Any], spans: list[Any], origin: str) -> None:
    flat = _flatten(items, origin)
    assert [repr(s) for s in flat] == [repr(s) for s in spans]


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    first=_generated(),
    second=_generated(),
    other=st.booleans(),
    max_spans=st.integers(1, 12),
    usage=st.booleans(),
)
def test_generated_records_read_collect_and_build_the_same_both_ways(
    first: TracesData, second: TracesData, other: bool, max_spans: int, usage: bool
) -> None:
    """Two generated traces in one record (of one trace id, or of two: runs of one trace cut
    by the other's), the record read twice (duplicates), a limit that drops spans."""
    if other:
        for resource in second.resource_spans:
            for scope in resource.scope_spans:
                for span in scope.spans:
                    span.trace_id = TRACE_B
    data = TracesData()
    data.MergeFrom(first)
    data.MergeFrom(second)
    reader = _facts_reader()
    raw, line = data.SerializeToString(), json_line(data)
    cores: dict[str, Any] = {}
    python: dict[str, TraceFacts] = {}
    for _ in range(2):
        items = reader.trace_parts(raw, "in.pb")
        spans = reader.traces(raw, "in.pb")
        if items is None:  # a record the core leaves to the Python decoder
            assert spans is None
            return
        assert spans is not None
        _same_both_ways(reader.trace_parts(raw, "in.pb"), spans, "in.pb")
        lines = reader.json_line_parts(line, "in.jsonl:1")
        if lines is not None:  # (a JSON spelling the core leaves to Python: both decline)
            _same_both_ways(lines, reader.json_line(line, "in.jsonl:1"), "in.jsonl:1")
        else:
            assert reader.json_line(line, "in.jsonl:1") is None
        for item in items:
            if isinstance(item, tooltrail_core.TracePart):
                made = cores.setdefault(
                    item.trace_id, tooltrail_core.CoreTrace(item.trace_id, max_spans, usage)
                )
                made.add(item)
        for span in spans:
            if type(span) in (FactSpan, SpanHead):
                python.setdefault(
                    span.trace_id, TraceFacts(span.trace_id, max_spans=max_spans, read_usage=usage)
                ).add(span)
    assert list(cores) == list(python)
    builder = _builder()
    for trace_id, collected in cores.items():
        exported = TraceFacts(**collected.export())
        assert repr(exported) == repr(python[trace_id])
        want = builder.build([exported])
        got = builder.build_core([collected])
        assert repr(got) == repr(want)
    if len(cores) > 1:
        group = list(cores.values())
        want = builder.build([TraceFacts(**c.export()) for c in group])
        assert repr(builder.build_core(group)) == repr(want)
