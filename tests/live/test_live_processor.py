"""ToolArgsProcessor on real SDK spans: every dialect's tool span gets tool_name/tool_args."""

from __future__ import annotations

import json
from typing import Any

import pytest
from credential_examples import CREDENTIALS
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from test_live_helpers import (
    CORPUS,
    Recorder,
    corpus_spans,
    provider_with,
    replay,
    tool_spans,
    truth,
)

from tooltrail.equality import values_equal
from tooltrail.live import Redaction, ToolArgsProcessor
from tooltrail.live.spancopy import CopiedSpan

FRAMEWORKS = sorted(
    p.name for p in CORPUS.iterdir() if p.is_dir() and p.name != "google-adk-default-nocontent"
)
SCENARIOS = ["a_refund_ok", "f_tool_error_retry", "h_nested_agent_tool", "i_complex_args"]
#: The Node SDK cannot hold 9007199254740993 or tell 2.0 from 2: what it sent is what it meant.
JS_PRECISION = {("vercel-ai", "i_complex_args")}


def _tagged_calls(rec: Recorder) -> list[tuple[str, Any]]:
    return [
        (s.attributes["tool_name"], json.loads(s.attributes["tool_args"]))
        for s in tool_spans(rec.ended)
    ]


def _run(folder: str, scenario: str, at_start: bool, **kwargs: Any) -> Recorder:
    rec = Recorder()
    provider = provider_with(ToolArgsProcessor(rec, **kwargs))
    replay(provider, corpus_spans(folder, scenario), attributes_at_start=at_start)
    return rec


@pytest.mark.parametrize("at_start", [True, False], ids=["args-at-start", "args-after-start"])
@pytest.mark.parametrize(
    ("folder", "scenario"),
    [(f, s) for f in FRAMEWORKS for s in SCENARIOS if (f, s) not in JS_PRECISION],
)
def test_every_dialects_tool_spans_carry_the_true_arguments(
    folder: str, scenario: str, at_start: bool
) -> None:
    rec = _run(folder, scenario, at_start)
    got = _tagged_calls(rec)
    expected = [(c["tool"], c["args"]) for c in truth(folder, scenario)["calls"]]
    assert len(got) == len(expected)
    for name, args in expected:
        assert any(n == name and values_equal(args, a) for n, a in got), (name, args, got)


def test_javascript_numbers_arrive_as_the_node_sdk_sent_them() -> None:
    got = dict(_tagged_calls(_run("vercel-ai", "i_complex_args", True)))
    assert got["create_shipment"]["big_int"] == 9007199254740992
    assert got["create_shipment"]["weight_kg"] == 2


def test_uncaptured_arguments_give_tool_name_but_no_tool_args() -> None:
    rec = _run("google-adk-default-nocontent", "a_refund_ok", True)
    tagged = tool_spans(rec.ended)
    assert [s.attributes["tool_name"] for s in tagged] == [
        "lookup_order",
        "verify_identity",
        "issue_refund",
    ]
    assert all("tool_args" not in s.attributes for s in tagged)


def test_positional_traceloop_arguments_stay_under_args() -> None:
    got = _tagged_calls(_run("traceloop", "j_positional_args", True))
    assert ("issue_refund", {"args": ["ORD-7731", 49.99]}) in got


def test_tool_args_is_canonical_json_sorted_and_compact() -> None:
    rec = Recorder()
    tracer = provider_with(ToolArgsProcessor(rec)).get_tracer("t")
    tracer.start_span(
        "execute_tool issue_refund",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "issue_refund",
            "gen_ai.tool.call.arguments": (
                '{ "order_id" : "ORD-7731",\n "amount": 49.99, "n": {"z": 1, "a": [1, 2]} }'
            ),
        },
    ).end()
    assert (
        rec.ended[0].attributes["tool_args"]
        == '{"amount":49.99,"n":{"a":[1,2],"z":1},"order_id":"ORD-7731"}'
    )


def test_non_tool_spans_pass_through_unchanged() -> None:
    rec = _run("pydantic-ai", "a_refund_ok", True)
    others = [s for s in rec.ended if "tool_name" not in s.attributes]
    assert others and all(type(s) is ReadableSpan for s in others)
    originals = {s.name: dict(s.attributes) for s in corpus_spans("pydantic-ai", "a_refund_ok")}
    for span in others:
        assert set(span.attributes) == set(originals[span.name])


def test_arguments_known_at_start_are_tagged_on_the_live_span_without_a_copy() -> None:
    rec = _run("pydantic-ai", "a_refund_ok", True)
    started_tagged = [a for a in rec.started if "tool_args" in a]
    assert len(started_tagged) == 3
    assert all(type(s) is ReadableSpan for s in tool_spans(rec.ended))


