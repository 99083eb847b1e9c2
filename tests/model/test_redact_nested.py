"""Issue 22, item 3: redaction follows nested shapes, at any depth, at a bounded cost per value.

The four reproductions (each failed before the fix): JSON text nested in a value with white
space around it, JSON text nested at object depth 8 or more, a nested Python-literal string,
and a nested ``password=x`` string. They are checked on the rules themselves and through a real
``tooltrail serve`` over loopback (``--dump`` and ``--forward``). Then the bounds: nested text
parsed per value stays under ``NESTED_PARSE_BUDGET``, and what is past a bound is hidden, not
passed on."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from serve_helpers import post
from serve_traces import PROTOBUF, agent_trace, body_of
from test_serve_secrets import ForwardTarget

from tooltrail.live.redact import Redaction, clean_attribute, tool_args_text
from tooltrail.serve import ServeConfig, start_in_thread

SECRET = "s3cr3t-Q8zK2"


def nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = {"a": value}
    return value


#: The issue's four shapes, each as the value of a harmless key.
SHAPES: dict[str, dict[str, Any]] = {
    "json-text-with-white-space": {"payload": " " + json.dumps({"password": SECRET}) + "\n"},
    "json-text-at-depth-8": nested({"blob": json.dumps({"password": SECRET})}, 8),
    "json-text-inside-json-text-at-depth-9": {"blob": json.dumps(nested({"password": SECRET}, 9))},
    "python-literal-text": {"payload": repr({"password": SECRET})},
    "key-value-text": {"payload": f"password={SECRET}"},
    "key-value-text-with-spaces": {"payload": f"user=bob, api_key = {SECRET}"},
}


@pytest.mark.parametrize("shape", SHAPES)
def test_nested_shapes_are_redacted_in_arguments(shape: str) -> None:
    args = SHAPES[shape]
    text, _ = tool_args_text(Redaction(), args)
    assert SECRET not in text and "[REDACTED]" in text
    cleaned, changed = Redaction().clean(args)
    assert changed and SECRET not in repr(cleaned)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("encoding", ["json", "python"])
def test_nested_shapes_are_redacted_in_attribute_text(shape: str, encoding: str) -> None:
    """As a dialect carries arguments: JSON text (GenAI) or a Python literal (OpenInference)."""
    text = json.dumps(SHAPES[shape]) if encoding == "json" else repr(SHAPES[shape])
    cleaned, changed = clean_attribute(Redaction(), text)
    assert changed and SECRET not in cleaned
    parsed = json.loads(cleaned) if encoding == "json" else ast.literal_eval(cleaned)
    assert isinstance(parsed, dict)  # still the same encoding, readable


def test_what_is_kept_stays_as_it_was() -> None:
    """Redaction changes only the secret: the nested text keeps its other keys, and a string
    that names no secret key comes back as the same object."""
    args = {"payload": " " + json.dumps({"password": SECRET, "user": "bob"}), "n": "x=1"}
    cleaned, _ = Redaction().clean(args)
    assert json.loads(cleaned["payload"]) == {"password": "[REDACTED]", "user": "bob"}
    assert cleaned["n"] is args["n"]


def test_the_four_shapes_leave_serve_redacted(tmp_path: Path) -> None:
    """One real receiver over loopback: the dump and the forwarded bytes hold no secret."""
    spans = agent_trace(
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": f"tool_{n}",
                "gen_ai.tool.call.arguments": json.dumps(args),
            }
            for n, args in enumerate(SHAPES.values())
        ]
        + [
            {
                "span.name": "literal_tool",
                "openinference.span.kind": "TOOL",
                "tool.name": "literal_tool",
                "input.value": repr(SHAPES["python-literal-text"] | SHAPES["key-value-text"]),
            }
        ]
    )
    target = ForwardTarget()
    dump = tmp_path / "dump.jsonl"
    receiver = start_in_thread(
        ServeConfig(grpc_port=None, http_port=0, grace=0.05, dump=dump, forward=target.endpoint)
    )
    try:
        assert receiver.http_port is not None
        status, _, _ = post(receiver.http_port, body_of(spans), PROTOBUF)
        assert status == 200
    finally:
        stats = receiver.stop()
        target.stop()
    assert stats["traces_forwarded"] == 1
    for where, data in (("dump", dump.read_bytes()), ("forward", b"".join(target.bodies))):
        assert b"tool_5" in data and b"[REDACTED]" in data, where
        assert SECRET.encode() not in data, where


class Parsed:
    """Counts the characters ``json.loads`` and ``ast.literal_eval`` are handed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.chars = 0
        loads, literal_eval = json.loads, ast.literal_eval

        def counting_loads(text: Any, *args: Any, **kwargs: Any) -> Any:
            self.chars += len(text)
            return loads(text, *args, **kwargs)

        def counting_literal_eval(text: Any) -> Any:
            self.chars += len(text)
            return literal_eval(text)

        monkeypatch.setattr(json, "loads", counting_loads)
        monkeypatch.setattr(ast, "literal_eval", counting_literal_eval)


