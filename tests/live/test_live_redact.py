"""Redaction and size caps: secrets never leave a tool span, whatever attribute carries them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from test_live_helpers import CORPUS, Recorder, corpus_spans, provider_with, replay, tool_spans

from tooltrail.live import Redaction, ToolArgsProcessor, canonical_json
from tooltrail.live.redact import clean_attribute, tool_args_text

ALL_FRAMEWORKS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def _tag(
    attributes: dict[str, Any], redaction: Redaction | None = None, name: str = "execute_tool t"
) -> Any:
    rec = Recorder()
    tracer = provider_with(ToolArgsProcessor(rec, redaction=redaction)).get_tracer("t")
    tracer.start_span(name, attributes=attributes).end()
    return rec.ended[0]


def _genai(arguments: Any, **extra: Any) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "t",
        "gen_ai.tool.call.arguments": arguments,
        **extra,
    }


@pytest.mark.parametrize("at_start", [True, False], ids=["args-at-start", "args-after-start"])
@pytest.mark.parametrize("folder", ALL_FRAMEWORKS)
def test_configured_keys_leave_no_trace_in_any_dialects_tool_span(
    folder: str, at_start: bool
) -> None:
    rec = Recorder()
    redaction = Redaction(keys=("order_id", "customer_id"))
    replay(
        provider_with(ToolArgsProcessor(rec, redaction=redaction)),
        corpus_spans(folder, "a_refund_ok"),
        attributes_at_start=at_start,
    )
    tagged = tool_spans(rec.ended)
    assert len(tagged) == 3
    for span in tagged:
        values = [*span.attributes.values()]
        values += [v for e in span.events for v in (e.attributes or {}).values()]
        for value in values:
            assert "ORD-7731" not in repr(value) and "C-118" not in repr(value), (span.name, value)


def test_keys_match_without_case_underscores_or_dashes() -> None:
    cleaned, changed = Redaction(keys=("card_number",)).clean(
        {"cardNumber": "1", "CARD-NUMBER": "2", "card_number": "3", "cardholder": "Ann"}
    )
    assert changed
    assert cleaned == {
        "cardNumber": "[REDACTED]",
        "CARD-NUMBER": "[REDACTED]",
        "card_number": "[REDACTED]",
        "cardholder": "Ann",
    }


def test_nested_keys_inside_lists_and_objects_are_hidden() -> None:
    args = {"payments": [{"card": {"cvv": "123", "last4": "1111"}}, {"password": {"a": 1}}]}
    cleaned, _ = Redaction().clean(args)
    assert cleaned == {
        "payments": [{"card": {"cvv": "[REDACTED]", "last4": "1111"}}, {"password": "[REDACTED]"}]
    }
    assert args["payments"][0]["card"]["cvv"] == "123"  # the input is not mutated


def test_key_patterns_are_searched_in_key_names() -> None:
    cleaned, _ = Redaction(keys=(), key_patterns=(r"token$", r"^x-")).clean(
        {"github_token": "t", "x-api": "k", "tokenizer": "keep"}
    )
    assert cleaned == {"github_token": "[REDACTED]", "x-api": "[REDACTED]", "tokenizer": "keep"}


def test_value_patterns_replace_only_the_matching_text() -> None:
    # Without the credential shapes, whose card_number shape also hides integers.
    rules = Redaction(value_patterns=(r"\b\d{4}(?: ?\d{4}){3}\b",), credentials=())
    cleaned, _ = rules.clean({"note": "charge 4111 1111 1111 1111 today", "n": 4111111111111111})
    assert cleaned == {"note": "charge [REDACTED] today", "n": 4111111111111111}


def test_json_text_inside_arguments_is_redacted_too() -> None:
    inner = json.dumps({"password": "hunter2", "user": "ann"})
    cleaned, _ = Redaction().clean({"payload": inner})
    assert json.loads(cleaned["payload"]) == {"password": "[REDACTED]", "user": "ann"}


def test_the_original_argument_attribute_is_redacted_as_well_as_tool_args() -> None:
    span = _tag(_genai('{"password": "hunter2", "user": "ann"}'))
    assert json.loads(span.attributes["gen_ai.tool.call.arguments"]) == {
        "password": "[REDACTED]",
        "user": "ann",
    }
    assert json.loads(span.attributes["tool_args"]) == {"password": "[REDACTED]", "user": "ann"}


def test_an_event_holding_a_secret_is_redacted_and_the_events_before_it_are_kept() -> None:
    rec = Recorder()
    tracer = provider_with(ToolArgsProcessor(rec)).get_tracer("t")
    span = tracer.start_span("execute_tool t", attributes=_genai('{"user": "ann"}'))
    span.add_event("progress", {"step": 1})
    span.add_event("progress", {"step": 2})
    span.add_event("input", {"payload": '{"password": "hunter2"}'})
    span.end()
    (ended,) = rec.ended
    assert [(e.name, dict(e.attributes or {})) for e in ended.events] == [
        ("progress", {"step": 1}),
        ("progress", {"step": 2}),
        ("input", {"payload": '{"password":"[REDACTED]"}'}),
    ]
    assert ended.attributes["tool_name"] == "t"


def test_structured_argument_attributes_are_redacted() -> None:
    span = _tag(_genai({"password": "hunter2", "user": "ann"}))
    assert dict(span.attributes["gen_ai.tool.call.arguments"]) == {
        "password": "[REDACTED]",
        "user": "ann",
    }


def test_python_literal_arguments_are_parsed_and_redacted_safely() -> None:
    span = _tag(
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "login",
            "input.value": "{'user': 'ann', 'password': 'hunter2', 'n': (1, 2)}",
        },
        name="login",
    )
    assert "hunter2" not in span.attributes["input.value"]
    assert json.loads(span.attributes["tool_args"])["password"] == "[REDACTED]"


def test_text_that_cannot_be_parsed_but_assigns_a_secret_is_hidden_whole() -> None:
    span = _tag(_genai("{not json", **{"input.value": "user=ann password=hunter2"}))
    assert span.attributes["input.value"] == "[REDACTED]"


def test_a_tool_named_after_a_secret_keeps_its_name() -> None:
    span = _tag(_genai('{"user": "ann"}', **{"gen_ai.tool.name": "reset_password"}))
    assert span.attributes["tool_name"] == "reset_password"
    assert span.attributes["gen_ai.tool.name"] == "reset_password"


def test_double_encoded_json_is_redacted_and_stays_double_encoded() -> None:
    text = json.dumps(json.dumps({"ssn": "078-05-1120", "q": "x"}))
    cleaned, changed = clean_attribute(Redaction(), text)
    assert changed
    assert json.loads(json.loads(cleaned)) == {"ssn": "[REDACTED]", "q": "x"}


def test_long_string_values_are_cut_with_a_marker_and_stay_valid_json() -> None:
    span = _tag(_genai(json.dumps({"doc": "x" * 10_000, "id": 7})), Redaction(max_value_chars=100))
    args = json.loads(span.attributes["tool_args"])
    assert args["id"] == 7
    assert len(args["doc"]) <= 100
    assert args["doc"].endswith(f"...[truncated {10_000 - 68} chars]")
    assert "tool_args_truncated" not in span.attributes


def test_arguments_over_the_byte_cap_are_cut_and_flagged() -> None:
    many = {f"k{i}": i for i in range(1000)}
    span = _tag(_genai(json.dumps(many)), Redaction(max_args_bytes=200))
    text = span.attributes["tool_args"]
    assert len(text) <= 200
    assert "...[truncated " in text
    assert span.attributes["tool_args_truncated"] is True


def test_redaction_is_idempotent() -> None:
    rules = Redaction(max_value_chars=50)
    once, _ = rules.clean({"password": "p", "doc": "y" * 500})
    twice, changed = rules.clean(once)
    assert twice == once and not changed


def test_canonical_json_keeps_wide_integers_and_non_finite_floats() -> None:
    assert canonical_json({"b": 2**70, "a": float("nan")}) == '{"a":NaN,"b":1180591620717411303424}'
    assert canonical_json({"é": "ü"}) == '{"é":"ü"}'


def test_tool_args_text_redacts_before_encoding() -> None:
    text, truncated = tool_args_text(Redaction(), {"z": 1, "api_key": "k"})
    assert (text, truncated) == ('{"api_key":"[REDACTED]","z":1}', False)


def test_bad_caps_are_refused() -> None:
    with pytest.raises(ValueError, match="max_value_chars"):
        Redaction(max_value_chars=1)


def test_a_key_spelled_with_json_escapes_is_still_hidden() -> None:
    span = _tag(_genai('{"pass\\u0077ord": "hunter2", "user": "ann"}'))
    assert "hunter2" not in span.attributes["gen_ai.tool.call.arguments"]
    assert json.loads(span.attributes["tool_args"])["password"] == "[REDACTED]"
