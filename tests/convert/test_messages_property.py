"""``dialects.messages`` reads back what a conversation held, whatever the provider's shape and
the encoding: random conversations (hypothesis) written in every shape of
``tests/message_shapes.py``, each in every encoding an instrumentation uses (the structured
value of an OTLP array or kvlist, JSON text, JSON text inside a JSON string, a Python repr,
keys flattened with indexes, with and without OpenInference's ``message`` wrapper), read back
to the same calls (name, id, arguments, in order), results (by call id), user messages and
replies.
"""

from __future__ import annotations

import json
import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from message_shapes import (
    ENCODINGS,
    SHAPES,
    Call,
    Conversation,
    Read,
    Turn,
    expected_result,
    flatten,
)

from tooltrail.dialects import messages
from tooltrail.dialects.values import is_marker

_LETTERS = string.ascii_letters + string.digits


def _safe_text(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not is_marker(text) and stripped[0] not in "[{\"'"


texts = st.text(alphabet=_LETTERS + " .,!?-:éß€", min_size=1, max_size=24).filter(_safe_text)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | texts
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet=_LETTERS, min_size=1, max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
args = st.dictionaries(st.text(alphabet=_LETTERS, min_size=1, max_size=8), values, max_size=4)
results = (
    st.dictionaries(
        st.text(alphabet=_LETTERS, min_size=1, max_size=8), scalars, min_size=1, max_size=3
    )
    | texts
)


@st.composite
def conversations(draw: Any) -> Conversation:
    counter = iter(range(10_000))
    turns = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        steps = []
        for _ in range(draw(st.integers(min_value=0, max_value=3))):
            step = tuple(
                Call(
                    name=draw(st.sampled_from(["lookup_order", "issue_refund", "get_weather"])),
                    call_id=f"call_{next(counter)}",
                    args=draw(args),
                    result=draw(results),
                )
                for _ in range(draw(st.integers(min_value=1, max_value=2)))
            )
            steps.append(step)
        turns.append(Turn(user=draw(texts), steps=tuple(steps), reply=draw(texts)))
    return Conversation(turns=tuple(turns), system=draw(st.none() | texts))


def _read(listed: list[messages.Message]) -> Read:
    found = Read()
    for message in listed:
        if message.role == messages.ASSISTANT:
            found.calls += [(c.name, c.call_id, c.args) for c in message.calls]
            if message.text is not None and not message.calls:
                found.replies.append(message.text)
        elif message.role == messages.USER and message.text is not None:
            found.users.append(message.text)
        for result in message.results:
            found.results[result.call_id or ""] = result.value
    return found


def _expected(shape: str, conv: Conversation) -> Read:
    return Read(
        calls=[(c.name, c.call_id, c.args) for c in conv.calls()],
        results={c.call_id: expected_result(shape, c) for c in conv.calls()},
        users=[t.user for t in conv.turns],
        replies=[t.reply for t in conv.turns],
    )


def _encoded(listed: list[dict[str, Any]], encoding: str) -> Any:
    if encoding == "flattened":
        return messages.unflatten(flatten(listed, "gen_ai.prompt."), "gen_ai.prompt.")
    if encoding == "flattened_openinference":
        wrapped = [{"message": m} for m in listed]
        return messages.unflatten(flatten(wrapped, "llm.input_messages."), "llm.input_messages.")
    return ENCODINGS[encoding](listed)


_ALL_ENCODINGS = [*ENCODINGS, "flattened", "flattened_openinference"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=conversations())
def test_every_shape_in_every_encoding_reads_back_the_conversation(conv: Conversation) -> None:
    for shape, write in SHAPES.items():
        listed = write(conv)
        want = _expected(shape, conv)
        for encoding in _ALL_ENCODINGS:
            got = _read(messages.read(_encoded(listed, encoding)))
            assert got == want, (shape, encoding)


def test_a_flattened_key_set_reads_as_the_list_it_flattens() -> None:
    flat = {
        "llm.output_messages.1.message.role": "assistant",
        "llm.output_messages.0.message.role": "user",
        "llm.output_messages.0.message.content": "hi",
        "llm.output_messages.1.message.tool_calls.0.tool_call.function.name": "f",
        "llm.output_messages.1.message.tool_calls.0.tool_call.function.arguments": '{"a": 1}',
        "llm.output_messages.1.message.tool_calls.0.tool_call.id": "c1",
        "other": 1,
    }
    (user, asked) = messages.read(messages.unflatten(flat, "llm.output_messages."))
    assert (user.role, user.text) == ("user", "hi")
    assert [(c.name, c.call_id, c.args) for c in asked.calls] == [("f", "c1", {"a": 1})]
    assert messages.unflatten({"other": 1}, "llm.output_messages.") is None


def test_object_reprs_and_enum_members_are_read_as_their_fields() -> None:
    """A framework's message objects written with ``str()`` (Haystack's ``ChatMessage``, its
    role an enum member), never executed."""
    user = "ChatMessage(_role=<ChatRole.USER: 'user'>, _content=[TextContent(text='refund?')])"
    origin = "ToolCall(tool_name='issue_refund', arguments={'amount': 49.99}, id='c7', extra=None)"
    tool = (
        "ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[ToolCallResult("
        f"result='{{\"ok\": true}}', origin={origin}, error=False)], "
        "_meta={'fn': <function f at 0x7f00>})"
    )
    raw = json.dumps({"messages": [user, tool]})
    said, answered = messages.read(raw)
    assert (said.role, said.text) == ("user", "refund?")
    (result,) = answered.results
    assert (result.call_id, result.value, result.name, result.args) == (
        "c7",
        {"ok": True},
        "issue_refund",
        {"amount": 49.99},
    )


def test_reprs_are_parsed_not_run(tmp_path: Any) -> None:
    marker = tmp_path / "ran"
    code = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    found = messages.read(f"[{{'role': 'user', 'content': {code}}}]")
    assert [m.text for m in found] == [None]  # the call is read as a record of its fields
    assert not marker.exists()


def test_markers_are_no_content() -> None:
    (message,) = messages.read('[{"role": "user", "content": "__REDACTED__"}]')
    assert message.text is None
    assert messages.result_value("[REDACTED]") is None
    assert messages.result_value('[{"type": "text", "text": "<redacted>"}]') is None