def test_arguments_set_after_start_are_tagged_on_a_copy() -> None:
    rec = _run("pydantic-ai", "a_refund_ok", False)
    tagged = tool_spans(rec.ended)
    assert len(tagged) == 3 and all(isinstance(s, CopiedSpan) for s in tagged)


def test_a_copy_keeps_ids_times_status_events_and_resource() -> None:
    rec = _run("strands", "f_tool_error_retry", False)
    plain = Recorder()
    replay(
        provider_with(plain),
        corpus_spans("strands", "f_tool_error_retry"),
        attributes_at_start=False,
    )
    for copied, original in zip(rec.ended, plain.ended, strict=True):
        assert copied.name == original.name
        assert (copied.start_time, copied.end_time) == (original.start_time, original.end_time)
        assert copied.status.status_code == original.status.status_code
        assert [e.name for e in copied.events] == [e.name for e in original.events]
        assert copied.resource.attributes == original.resource.attributes
        assert copied.context.trace_id != 0 and copied.context.span_id != 0


class Exploding(SpanProcessor):
    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("boom")

    def on_end(self, span: ReadableSpan) -> None:
        raise RuntimeError("boom")


def test_a_failing_downstream_processor_neither_raises_nor_starves_the_next() -> None:
    rec = Recorder()
    processor = ToolArgsProcessor(Exploding(), rec)
    provider_with(processor).get_tracer("t").start_span("work").end()
    assert len(rec.ended) == 1
    assert processor.errors == 2


def test_a_failing_reader_passes_the_span_on_as_it_was() -> None:
    def broken(span: Any) -> Any:
        raise ValueError("bad reader")

    rec = Recorder()
    processor = ToolArgsProcessor(rec, read_call=broken)
    provider_with(processor).get_tracer("t").start_span("execute_tool x").end()
    assert [s.name for s in rec.ended] == ["execute_tool x"]
    assert processor.errors == 2


def test_force_flush_and_shutdown_reach_every_wrapped_processor() -> None:
    calls: list[str] = []

    class Flushable(SpanProcessor):
        def force_flush(self, timeout_millis: int = 30000) -> bool:
            calls.append("flush")
            return True

        def shutdown(self) -> None:
            calls.append("shutdown")

    processor = ToolArgsProcessor(Flushable(), Flushable())
    assert processor.force_flush(1000) is True
    processor.shutdown()
    assert calls == ["flush", "flush", "shutdown", "shutdown"]


def test_default_redaction_applies_without_configuration() -> None:
    rec = Recorder()
    tracer = provider_with(ToolArgsProcessor(rec)).get_tracer("t")
    tracer.start_span(
        "execute_tool pay",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.call.arguments": '{"cardNumber": "4111111111111111", "amount": 5}',
        },
    ).end()
    span = rec.ended[0]
    assert "4111" not in span.attributes["tool_args"]
    assert "4111" not in span.attributes["gen_ai.tool.call.arguments"]
    assert json.loads(span.attributes["tool_args"]) == {"amount": 5, "cardNumber": "[REDACTED]"}


def test_custom_redaction_is_used() -> None:
    rec = _run(
        "pydantic-ai",
        "a_refund_ok",
        True,
        redaction=Redaction(keys=("customer_id",), marker="<hidden>"),
    )
    got = dict(_tagged_calls(rec))
    assert got["verify_identity"] == {"customer_id": "<hidden>"}
    assert got["lookup_order"] == {"order_id": "ORD-7731"}


def test_the_first_look_never_turns_away_a_span_the_dialect_readers_accept() -> None:
    from tooltrail.dialects import read_tool_call
    from tooltrail.otlp import read_spans
    from tooltrail.pipeline.calls import may_be_tool_call

    accepted = 0
    for path in sorted(CORPUS.glob("*/*.otlp.pb")):
        for span in read_spans(str(path)):
            if read_tool_call(span) is not None:
                accepted += 1
                assert may_be_tool_call(span.name, span.attributes), (path.name, span.name)
    assert accepted > 250


@pytest.mark.parametrize("folder", FRAMEWORKS)
def test_tagging_only_at_the_end_gives_the_same_arguments(folder: str) -> None:
    at_start = _tagged_calls(_run(folder, "a_refund_ok", True))
    at_end = _tagged_calls(_run(folder, "a_refund_ok", True, tag_on_start=False))
    assert at_end == at_start and len(at_end) == 3


def test_the_public_api_path_gives_the_same_result_as_the_fast_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tooltrail.pipeline import sdk

    assert sdk.LAYOUT_KNOWN  # the installed SDK is the one the fast path knows
    fast = _tagged_calls(_run("strands", "f_tool_error_retry", False))
    monkeypatch.setattr(sdk, "READERS", sdk.PUBLIC)  # what an SDK the probe refuses gets
    slow = _tagged_calls(_run("strands", "f_tool_error_retry", False))
    assert slow == fast and fast


