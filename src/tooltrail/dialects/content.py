"""What a trace says the user asked and what a tool returned: content for judges.

Read only when a check needs content (``read_traces(..., content=True)``), the way
``dialects.usage`` is read only for budgets: these attributes are the largest of a trace.
A value the trace does not record is ``None``, never a guess; placeholders of content that
was not captured (``<REDACTED>``, ``<elided>``, ADK's ``"{}"`` pair) are not values.

A tool's result, per convention (CONVENTIONS.md):
- GenAI ``gen_ai.tool.call.result`` (Pydantic AI, ADK 2.x, MLflow, Strands with the latest
  semantic conventions), else a ``tool_call_response`` part of the tool span's
  inference-details event (``gen_ai.output.messages``);
- ADK legacy ``gcp.vertex.agent.tool_response``; Pydantic AI v2 ``tool_response``;
- Vercel ``ai.toolCall.result`` (one v5 revision: ``ai.toolCall.output``);
- OpenInference and Traceloop ``output.value`` / ``traceloop.entity.output``;
- MLflow ``mlflow.spanOutputs`` (JSON-encoded twice); LangSmith ``gen_ai.completion``;
- Strands (default conventions): the tool span's ``gen_ai.choice`` event, ``message``.
A call whose span records no result (or that has no span: a client-side tool) takes it from a
later model request's messages, by call id: every record of the request a model span has
(``rules.json`` ``messages.request``), read by ``dialects.messages`` whatever the provider
shape and encoding, or a ``gen_ai.tool.message`` event or log record. JSON text becomes the
value it holds, a Python repr of a dict or list the value it stands for; a list of content
blocks (``[{"text": ...}]``, as MCP and Strands return) becomes its text, itself parsed when
it is JSON.

The user's input is the text of the last user message a span was given: GenAI
``gen_ai.input.messages`` (attribute, or inference-details event), ``gen_ai.user.message``
events, Pydantic AI ``pydantic_ai.all_messages``, Vercel ``ai.prompt`` / ``ai.prompt.messages``,
OpenInference ``llm.input_messages.*`` and ``input.value``, Traceloop
``traceloop.entity.input``, MLflow ``mlflow.spanInputs``, LangSmith ``gen_ai.prompt``, and
``gen_ai.user.message`` log records joined to the span. A user
message without text (a tool's answer sent back in a user message) is not an input.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tooltrail.dialects import messages, rules
from tooltrail.dialects.genai_logs import TOOL_MESSAGE, USER_MESSAGE
from tooltrail.dialects.messages import result_value
from tooltrail.dialects.tools import SpanLike
from tooltrail.dialects.values import double_json, ident, is_marker

#: Bound on the nesting walked to find messages inside a framework's input object.
_MAX_DEPTH = 6
_DETAILS = rules.at("events", "details")
_DETAILS_INPUT = rules.key("events", "details_input", encoding="messages")
_DETAILS_OUTPUT = rules.key("events", "details_output", encoding="messages")
_CHOICE = rules.at("events", "choice")

# --- tool results ---------------------------------------------------------------------------

#: Attributes of a tool span that hold its result, in order (each convention sets one):
#: ``rules.json`` ``content.tool_result`` as (key, JSON-encoded twice, answers once present,
#: the key whose ``"{}"`` with this one's means "not captured").
_RESULT_ROWS: tuple[tuple[str, bool, bool, str | None, bool], ...] = tuple(
    (
        row["key"],
        row["encoding"] == "json_twice",
        row.get("answers") == "present",
        row.get("not_captured_pair"),
        "single_output" in row.get("unwrap", ()),
    )
    for row in rules.rows("content", "tool_result", encodings={"content_blocks", "json_twice"})
)


def tool_result(span: SpanLike) -> Any:
    """What the tool of ``span`` returned, or ``None`` when the span does not record it."""
    attrs = span.attributes
    if attrs is None:
        return None
    for key, twice, decides, pair, outputs in _RESULT_ROWS:
        if key in attrs:
            raw = attrs.get(key)
            if pair is not None and raw == "{}" and attrs.get(pair) == "{}":
                return None  # ADK legacy with content capture off writes this pair
            found = result_value(double_json(raw) if twice else raw)
            if outputs and isinstance(found, dict) and len(found) == 1 and "output" in found:
                found = result_value(found["output"])  # a run's outputs around the result
            if found is not None or decides:
                return messages.tool_payload(found)
    return _event_result(span)


def _event_result(span: SpanLike) -> Any:
    """A result a tool span records in an event: a ``tool_call_response`` part of its
    inference-details output messages, or (Strands) the message of its ``gen_ai.choice``."""
    for event in reversed(span.events or ()):
        ev_attrs = event.attributes or {}
        if event.name == _DETAILS:
            listed = messages.read(ev_attrs.get(_DETAILS_OUTPUT))
            for result in messages.results_of(listed):
                return result.value
        elif event.name == _CHOICE and "message" in ev_attrs:
            return result_value(ev_attrs.get("message"))
    return None


def model_content(span: SpanLike) -> tuple[str | None, dict[str, Any]]:
    """What a model span was sent: the user's text (``user_input``) and the tool results, by
    call id (``tool_results``). Every record of the request the span has is read
    (``rules.json`` ``messages.request``, in order, then the inference-details event and the
    GenAI ``gen_ai.tool.message`` events), each parsed once by ``dialects.messages``: the
    user's text is the first record's that has one, a result the first one seen of its call.
    The results complete a call whose own span records none, or that has no span (a
    client-side tool)."""
    attrs = span.attributes
    found: dict[str, Any] = {}
    said: str | None = None
    recorded = False
    for raw in _request_records(span, attrs):
        recorded = True
        listed = messages.read(raw)
        for result in messages.results_of(listed):
            if result.call_id is not None:
                found.setdefault(result.call_id, result.value)
        if said is None:
            said = messages.last_user_text(listed)
    if not recorded:  # the GenAI event convention: one event per message
        for event in span.events or ():
            if event.name == TOOL_MESSAGE:
                pair = tool_message(event.attributes or {})
                if pair is not None:
                    found.setdefault(*pair)
    return (said if said is not None else user_input(span)), found


def _request_records(span: SpanLike, attrs: Mapping[str, Any] | None) -> Iterator[Any]:
    """The values of a model span that record its request, in the order of trust: the
    ``messages.request`` rows of its attributes (flattened keys gathered into one list), then
    the same keys in its events (the inference-details event; the older GenAI conventions'
    ``gen_ai.content.prompt`` event with ``gen_ai.prompt``)."""
    if attrs is not None:
        for key, flat, _ in messages.REQUEST_ROWS:
            if flat:
                listed = messages.unflatten(attrs, key)
                if listed is not None:
                    yield listed
            elif key in attrs:
                raw = attrs.get(key)
                if raw is not None:
                    yield raw
    for event in span.events or ():
        ev_attrs = event.attributes
        if ev_attrs:
            for key in _REQUEST_KEYS:
                raw = ev_attrs.get(key)
                if raw is not None:
                    yield raw


#: The keys of ``messages.request``'s keyed rows, looked up in a model span's events too.
_REQUEST_KEYS = tuple(key for key, flat, _ in messages.REQUEST_ROWS if not flat)


def details_content(events: Iterable[Any]) -> tuple[str | None, dict[str, Any]]:
    """What the inference-details records among ``events`` (log records joined to a model
    span) say it was sent: the user's text (the last record's that has one) and the tool
    results by call id (the first one seen of each call)."""
    said: str | None = None
    found: dict[str, Any] = {}
    for event in events:
        if event.name != _DETAILS:
            continue
        listed = messages.read((event.attributes or {}).get(_DETAILS_INPUT))
        said = messages.last_user_text(listed) or said
        for result in messages.results_of(listed):
            if result.call_id is not None:
                found.setdefault(result.call_id, result.value)
    return said, found


def tool_message(attrs: Mapping[str, Any]) -> tuple[str, Any] | None:
    """``(call id, result)`` of a ``gen_ai.tool.message`` record (``id``, ``content``)."""
    call_id = ident(attrs.get("id", attrs.get("tool_call_id")))
    value = messages.result_value(attrs.get("content"))
    return (call_id, value) if call_id is not None and value is not None else None


def user_message(attrs: Mapping[str, Any]) -> str | None:
    """The text of a ``gen_ai.user.message`` record (``content``)."""
    return messages.content_text(attrs.get("content"))


# --- the user's input -----------------------------------------------------------------------

#: Attributes holding the messages (or call inputs) a span was given, in order of trust
#: (``rules.json`` ``content.user_input``): (key, JSON-encoded twice). Then the flattened
#: request messages (``messages.request`` rows of ``flat_list``: OpenInference
#: ``llm.input_messages``, Traceloop's legacy ``gen_ai.prompt``).
_INPUT_ROWS = tuple(
    (row["key"], row["encoding"] == "json_twice")
    for row in rules.rows("content", "user_input", encodings={"messages", "json_twice"})
)
_FLAT_REQUESTS = tuple(key for key, flat, _ in messages.REQUEST_ROWS if flat)
#: Keys under which a framework's input object holds the user's text or messages, in order
#: (``content.input_keys``); a Python call's positional ``args`` are tried last.
_INPUT_KEYS = rules.strings("content", "input_keys")


def user_input(span: SpanLike) -> str | None:
    """The text of the last user message ``span`` records, or ``None``."""
    attrs = span.attributes
    if attrs is None:
        return None
    for key, twice in _INPUT_ROWS:
        if key in attrs:
            raw = attrs.get(key)
            found = input_text(double_json(raw) if twice else raw)
            if found is not None:
                return found
    for prefix in _FLAT_REQUESTS:
        listed = messages.unflatten(attrs, prefix)
        if listed is not None:
            found = messages.last_user_text(messages.read(listed))
            if found is not None:
                return found
    return _event_input(span)


def _event_input(span: SpanLike) -> str | None:
    """The last user text of a span's events: ``gen_ai.user.message`` (``content``), or the
    input messages of an inference-details event."""
    for event in reversed(span.events or ()):
        ev_attrs = event.attributes or {}
        if event.name == USER_MESSAGE:
            found = messages.content_text(ev_attrs.get("content"))
            if found is not None:
                return found
        elif event.name == _DETAILS and _DETAILS_INPUT in ev_attrs:
            found = messages.last_user_text(messages.read(ev_attrs.get(_DETAILS_INPUT)))
            if found is not None:
                return found
    return None


def input_text(raw: Any, depth: int = 0) -> str | None:
    """The user's text in a recorded input: the last user message of the messages it holds
    (``dialects.messages``: any shape, found under ``messages`` and the like, or in a Python
    call's ``args``/``kwargs``); a prompt string (``prompt``, ``input``, ``query``,
    ``question``, or the call's one string argument)."""
    value = messages.decode(raw)
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, str):
        return None if is_marker(value) else value
    if isinstance(value, list):
        listed = messages.read(value)
        if listed:
            return messages.last_user_text(listed)
        strings = [v for v in value if isinstance(v, (str, list, dict))]
        for item in reversed(strings):  # a call's positional arguments
            if isinstance(item, (list, dict)):
                found = input_text(item, depth + 1)
                if found is not None:
                    return found
        texts = [v for v in strings if isinstance(v, str)]
        return input_text(texts[0], depth + 1) if len(texts) == 1 else None
    if isinstance(value, dict):
        for key in _INPUT_KEYS:
            if key in value:
                found = input_text(value[key], depth + 1)
                if found is not None:
                    return found
        if "args" in value:
            return input_text(value["args"], depth + 1)
    return None
