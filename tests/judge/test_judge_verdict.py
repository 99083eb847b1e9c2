"""The strict verdict parser and the Retry-After reader: what is accepted, and the exact
reason given for what is not."""

from __future__ import annotations

import email.utils

import pytest

from tooltrail.judge import JudgeVerdict, MalformedVerdict, parse_verdict
from tooltrail.judge.failure import retry_after_seconds

GOOD = '{"passed": true, "score": 0.5, "reasoning": "half"}'


@pytest.mark.parametrize(
    "answer",
    [
        GOOD,
        f"  \n{GOOD}\n\t",
        f"```json\n{GOOD}\n```",
        f"```\n{GOOD}\n```",
        f"\n```JSON\n  {GOOD}  \n```\n",
        '{"reasoning": "half", "score": 0.5, "passed": true}',
    ],
)
def test_accepted_forms(answer: str) -> None:
    assert parse_verdict(answer) == JudgeVerdict(passed=True, score=0.5, reasoning="half")


def test_a_whole_number_score_is_a_float() -> None:
    verdict = parse_verdict('{"passed": false, "score": 0, "reasoning": ""}')
    assert verdict.score == 0.0 and isinstance(verdict.score, float)


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("", "empty answer"),
        ("   \n", "empty answer"),
        ("PASS", "not one JSON object (Expecting value at character 0)"),
        (f"Verdict: {GOOD}", "not one JSON object (Expecting value at character 0)"),
        (f"{GOOD} thanks", "not one JSON object (Extra data at character 52)"),
        (f"{GOOD}\n{GOOD}", "not one JSON object (Extra data at character 52)"),
        (f"```json\n{GOOD}\n```\n```json\n{GOOD}\n```", "not one JSON object (Extra data at"),
        (f"```python\n{GOOD}\n```", "not one JSON object (Expecting value at character 0)"),
        ('[true, 1, "x"]', "not a JSON object but a list"),
        ('{"passed": true, "score": 1}', "missing key 'reasoning'"),
        ('{"score": 1, "reasoning": ""}', "missing key 'passed'"),
        (
            '{"passed": true, "score": 1, "reasoning": "", "confidence": 1}',
            "unknown key 'confidence'",
        ),
        (
            '{"passed": "true", "score": 1, "reasoning": ""}',
            "'passed' must be true or false, not 'true'",
        ),
        ('{"passed": 1, "score": 1, "reasoning": ""}', "'passed' must be true or false, not 1"),
        (
            '{"passed": true, "score": 1.5, "reasoning": ""}',
            "'score' must be a number from 0 to 1, not 1.5",
        ),
        (
            '{"passed": true, "score": -0.1, "reasoning": ""}',
            "'score' must be a number from 0 to 1, not -0.1",
        ),
        (
            '{"passed": true, "score": "1", "reasoning": ""}',
            "'score' must be a number from 0 to 1, not '1'",
        ),
        (
            '{"passed": true, "score": true, "reasoning": ""}',
            "'score' must be a number from 0 to 1, not True",
        ),
        (
            '{"passed": true, "score": NaN, "reasoning": ""}',
            "'score' must be a number from 0 to 1, not nan",
        ),
        (
            '{"passed": true, "score": 1, "reasoning": null}',
            "'reasoning' must be a string, not None",
        ),
    ],
)
def test_malformed_answers_and_their_reasons(answer: str, reason: str) -> None:
    with pytest.raises(MalformedVerdict) as raised:
        parse_verdict(answer)
    assert str(raised.value).startswith(reason)


def test_a_runaway_answer_is_malformed_without_being_parsed() -> None:
    long = '{"passed": true, "score": 1, "reasoning": "' + "x" * 20_000 + '"}'
    with pytest.raises(MalformedVerdict) as raised:
        parse_verdict(long)
    assert str(raised.value) == (
        "an answer of 20045 characters, more than the 20000 a verdict may be"
    )


def test_retry_after_in_seconds_milliseconds_or_as_a_date() -> None:
    assert retry_after_seconds({"Retry-After": "2"}) == 2.0
    assert retry_after_seconds({"retry-after": " 1.5 "}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = 1_800_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after_seconds({"Retry-After": date}, now=now) == pytest.approx(30)
    past = email.utils.formatdate(now - 30, usegmt=True)
    assert retry_after_seconds({"Retry-After": past}, now=now) == 0.0
    assert retry_after_seconds({"Retry-After": "-5"}) == 0.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None
