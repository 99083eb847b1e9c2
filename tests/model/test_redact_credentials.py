"""Issue 33, item 2: credentials are hidden inside values by default, whatever their key.

The shapes of ``tooltrail.credentials`` (bearer and basic credentials, providers' API keys,
JWTs, private key blocks, Luhn-checked card numbers) apply to free text
(``Redaction.redact_text``: explanations, replies, errors), to strings anywhere inside
arguments and results (``Redaction.clean``) and to the text of spans that are not tool calls
(``redact.values_replaced``); each can be turned off, by ``Redaction(credentials=...)`` or
``TOOLTRAIL_REDACT_*``. Ordinary text that looks a little like a credential stays as it is."""

from __future__ import annotations

import json
import logging

import pytest
from credential_examples import CREDENTIALS, ORDINARY, SEPARATORS, Credential, credentials
from fixtures import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from tooltrail.credentials import SHAPE_NAMES, is_card_number, luhn_valid
from tooltrail.live import LiveConfig
from tooltrail.redact import (
    DEFAULT_CREDENTIALS,
    DEFAULT_REDACTION,
    Redaction,
    tool_args_text,
    values_replaced,
)
from tooltrail.settings import redaction_from_env

MARKER = "[REDACTED]"


def leaked(credential: Credential, text: str) -> list[str]:
    return [core for core in credential.cores if core in text]


def test_every_shape_has_an_example_and_a_line_in_the_docs() -> None:
    assert sorted({c.shape for c in CREDENTIALS}) == sorted(SHAPE_NAMES)
    assert DEFAULT_CREDENTIALS == SHAPE_NAMES
    docs = (ROOT / "docs" / "live.md").read_text(encoding="utf-8")
    assert [name for name in SHAPE_NAMES if f"\n| `{name}` |" not in docs] == []


@pytest.mark.parametrize("credential", CREDENTIALS, ids=lambda c: c.shape)
def test_each_shape_is_hidden_in_free_text(credential: Credential) -> None:
    text = f"The agent said: use {credential.text} for order ORD-7731, then retry."
    redacted = DEFAULT_REDACTION.redact_text(text)
    assert leaked(credential, redacted) == []
    assert redacted.startswith("The agent said: use ") and MARKER in redacted
    assert redacted.endswith(" for order ORD-7731, then retry.")


@pytest.mark.parametrize("credential", CREDENTIALS, ids=lambda c: c.shape)
def test_each_shape_is_hidden_under_any_key_at_any_depth(credential: Credential) -> None:
    args = {
        "note": credential.text,
        "items": [{"ref": "ORD-7731", "memo": f"see {credential.text}"}],
        "raw": json.dumps({"header": credential.text}),
    }
    cleaned, changed = DEFAULT_REDACTION.clean(args)
    text = json.dumps(cleaned)
    assert changed and leaked(credential, text) == []
    assert cleaned["items"][0]["ref"] == "ORD-7731"
    assert json.loads(cleaned["raw"]).keys() == {"header"}  # nested JSON stays JSON
    arguments, _ = tool_args_text(DEFAULT_REDACTION, args)
    assert leaked(credential, arguments) == [] and "ORD-7731" in arguments


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_left_as_it_is(text: str) -> None:
    assert DEFAULT_REDACTION.redact_text(text) is text
    assert DEFAULT_REDACTION.clean({"note": text}) == ({"note": text}, False)
    assert DEFAULT_REDACTION.needs_no_cleaning(json.dumps({"note": text}))


def test_the_scheme_of_an_authorization_value_stays_readable() -> None:
    assert DEFAULT_REDACTION.redact_text("sent Bearer 9fQxL2mZr7TkW4 twice") == (
        "sent Bearer [REDACTED] twice"
    )
    assert DEFAULT_REDACTION.redact_text("with Basic YWxpY2U6czNjcjN0") == "with Basic [REDACTED]"


def test_a_key_prefix_counts_only_at_the_start_of_a_word() -> None:
    key = "sk-proj-Lm4Rt9Vw1Zp7Kd3Fh6YbQ2x8Nc5Gs0Ja"
    assert DEFAULT_REDACTION.redact_text(f"desk{key[2:]}") == f"desk{key[2:]}"
    assert DEFAULT_REDACTION.redact_text(f"({key})") == "([REDACTED])"


