"""No verdict on what a trace cannot show: checks that read the tool calls of a trace whose
calls' content was not captured (``EvalTrace.content_missing``) give an error score.

A check says it does not read the calls with ``reads_calls = False`` (the reply, latency,
token and turn-count checks); every other check, a plug-in's included, is taken to read them,
so a trace recorded with content capture off never gets a FAIL (nor a PASS) it cannot back.
A check of the reply (``reads_reply = True``: ``contains``) gets the error score too when the
trace records no reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tooltrail.checks.needs import needs_of
from tooltrail.checks.protocol import Check, CheckContext, CheckResult
from tooltrail.checks.score import Score

#: ``Score.error`` of a check given no verdict because the calls' content was not captured.
CONTENT_NOT_CAPTURED = "ContentNotCaptured"


def reads_calls(check: Check) -> bool:
    """Whether ``check`` reads the tool calls (true unless it says ``reads_calls = False``)."""
    return needs_of(check).calls


def not_captured_explanation(reason: str) -> str:
    """The explanation of a check given no verdict: the contract text (docs/convert.md)."""
    return f"Content not captured: {reason}; this check reads the tool calls and gives no verdict."


@dataclass(slots=True, frozen=True)
class Uncaptured:
    """``check`` on a trace whose calls' content was not captured: it runs (its scores keep
    their names, turns and span ids), and each score it gives that is not skipped and not
    already an error becomes an error score that never passes."""

    check: Check
    reason: str

    @property
    def name(self) -> Any:
        return getattr(self.check, "name", None)

    def evaluate(self, ctx: CheckContext) -> CheckResult:
        result = self.check.evaluate(ctx)
        scores = [result] if isinstance(result, Score) else list(result)
        explanation = not_captured_explanation(self.reason)
        for score in scores:
            if isinstance(score, Score) and not score.skipped and score.error is None:
                score.value = 0.0
                score.passed = False
                score.error = CONTENT_NOT_CAPTURED
                score.explanation = explanation
        return scores


def guarded(checks: list[Check], reason: str, no_reply: bool) -> list[Check]:
    """``checks`` with each one that reads calls (or, with ``no_reply``, the missing reply)
    wrapped in ``Uncaptured``."""
    wrapped: list[Check] = []
    for check in checks:
        needs = needs_of(check)
        uncaptured = needs.calls or (no_reply and needs.reply)
        wrapped.append(Uncaptured(check, reason) if uncaptured else check)
    return wrapped
