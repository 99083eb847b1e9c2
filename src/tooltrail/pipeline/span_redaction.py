"""Redaction of whole spans and log records as they leave a process, on the rules of
``tooltrail.redact``.

On a tool span, every attribute and every event attribute has secret keys hidden and long
strings capped, exactly as the live ``ToolArgsProcessor`` treats a tool span, whichever dialect
put the arguments where (``gen_ai.tool.call.arguments``, ``input.value``,
``traceloop.entity.input``, ``ai.toolCall.args``, ``mlflow.spanInputs``, Strands' events...).
A content log record (a model's reply and the tool calls it asked for) has its body and
attributes cleaned the same way. Every other span (a model's or an agent's: the user's
messages, the replies) has the credential shapes and value patterns replaced in its attribute
values, event attribute values and status message (``redact.values_replaced``; keys are not
looked at there). Used for what ``tooltrail serve`` dumps and forwards and for the trace copy
``tooltrail eval --annotate-traces`` writes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tooltrail.dialects import read_tool_call
from tooltrail.otlp import LogRecord, Span, SpanEvent
from tooltrail.redact import Redaction, clean_attribute, values_replaced


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


def _values_replaced_in(rules: Redaction, attributes: Mapping[str, Any]) -> Mapping[str, Any]:
    """``attributes`` with credentials and value patterns replaced; the same mapping when
    nothing changed. Common case first: the plain strings, screened together in one pass,
    hold no credential (and there is nothing else)."""
    texts: list[str] = []
    for value in attributes.values():
        kind = type(value)
        if kind is str:
            texts.append(value)
        elif kind is int:
            if rules.hides_number(value):
                break
        elif kind is not float and kind is not bool:
            break  # structured values: the full path
    else:
        if rules.texts_hold_no_values(texts):
            return attributes
    out: dict[str, Any] | None = None
    for key, value in attributes.items():
        replaced, changed = values_replaced(rules, value)
        if changed:
            if out is None:
                out = dict(attributes)
            out[key] = replaced
    return attributes if out is None else out


def _cleaned_events(
    rules: Redaction,
    events: Sequence[SpanEvent],
    clean: Callable[[Redaction, Mapping[str, Any]], Mapping[str, Any]] = cleaned_attributes,
) -> Sequence[SpanEvent]:
    out: list[SpanEvent] | None = None
    for i, event in enumerate(events):
        attributes = clean(rules, event.attributes)
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
    """A tool span with its attributes and events cleaned and credentials in its status
    message replaced (a copy when anything changed)."""
    attributes = cleaned_attributes(rules, span.attributes)
    events = _cleaned_events(rules, span.events)
    return _with(span, attributes, events, rules.replace_values(span.status_message))


def redacted_other_span(rules: Redaction, span: Span) -> Span:
    """A span that is not a tool call with credentials and value patterns replaced in its
    attribute values, event attribute values and status message (a copy when any changed)."""
    if not rules.replaces_values:
        return span
    attributes = _values_replaced_in(rules, span.attributes)
    events = _cleaned_events(rules, span.events, _values_replaced_in)
    return _with(span, attributes, events, rules.replace_values(span.status_message))


def _with(
    span: Span, attributes: Mapping[str, Any], events: Sequence[SpanEvent], status: str
) -> Span:
    if attributes is span.attributes and events is span.events and status is span.status_message:
        return span
    return dataclasses.replace(span, attributes=attributes, events=events, status_message=status)


def redacted_record(rules: Redaction, record: LogRecord) -> LogRecord:
    """A log record with its body and attributes cleaned (a copy when anything changed)."""
    body, hidden = clean_attribute(rules, record.body)
    attributes = cleaned_attributes(rules, record.attributes)
    if not hidden and attributes is record.attributes:
        return record
    return dataclasses.replace(record, body=body, attributes=attributes)


def redacted(rules: Redaction, items: Sequence[Any]) -> list[Any]:
    """Spans and log records as they may leave the process: tool spans and records cleaned,
    credentials replaced in other spans."""
    out: list[Any] = []
    for item in items:
        if item.__class__ is LogRecord:
            out.append(redacted_record(rules, item))
        elif read_tool_call(item) is not None:
            out.append(redacted_tool_span(rules, item))
        elif isinstance(item, Span):
            out.append(redacted_other_span(rules, item))
        else:
            out.append(item)
    return out
