"""Shared pieces of the live tests: a real SDK pipeline, and corpus spans replayed through it."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from fixtures import CORPUS
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import Status, StatusCode

from tooltrail.otlp import Span, read_spans

_STATUS = {0: StatusCode.UNSET, 1: StatusCode.OK, 2: StatusCode.ERROR}


class Recorder(SpanProcessor):
    """Keeps every span it is given, at start (attributes as they were then) and at end."""

    def __init__(self) -> None:
        self.started: list[dict[str, Any]] = []
        self.ended: list[ReadableSpan] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.started.append(dict(span.attributes))

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(span)


def provider_with(*processors: SpanProcessor) -> TracerProvider:
    provider = TracerProvider()
    for processor in processors:
        provider.add_span_processor(processor)
    return provider


def corpus_spans(folder: str, scenario: str) -> list[Span]:
    return list(read_spans(str(CORPUS / folder / f"{scenario}.otlp.pb")))


def truth(folder: str, scenario: str) -> dict[str, Any]:
    return json.loads((CORPUS / folder / f"{scenario}.truth.json").read_text())


def _sdk_value(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_sdk_value(v) for v in value)
    if isinstance(value, dict):
        return {k: _sdk_value(v) for k, v in value.items()}
    return value


def replay(provider: TracerProvider, spans: Iterable[Span], *, attributes_at_start: bool) -> None:
    """Re-emit decoded spans through the real SDK: same names, attributes, events and status.

    With ``attributes_at_start`` the attributes are given to ``start_span`` (known at start),
    otherwise they are set on the live span after it started.
    """
    tracer = provider.get_tracer("replay")
    for original in spans:
        attributes = {k: _sdk_value(v) for k, v in original.attributes.items() if v is not None}
        span = tracer.start_span(
            original.name,
            attributes=attributes if attributes_at_start else None,
            start_time=original.start_ns or None,
        )
        if not attributes_at_start:
            span.set_attributes(attributes)
        for event in original.events:
            span.add_event(
                event.name,
                {k: _sdk_value(v) for k, v in event.attributes.items() if v is not None},
                event.time_ns or None,
            )
        if original.status_code:
            span.set_status(Status(_STATUS[original.status_code], original.status_message or None))
        span.end(end_time=original.end_ns or None)


def tool_spans(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    return [s for s in spans if "tool_name" in s.attributes]
