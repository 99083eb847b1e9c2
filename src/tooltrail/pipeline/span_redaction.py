"""Redaction of whole spans and log records as they leave a process, on the rules of
``tooltrail.redact``.

On a tool span, every attribute and every event attribute has secret keys hidden and long
strings capped, exactly as the live ``ToolArgsProcessor`` treats a tool span, whichever dialect
put the arguments where (``gen_ai.tool.call.arguments``, ``input.value``,
``traceloop.entity.input``, ``ai.toolCall.args``, ``mlflow.spanInputs``, Strands' events...).
A content log record (a model's reply and the tool calls it asked for) has its body and
attributes cleaned the same way. Used for what ``tooltrail serve`` dumps and forwards and for
the trace copy ``tooltrail eval --annotate-traces`` writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from tooltrail.dialects import read_tool_call
from tooltrail.otlp import LogRecord, Span, SpanEvent
from tooltrail.redact import Redaction, clean_attribute


def cleaned_attributes(rules: Redaction, attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    """``attributes`` with every value cleaned; the same mapping when nothing changed."""
    out: dict[str, Any] | None = None
    for key, value in attributes.items():
        cleaned, hidden = clean_attribute(rules, value)
        if hidden:
            if out is None:
                out = dict(attributes)
            out[key] = cleaned
    return attributes if out is None else out


def _cleaned_events(rules: Redaction, events: Sequence[SpanEvent]) -> Sequence[SpanEvent]:
    out: list[SpanEvent] | None = None
    for i, event in enumerate(events):
        attributes = cleaned_attributes(rules, event.attributes)
        if attributes is not event.attributes and out is None:
            out = list(events[:i])
        if out is not None:
            out.append(
                event
                if attributes is event.attributes
                else dataclasses.replace(event, attributes=attributes)
            )
    return events if out is None else out


def redacted_tool_span(rules: Redaction, span: Span) -> Span:
    """A tool span with its attributes and events cleaned (a copy when anything changed)."""
    attributes = cleaned_attributes(rules, span.attributes)
    events = _cleaned_events(rules, span.events)
    if attributes is span.attributes and events is span.events:
        return span
    return dataclasses.replace(span, attributes=attributes, events=events)


def redacted_record(rules: Redaction, record: LogRecord) -> LogRecord:
    """A log record with its body and attributes cleaned (a copy when anything changed)."""
    body, hidden = clean_attribute(rules, record.body)
    attributes = cleaned_attributes(rules, record.attributes)
    if not hidden and attributes is record.attributes:
        return record
    return dataclasses.replace(record, body=body, attributes=attributes)


def redacted(rules: Redaction, items: Sequence[Any]) -> list[Any]:
    """Spans and log records as they may leave the process: tool spans and records cleaned,
    other spans as they are."""
    out: list[Any] = []
    for item in items:
        if item.__class__ is LogRecord:
            out.append(redacted_record(rules, item))
        elif read_tool_call(item) is not None:
            out.append(redacted_tool_span(rules, item))
        else:
            out.append(item)
    return out
