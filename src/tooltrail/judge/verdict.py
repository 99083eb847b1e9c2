"""The structured verdict a judge model must answer with, and its strict parser.

A judge answers with exactly one JSON object ``{"passed": bool, "score": number, "reasoning":
string}``. Accepted around it: whitespace, and at most one Markdown code fence (```` ``` ```` or
```` ```json ````) holding the whole object, since models add one even when told not to. Anything
else is malformed: longer than ``MAX_ANSWER_CHARS``, not JSON, text before or after the
object, a key missing or unknown, ``passed`` not a JSON boolean, ``score`` not a finite number
in [0, 1] (a boolean is not a number), ``reasoning`` not a string. A malformed answer is
retried like a failed request.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from tooltrail.judge.outcome import JudgeVerdict

#: The instruction a judge prompt ends with, so that every check asks for the same shape.
VERDICT_INSTRUCTIONS = (
    "Answer with exactly one JSON object and nothing else, of the form "
    '{"passed": true or false, "score": a number from 0 to 1, '
    '"reasoning": "one or two sentences saying why"}.'
)

#: The longest answer read as a verdict (characters); a longer one is malformed, so that a
#: runaway answer is not parsed, kept in the cache or copied into reports.
MAX_ANSWER_CHARS = 20_000
_FENCE = re.compile(r"\A```(?:json)?[ \t]*\n(.*)\n```\Z", re.S | re.I)
_KEYS = ("passed", "score", "reasoning")


class MalformedVerdict(ValueError):
    """The answer is not one verdict object; the message says what is wrong with it."""


def parse_verdict(text: str) -> JudgeVerdict:
    """The verdict ``text`` holds, or :class:`MalformedVerdict` saying why there is none."""
    body = text.strip()
    if not body:
        raise MalformedVerdict("empty answer")
    if len(body) > MAX_ANSWER_CHARS:
        raise MalformedVerdict(
            f"an answer of {len(body)} characters, "
            f"more than the {MAX_ANSWER_CHARS} a verdict may be"
        )
    fenced = _FENCE.match(body)
    if fenced is not None:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise MalformedVerdict(f"not one JSON object ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, dict):
        raise MalformedVerdict(f"not a JSON object but a {type(value).__name__}")
    for key in _KEYS:
        if key not in value:
            raise MalformedVerdict(f"missing key {key!r}")
    unknown = sorted(set(value) - set(_KEYS))
    if unknown:
        raise MalformedVerdict(f"unknown key {unknown[0]!r}")
    passed, score, reasoning = value["passed"], value["score"], value["reasoning"]
    if not isinstance(passed, bool):
        raise MalformedVerdict(f"'passed' must be true or false, not {passed!r}")
    if (
        isinstance(score, bool)
        or not isinstance(score, (int, float))
        or not math.isfinite(score)
        or not 0 <= score <= 1
    ):
        raise MalformedVerdict(f"'score' must be a number from 0 to 1, not {score!r}")
    if not isinstance(reasoning, str):
        raise MalformedVerdict(f"'reasoning' must be a string, not {reasoning!r}")
    return JudgeVerdict(passed=passed, score=float(score), reasoning=reasoning)


def parse_grade(text: str, grades: Mapping[str, float]) -> tuple[str, float]:
    """The grade a letter-graded answer gives (agentic-evals' rubric templates ask for one), as
    ``(grade, its score)``; :class:`MalformedVerdict` when no grade can be read from it.

    ``grades`` maps each grade token (``"A"``, ``"WIN_A"``) to its score. Read, in order: the
    whole answer being one token (punctuation, brackets and Markdown emphasis around it
    allowed, any case: ``"A"``, ``"(b)"``, ``"**C**"``); the last token after a label
    (``verdict``, ``grade``, ``answer``, ``rating``, ``score``, optionally ``is``: ``"Verdict:
    B"``); a token opening the answer before a separator (``"(A) The answer..."``, ``"D. It
    contradicts..."``, ``"B: ..."``, not ``"A partial answer"``); the one token in brackets
    (``"... so (C)."``; two different ones say nothing); a token ending the answer. Longer
    tokens are tried first (``WIN_A`` before ``A``), and outside the whole-answer form a
    one-letter token counts only in upper case, so the article in "a partial answer" is never
    grade A."""
    body = text.strip()
    if not body:
        raise MalformedVerdict("empty answer")
    if len(body) > MAX_ANSWER_CHARS:
        raise MalformedVerdict(
            f"an answer of {len(body)} characters, "
            f"more than the {MAX_ANSWER_CHARS} a verdict may be"
        )
    by_upper = {token.upper(): token for token in grades}
    tokens = sorted(grades, key=len, reverse=True)
    words = "|".join(re.escape(t) for t in tokens if len(t) > 1)
    letters = "|".join(re.escape(t.upper()) for t in tokens if len(t) == 1)
    pattern = "|".join(p for p in (f"(?i:{words})" if words else "", letters) if p)
    token = rf"(?<![\w])({pattern})(?![\w])"

    def found(match: str) -> tuple[str, float]:
        grade = by_upper[match.upper()]
        return grade, float(grades[grade])

    whole = re.fullmatch(r"[\W_]*([\w]+)[\W_]*", body)
    if whole is not None and whole.group(1).upper() in by_upper:
        return found(whole.group(1))
    labelled = re.findall(
        rf"(?i:\b(?:verdict|grade|answer|rating|score)\b(?:\s+is)?)[\s:=*\-()\[\]]*{token}", body
    )
    if labelled:
        return found(labelled[-1])
    opening = re.match(
        rf"[\s*]*(?:[(\[]({pattern})[)\]]|({pattern})\**(?:[.:)\-,]|[ \t]*\n|[ \t]*\Z))", body
    )
    if opening is not None:
        return found(opening.group(1) or opening.group(2))
    bracketed = {m.upper() for m in re.findall(rf"[(\[]({pattern})[)\]]", body)}
    if len(bracketed) == 1:
        return found(bracketed.pop())
    closing = re.search(rf"{token}[\W_]*\Z", body)
    if closing is not None:
        return found(closing.group(1))
    raise MalformedVerdict(
        f"no grade ({', '.join(sorted(grades))}) stated, and not one JSON object either"
    )


def graded_verdict(grade: str, score: float, reasoning: str) -> JudgeVerdict:
    """The verdict of a letter grade: its score, passing only at the top score (1), as
    agentic-evals passes a grade only at its default threshold of 1."""
    return JudgeVerdict(passed=score >= 1.0, score=score, reasoning=reasoning)