def test_tags_go_on_at_start_only_when_a_wrapped_processor_looks_at_starting_spans() -> None:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tooltrail.live import TraceBuffer

    batch = BatchSpanProcessor(InMemorySpanExporter())
    buffer = TraceBuffer()
    try:
        assert ToolArgsProcessor(batch, buffer).tag_on_start is False
        assert ToolArgsProcessor(batch, Recorder()).tag_on_start is True
        assert ToolArgsProcessor(batch, tag_on_start=True).tag_on_start is True
    finally:
        batch.shutdown()
        buffer.shutdown()


def test_span_names_are_remembered_up_to_a_bound_and_tested_past_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tooltrail.live import processor as live_processor

    monkeypatch.setattr(live_processor, "_MAX_NAMES", 3)
    rec = Recorder()
    processor = ToolArgsProcessor(rec, tag_on_start=False)
    tracer = provider_with(processor).get_tracer("t")
    for name in ["GET /a", "GET /b", "GET /c", "GET /d", "GET /e"]:
        tracer.start_span(name).end()
    assert len(processor._names) == 3  # bounded: a name past the bound is not kept
    # a tool span whose name comes after the bound is still told from its name
    tracer.start_span(
        "execute_tool lookup_order", attributes={"gen_ai.tool.call.arguments": '{"order_id": 1}'}
    ).end()
    assert "execute_tool lookup_order" not in processor._names
    tagged = [s for s in rec.ended if "tool_name" in s.attributes]
    assert [(s.attributes["tool_name"], s.attributes["tool_args"]) for s in tagged] == [
        ("lookup_order", '{"order_id":1}')
    ]
    # a name remembered as not a tool's still lets the span's marker attributes speak
    tracer.start_span(
        "GET /a",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "refund",
            "gen_ai.tool.call.arguments": "{}",
        },
    ).end()
    assert rec.ended[-1].attributes["tool_name"] == "refund"


def test_a_buffer_alone_at_start_is_called_straight_and_anything_else_through_the_guard() -> None:
    from tooltrail.live import TraceBuffer

    class EndsOnly(SpanProcessor):  # nothing to do as spans start
        def on_end(self, span: ReadableSpan) -> None:
            pass

    buffer = TraceBuffer()
    try:
        straight = ToolArgsProcessor(EndsOnly(), buffer)
        assert straight.on_start == buffer.on_start
        tracer = provider_with(straight).get_tracer("t")
        with tracer.start_as_current_span("root"):
            tracer.start_span("child").end()
        assert buffer.force_flush(5000)
        stats = buffer.stats()
        assert (stats.spans_delivered, stats.traces_complete, stats.traces_partial) == (2, 1, 0)
        # a processor of the user's at start keeps the guard: its failure is counted, not raised
        guarded = ToolArgsProcessor(Exploding(), buffer, tag_on_start=False)
        assert guarded.on_start != buffer.on_start
        provider_with(guarded).get_tracer("t").start_span("work").end()
        assert guarded.errors == 2
        # tagging at start keeps ``on_start`` its own
        tagging = ToolArgsProcessor(buffer, tag_on_start=True)
        assert tagging.on_start != buffer.on_start
    finally:
        buffer.shutdown()


def test_tool_spans_leave_tagged_alike_with_the_core_s_screen_and_with_the_python_screen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tooltrail.convert import engine

    def secrets() -> list[dict[str, Any]]:
        rec = Recorder()
        tracer = provider_with(ToolArgsProcessor(rec)).get_tracer("t")
        for note, args in [
            ("plain", '{"password": "hunter2", "order_id": "ORD-1"}'),
            (f"see {CREDENTIALS[0].text}", '{"order_id": "ORD-1"}'),
            ("Bearer", '{"n": 1}'),
            ("caf\u00e9 au lait", '{"api_key": "k"}'),
        ]:
            tracer.start_span(
                "execute_tool refund",
                attributes={"note": note, "gen_ai.tool.call.arguments": args, "n": 2},
            ).end()
        return [dict(s.attributes) for s in rec.ended]

    def tagged() -> list[list[dict[str, Any]]]:
        return [
            [dict(s.attributes) for s in _run(folder, scenario, False).ended]
            for folder in FRAMEWORKS
            for scenario in SCENARIOS
        ] + [secrets()]

    engine.reset()
    if engine.core_module() is None:
        pytest.skip("the compiled core is not installed")
    with_core = tagged()
    monkeypatch.setenv(engine.CORE_ENV, engine.PYTHON)
    engine.reset()
    engine.core_module()
    try:
        assert ToolArgsProcessor().redaction._first_look() is None
        with_python = tagged()
    finally:
        monkeypatch.delenv(engine.CORE_ENV)
        engine.reset()
        engine.core_module()
    assert with_core == with_python
    assert sum(len(spans) for spans in with_core) > 300
    hidden = with_core[-1]
    assert "hunter2" not in str(hidden[0]) and CREDENTIALS[0].text not in str(hidden[1])
