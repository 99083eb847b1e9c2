"""``Redaction.redact_text``: free text made from arguments (explanations, errors, replies) with
each secret ``key: value`` / ``key=value`` hidden, whatever its quoting; and evaluation applying
it to every explanation with the caller's rules."""

from __future__ import annotations

import json
import time

import pytest

from tooltrail.checks.score import Score
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.redact import Redaction, redacted_explanations
from tooltrail.score import evaluate_trace
from tooltrail.suite import TestCase

RULES = Redaction()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{'password': 'hunter2', 'user': 'bob'}", "{'password': '[REDACTED]', 'user': 'bob'}"),
        ('{"api_key": "k-1", "n": 2}', '{"api_key": "[REDACTED]", "n": 2}'),
        ("{'apiKey': \"it's\"}", "{'apiKey': \"[REDACTED]\"}"),
        ("{'password': 'a\\'b', 'user': 'bob'}", "{'password': '[REDACTED]', 'user': 'bob'}"),
        ("{'cvv': 123, 'n': 1}", "{'cvv': [REDACTED], 'n': 1}"),
        ("{'password': b'x y', 'n': 1}", "{'password': b'[REDACTED]', 'n': 1}"),
        ("Login(user='bob', password='x y')", "Login(user='bob', password='[REDACTED]')"),
        ("{'secret': {'a': [1, 2]}, 'n': 1}", "{'secret': [REDACTED], 'n': 1}"),
        ("GET /login?password=abc&user=bob", "GET /login?password=[REDACTED]&user=bob"),
        ("Authorization: Bearer abc.def, then", "Authorization: [REDACTED], then"),
        ("user_password = 'x' and more", "user_password = '[REDACTED]' and more"),
        ("passwordHint: 'pet name'", "passwordHint: 'pet name'"),  # another key
        ("Tool 'get_secret' was called.", "Tool 'get_secret' was called."),
        ("Required order ['a', 'secret'] not met: 'secret' never called.", None),
    ],
)
def test_secret_assignments_in_free_text_are_hidden(text: str, expected: str | None) -> None:
    assert RULES.redact_text(text) == (text if expected is None else expected)


def test_quoting_of_nested_text_is_followed() -> None:
    """JSON text in a Python repr in JSON text: each level escapes its quotes once more; the
    value ends at the quote escaped as its opening one, so the text after it is kept."""
    inner = json.dumps({"password": 'x"y', "user": "bob"})
    text = json.dumps({"payload": repr({"q": inner})})
    start = text.index("x", text.index("password"))
    end = text.index("y", start) + 1  # the secret, its escaped quote included
    assert RULES.redact_text(text) == text[:start] + "[REDACTED]" + text[end:]


def test_text_without_an_assignment_is_returned_as_it_is() -> None:
    text = "Required tool 'verify_identity' was not called."
    assert RULES.redact_text(text) is text
    mentions = "The password was wrong."
    assert RULES.redact_text(mentions) is mentions


def test_configured_keys_patterns_and_value_patterns_apply() -> None:
    rules = Redaction(keys=("iban",), key_patterns=(r"token$",), value_patterns=(r"\d{16}",))
    text = "iban=DE89 3704, github_token: 'ghp_x', card 4111111111111111, password=kept"
    assert rules.redact_text(text) == (
        "iban=[REDACTED], github_token: '[REDACTED]', card [REDACTED], password=kept"
    )


def test_the_remembered_texts_are_bounded() -> None:
    rules = Redaction()
    for n in range(10_000):
        rules.redact_text(f"password={n}")
    rules.redact_text("password=" + "x" * 5000)  # too long to remember
    assert len(rules._texts) <= 4096
    assert rules.redact_text("password=1") == "password=[REDACTED]"


def test_explanations_that_are_not_text_become_text() -> None:
    scores = [Score("a", "a", 1.0, True, None)]  # type: ignore[arg-type]
    assert redacted_explanations(RULES, scores)[0].explanation == "None"


def test_evaluation_redacts_explanations_with_the_callers_rules() -> None:
    trace = EvalTrace(
        trace_id="t",
        tool_calls=[ToolCall(name="login", args={"user": "alice", "pin": "8841"}, span_id="s")],
    )
    case = TestCase(id="c", expected_tool_arguments={"login": {"user": "bob"}})
    [score] = evaluate_trace(case, trace).scores
    assert "8841" in score.explanation  # pin is not a default key
    [score] = evaluate_trace(case, trace, redaction=Redaction(keys=("pin",))).scores
    assert "8841" not in score.explanation and "alice" in score.explanation


@pytest.mark.parametrize(
    "text",
    [
        "password=" + "\\" * 200_000 + "x",  # a run of backslashes where a value ends
        "password" + "\\" * 200_000 + "n: x",  # an escaped line break, escaped again
        "password: '" + "\\'" * 100_000,  # a quote never closed
        "password: " + "[" * 200_000,  # a bracket never closed
        "password:'a' " * 20_000,  # many assignments
    ],
    ids=["backslashes-in-value", "backslashes-after-key", "unclosed-quote", "unclosed", "many"],
)
def test_hostile_free_text_costs_linear_time(text: str) -> None:
    """Each of these took minutes when a value's end was searched from every backslash; a
    linear scan takes milliseconds. The limit is generous: it only catches quadratic work."""
    started = time.process_time()
    redacted = RULES.redact_text(text)
    cleaned, _ = RULES.clean({"q": text})
    assert time.process_time() - started < 10
    assert "[REDACTED]" in redacted and cleaned == {"q": "[REDACTED]"}