def test_card_numbers_are_luhn_checked_and_need_a_networks_first_digit() -> None:
    assert luhn_valid("4111111111111111") and not luhn_valid("4111111111111112")
    assert is_card_number("378282246310005")  # an Amex test number, 15 digits
    assert not is_card_number("1111111111111117")  # Luhn-valid, no network begins with 1
    assert not is_card_number("411111111111")  # 12 digits
    text = "paid with 3782 822463 10005 and 4111-1111-1111-1111, order 4111111111111112"
    assert DEFAULT_REDACTION.redact_text(text) == (
        "paid with [REDACTED] and [REDACTED], order 4111111111111112"
    )


def test_a_card_number_given_as_an_integer_is_hidden_and_other_integers_are_not() -> None:
    args = {"card": 4111111111111111, "order": 4111111111111112, "amount": 4999, "ok": True}
    cleaned, changed = DEFAULT_REDACTION.clean(args)
    assert changed and cleaned == {
        "card": MARKER,
        "order": 4111111111111112,
        "amount": 4999,
        "ok": True,
    }
    assert "4111111111111111" not in tool_args_text(DEFAULT_REDACTION, args)[0]


def test_a_private_key_is_hidden_also_with_escaped_line_ends() -> None:
    key = CREDENTIALS[[c.shape for c in CREDENTIALS].index("private_key")]
    as_json = json.dumps({"pem": key.text})  # the line ends are \n escapes here
    assert "\\n" in as_json
    for text in (as_json, repr({"pem": key.text}), f"key:\n{key.text}\nthanks"):
        redacted = DEFAULT_REDACTION.redact_text(text)
        assert leaked(key, redacted) == [], text
    replaced, changed = values_replaced(DEFAULT_REDACTION, as_json)
    assert changed and json.loads(replaced) == {"pem": MARKER}
    truncated = key.text.rsplit("\n", 1)[0]  # no end line: hidden to the end of its body
    assert leaked(key, DEFAULT_REDACTION.redact_text(f"{truncated}")) == []


def test_an_explanation_quotes_ordinary_argument_values_and_hides_the_credential() -> None:
    """The one-pass quoting of ``tool_arg_values`` (docs/checks.md) keeps working."""
    bearer, card = CREDENTIALS[0], CREDENTIALS[-2]
    calls = [{"amount": 49.99, "auth": bearer.text, "order_id": "ORD-7731", "card": card.text}]
    text = f"Tool 'issue_refund' was called with {calls!r}, not {{'amount': 5}}."
    assert DEFAULT_REDACTION.redact_text(text) == (
        "Tool 'issue_refund' was called with [{'amount': 49.99, 'auth': 'Bearer [REDACTED]', "
        "'order_id': 'ORD-7731', 'card': '[REDACTED]'}], not {'amount': 5}."
    )


def test_the_text_of_other_spans_keeps_its_json() -> None:
    messages = json.dumps(
        [
            {"role": "user", "parts": [{"type": "text", "content": f"my key {c.text}"}]}
            for c in CREDENTIALS
        ]
    )
    replaced, changed = values_replaced(DEFAULT_REDACTION, {"gen_ai.input.messages": messages})
    parsed = json.loads(replaced["gen_ai.input.messages"])
    assert changed and [m["parts"][0]["content"] for m in parsed] == (
        ["my key Bearer [REDACTED]", "my key Basic [REDACTED]"]
        + ["my key [REDACTED]"] * (len(CREDENTIALS) - 2)
    )
    assert values_replaced(DEFAULT_REDACTION, {"n": 3, "s": "ORD-7731"}) == (
        {"n": 3, "s": "ORD-7731"},
        False,
    )


@pytest.mark.parametrize("credential", CREDENTIALS, ids=lambda c: c.shape)
def test_each_shape_can_be_turned_off(credential: Credential) -> None:
    others = tuple(name for name in SHAPE_NAMES if name != credential.shape)
    text = f"use {credential.text} now"
    assert Redaction(credentials=others).redact_text(text) == text
    assert Redaction(credentials=()).redact_text(text) == text
    assert Redaction(credentials=(credential.shape,)).redact_text(text) != text


