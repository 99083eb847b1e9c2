"""``Score.passing`` and ``Score.failing`` build their score positionally (for speed): they
must give exactly the score the same values give by keyword, whatever order the fields are
declared in."""

from __future__ import annotations

from tooltrail.checks.score import Score


def test_passing_is_the_keyword_score() -> None:
    made = Score.passing("n", "m", "why", span_ids=("s1",), required=False, turn=2)
    assert made == Score(
        name="n",
        metric="m",
        value=1.0,
        passed=True,
        explanation="why",
        required=False,
        skipped=False,
        span_ids=("s1",),
        error=None,
        turn=2,
        judge=None,
    )


def test_failing_is_the_keyword_score() -> None:
    made = Score.failing("n", "m", "why", span_ids=("s1",), required=False, error="E", turn=3)
    assert made == Score(
        name="n",
        metric="m",
        value=0.0,
        passed=False,
        explanation="why",
        required=False,
        skipped=False,
        span_ids=("s1",),
        error="E",
        turn=3,
        judge=None,
    )
    assert Score.failing("n", "m", "why") == Score(
        name="n", metric="m", value=0.0, passed=False, explanation="why"
    )