def test_nested_text_parsed_per_value_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many nested texts: parsing stops at the budget, and a later nested text that names a
    secret key is hidden whole rather than passed on unparsed."""
    from tooltrail.redact import NESTED_PARSE_BUDGET

    filler = json.dumps({"note": "x" * 10_000, "password": "p"})
    items = [filler] * (2 * NESTED_PARSE_BUDGET // len(filler)) + [
        json.dumps({"note": "x" * 10_000, "password": SECRET})
    ]
    parsed = Parsed(monkeypatch)
    cleaned, changed = Redaction(max_value_chars=1 << 20).clean({"items": items})
    assert changed and SECRET not in repr(cleaned)
    # twice: json.loads, then ast.literal_eval, when a text is not JSON; here all are JSON
    assert parsed.chars <= NESTED_PARSE_BUDGET
    assert cleaned["items"][-1] == "[REDACTED]"


def test_json_text_nested_in_json_text_many_times_is_followed() -> None:
    text = json.dumps({"password": SECRET})
    for _ in range(12):  # each level escapes the one inside it: 12 levels is about 30 KB
        text = json.dumps({"inner": text})
    cleaned, changed = clean_attribute(Redaction(max_value_chars=1 << 20), text)
    assert changed and SECRET not in cleaned


def test_past_the_depth_bound_values_are_hidden() -> None:
    from tooltrail.redact import MAX_DEPTH

    deep = nested({"password": SECRET, "note": "x"}, MAX_DEPTH + 5)
    text, _ = tool_args_text(Redaction(), deep)
    assert SECRET not in text and "[REDACTED]" in text


def test_text_too_deep_to_parse_is_hidden_when_it_names_a_secret_key() -> None:
    """Nesting past the parser's recursion limit: neither JSON nor a literal, so the text is
    judged as text, and it assigns ``password``."""
    text = "[" * 5000 + json.dumps({"password": SECRET}) + "]" * 5000
    cleaned, changed = Redaction().clean({"blob": text})
    assert changed and cleaned == {"blob": "[REDACTED]"}
    attribute, _ = clean_attribute(Redaction(), text)
    assert SECRET not in attribute


def test_python_literals_are_parsed_never_evaluated() -> None:
    hostile = "{'password': __import__('os').getpid()}"
    cleaned, changed = Redaction().clean({"payload": hostile})
    assert changed and cleaned == {"payload": "[REDACTED]"}  # not a literal: hidden whole


def test_objects_in_arguments_are_judged_by_the_text_written_for_them() -> None:
    """``@tool`` arguments may hold any object; ``tool_args`` writes its ``str``."""

    class Login:
        def __str__(self) -> str:
            return f"Login(user='bob', password='{SECRET}')"

    text, _ = tool_args_text(Redaction(), {"login": Login(), "raw": f"api_key={SECRET}".encode()})
    assert SECRET not in text and "[REDACTED]" in text


@pytest.mark.parametrize("literal", ["{'password=%s'}", "b'api_key=%s'", "frozenset({'ssn: %s'})"])
def test_other_python_literals_are_judged_as_text(literal: str) -> None:
    cleaned, changed = Redaction().clean({"payload": literal % SECRET})
    assert changed and cleaned == {"payload": "[REDACTED]"}