def test_an_unknown_shape_is_an_error_that_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown credential shape.*'jwts'.*known are bearer"):
        Redaction(credentials=("jwts",))


def test_the_environment_turns_shapes_off_for_every_runner(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert redaction_from_env({}).credentials == SHAPE_NAMES
    off = redaction_from_env({"TOOLTRAIL_REDACT_CREDENTIALS_OFF": "jwt, card_number"})
    assert off.credentials == tuple(n for n in SHAPE_NAMES if n not in ("jwt", "card_number"))
    none = redaction_from_env({"TOOLTRAIL_REDACT_DEFAULT_CREDENTIALS": "false"})
    assert none.credentials == () and none.keys == DEFAULT_REDACTION.keys
    assert none.redact_text("Bearer 9fQxL2mZr7TkW4") == "Bearer 9fQxL2mZr7TkW4"
    monkeypatch.setenv("TOOLTRAIL_REDACT_CREDENTIALS_OFF", '["aws"]')
    assert "aws" not in LiveConfig.from_env().redaction().credentials


def test_an_unknown_name_in_the_environment_warns_and_keeps_every_shape(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        rules = redaction_from_env({"TOOLTRAIL_REDACT_CREDENTIALS_OFF": "jwt,visa"})
    assert rules.credentials == SHAPE_NAMES
    assert "TOOLTRAIL_REDACT_CREDENTIALS_OFF" in caplog.text and "'visa'" in caplog.text


def test_value_patterns_of_ones_own_apply_after_the_shapes() -> None:
    rules = redaction_from_env({"TOOLTRAIL_REDACT_VALUE_PATTERNS": r'["[\\w.]+@example\\.com"]'})
    assert rules.redact_text("jane@example.com sent Bearer 9fQxL2mZr7TkW4") == (
        "[REDACTED] sent Bearer [REDACTED]"
    )


def test_text_without_a_credential_is_screened_in_one_pass_and_stays_the_same_object() -> None:
    args = json.dumps({"order_id": "ORD-7731", "amount": 49.99, "note": "arrived damaged"})
    assert DEFAULT_REDACTION.needs_no_cleaning(args)
    assert DEFAULT_REDACTION.texts_need_no_cleaning([args, "execute_tool issue_refund"])
    assert not DEFAULT_REDACTION.texts_need_no_cleaning([args, "Bearer 9fQxL2mZr7TkW4"])


_WORDS = st.lists(
    st.sampled_from(["refund", "ORD-7731", "order", "4111111111111112", "sk", "the", "ghp"]),
    max_size=4,
).map(" ".join)


@st.composite
def placed(draw: st.DrawFn) -> tuple[str, list[Credential]]:
    """Ordinary words with credentials put in random places, each between separators."""
    found = draw(st.lists(credentials(), min_size=1, max_size=3))
    pieces = [draw(_WORDS)]
    for credential in found:
        pieces += [draw(st.sampled_from(SEPARATORS)), credential.text]
        pieces += [draw(st.sampled_from(SEPARATORS)), draw(_WORDS)]
    return "".join(pieces), found


@settings(max_examples=300, deadline=None)
@given(placed())
def test_no_credential_survives_any_redaction_wherever_it_stands(
    case: tuple[str, list[Credential]],
) -> None:
    text, found = case
    rules = DEFAULT_REDACTION
    nested = {"a": [text, {"b": json.dumps({"c": text})}], "d": repr({"e": text})}
    outputs = [
        rules.redact_text(text),
        json.dumps(rules.clean(nested)[0]),
        tool_args_text(rules, nested)[0],
        json.dumps(values_replaced(rules, nested)[0]),
    ]
    for output in outputs:
        for credential in found:
            assert leaked(credential, output) == [], (credential, output)
    assert ("ORD-7731" in text) == ("ORD-7731" in outputs[0])
    assert ("4111111111111112" in text) == ("4111111111111112" in outputs[0])
