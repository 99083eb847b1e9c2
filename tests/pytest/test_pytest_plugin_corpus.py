"""The trail reads real instrumentations' spans: corpus traces re-emitted through the SDK.

Each corpus trace is replayed span for span (names, kinds, times, attributes, events,
status, parent links) through the test-scoped tracer provider of a ``Trail``, so the spans
reach tooltrail the way a framework's instrumentation would emit them inside a test.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import CORPUS
from opentelemetry import trace as trace_api
from opentelemetry.trace import SpanKind, Status, StatusCode

from tooltrail.otlp import Span, read_spans
from tooltrail.pytest import Trail, TrajectoryAssertionError
from tooltrail.suite import Expect, Turn

BOOKING_BAD = sorted(CORPUS.glob("*/e_booking_multiturn_bad.otlp.pb"))
KINDS = {
    1: SpanKind.INTERNAL,
    2: SpanKind.SERVER,
    3: SpanKind.CLIENT,
    4: SpanKind.PRODUCER,
    5: SpanKind.CONSUMER,
}


def replay(path: Path, tracer: trace_api.Tracer) -> None:
    """Start every span of the file in start order under its parent, then end them in end order."""
    spans = list(read_spans(path))
    by_id = {span.span_id: span for span in spans}
    started: dict[str, trace_api.Span] = {}

    def start(span: Span) -> None:
        parent = by_id.get(span.parent_span_id)
        if parent is not None and parent.span_id not in started:
            start(parent)
        context = (
            trace_api.set_span_in_context(started[parent.span_id]) if parent is not None else None
        )
        sdk_span = tracer.start_span(
            span.name,
            context=context,
            kind=KINDS.get(span.kind, SpanKind.INTERNAL),
            attributes={k: v for k, v in span.attributes.items() if not isinstance(v, dict)},
            start_time=span.start_ns,
        )
        for event in span.events:
            sdk_span.add_event(event.name, dict(event.attributes), timestamp=event.time_ns)
        if span.status_code == 2:
            sdk_span.set_status(Status(StatusCode.ERROR, span.status_message or None))
        elif span.status_code == 1:
            sdk_span.set_status(Status(StatusCode.OK))
        started[span.span_id] = sdk_span

    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        if span.span_id not in started:
            start(span)
    for span in sorted(spans, key=lambda s: (s.end_ns, s.span_id)):
        started[span.span_id].end(end_time=span.end_ns)


def truth_of(path: Path) -> dict:
    return json.loads(path.with_name(path.name.replace(".otlp.pb", ".truth.json")).read_text())


@pytest.fixture
def trail() -> Iterator[Trail]:  # the fixture's object, without the global provider
    opened = Trail("corpus")
    yield opened
    opened.close()


@pytest.mark.parametrize("path", BOOKING_BAD, ids=lambda p: p.parent.name)
def test_trail_reads_every_call_of_a_real_two_turn_conversation(path: Path, trail: Trail) -> None:
    replay(path, trail.tracer)

    truth = truth_of(path)
    expected = [
        (turn["turn"], call["tool"], call["args"])
        for turn in truth["traces"]
        for call in turn["calls"]
    ]
    assert [(c.turn, c.name, c.args) for c in trail.calls] == expected


@pytest.mark.parametrize("path", BOOKING_BAD, ids=lambda p: p.parent.name)
def test_second_create_booking_fails_turn_2_with_the_core_explanation(
    path: Path, trail: Trail
) -> None:
    replay(path, trail.tracer)

    with pytest.raises(TrajectoryAssertionError) as failure:
        trail.assert_passes(
            [
                Turn(
                    "Book a table for two at 10am.", Expect(tool_calls_include=["create_booking"])
                ),
                Turn("Actually, make it 11am.", Expect(tool_calls_exclude=["create_booking"])),
            ]
        )

    assert str(failure.value) == (
        "turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called\n"
        "Calls made (3):\n"
        "  1. turn 1: create_booking {'time': '10am'}\n"
        "  2. turn 2: update_booking {'time': '11am'}\n"
        "  3. turn 2: create_booking {'time': '11am'}"
    )


def test_arguments_a_framework_did_not_capture_are_shown_as_such(trail: Trail) -> None:
    replay(CORPUS / "google-adk-default-nocontent" / "a_refund_ok.otlp.pb", trail.tracer)

    with pytest.raises(TrajectoryAssertionError) as failure:
        trail.assert_called("issue_refund", args={"amount": 49.99})

    assert str(failure.value) == (
        "Tool 'issue_refund' was called with [None], not {'amount': 49.99}.\n"
        "Calls made (3):\n"
        "  1. lookup_order (arguments not captured)\n"
        "  2. verify_identity (arguments not captured)\n"
        "  3. issue_refund (arguments not captured)"
    )
