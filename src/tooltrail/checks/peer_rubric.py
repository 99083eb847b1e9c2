"""agentic-evals' rubric judging on tooltrail's engine: ``JudgeResponse``, letter grades, and
the metadata agentic-evals records on a judge's score.

``LLMRubricEvaluator(name, template, complete_fn)`` asks ``complete_fn`` through the judge
engine (``judge.runner.JudgeRunner``: retries, samples, tokens, the score's ``judge`` record).
What agentic-evals' completion functions answer differs from tooltrail's JSON verdict in two
ways, both read here before the engine parses the answer:

- a ``JudgeResponse`` (the text, with the tokens, cost, model and provider the call used) is
  the text plus its usage; the reported cost and model go into the judgement's outcome
  (:class:`ReportingJudge`), since the engine only prices tokens by a price table;
- a letter grade (``"A"``, ``"Verdict: B"``, ``"(C) ..."``) of a letter-graded template is its
  grade's verdict (``judge.verdict.parse_grade``): its score, passing only at 1. A JSON
  verdict is taken as it is. An answer that is neither is a malformed verdict, retried when
  the retry policy retries a ``ValueError`` (agentic-evals' grading failure is one).
"""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from tooltrail.checks.rubric_templates import RubricTemplate
from tooltrail.judge.failure import AttemptFailure
from tooltrail.judge.outcome import JudgeOutcome
from tooltrail.judge.verdict import MalformedVerdict, graded_verdict, parse_grade, parse_verdict

_COST_SOURCES = ("measured", "estimated")


@dataclass(frozen=True, slots=True)
class JudgeResponse:
    """A judge's answer with what the call used (agentic-evals' shape): leave a field
    ``None`` when the provider did not say; nothing is estimated. A cost without a
    ``cost_source`` is recorded as ``estimated``."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    cost_source: str | None = None
    model: str | None = None
    provider: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"JudgeResponse.text must be a str, not {type(self.text).__name__}")
        for key in ("input_tokens", "output_tokens"):
            value = getattr(self, key)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise ValueError(f"JudgeResponse.{key} must be a whole number, 0 or more")
        cost = self.cost_usd
        if cost is not None and (
            isinstance(cost, bool)
            or not isinstance(cost, (int, float))
            or not math.isfinite(cost)
            or cost < 0
        ):
            raise ValueError("JudgeResponse.cost_usd must be a number, 0 or more")
        if self.cost_source is not None and self.cost_source not in _COST_SOURCES:
            raise ValueError(f"JudgeResponse.cost_source must be one of {_COST_SOURCES}")

    def usage_metadata(self) -> dict[str, Any]:
        """What was reported, under agentic-evals' ``judge_*`` metadata keys."""
        recorded: dict[str, Any] = {}
        if self.input_tokens is not None:
            recorded["judge_input_tokens"] = self.input_tokens
        if self.output_tokens is not None:
            recorded["judge_output_tokens"] = self.output_tokens
        if self.cost_usd is not None:
            recorded["judge_cost_usd"] = self.cost_usd
            recorded["judge_cost_source"] = self.cost_source or "estimated"
        if self.model:
            recorded["judge_model"] = self.model
        if self.provider:
            recorded["judge_provider"] = self.provider
        return recorded


#: The responses reported during the judgement under way (set by :class:`ReportingJudge`).
_REPORTED: ContextVar[list[JudgeResponse] | None] = ContextVar(
    "tooltrail_judge_responses", default=None
)


def graded_completion(
    complete_fn: Callable[[str], Any],
    grades: Mapping[str, float] | None,
    retry_on: tuple[type[Exception], ...] = (Exception,),
) -> Callable[[str], Any]:
    """``complete_fn`` as a completion function of the engine (see the module): a
    ``JudgeResponse`` becomes ``(text, usage)``, a letter grade a JSON verdict. Only
    ``retry_on`` exceptions of ``complete_fn`` are retried; any other ends the judgement."""
    grade_retried = any(issubclass(ValueError, kind) for kind in retry_on)

    def final(exc: Exception) -> AttemptFailure:
        return AttemptFailure(f"{type(exc).__name__}: {exc}", retryable=False)

    def complete(prompt: str) -> Any:
        sink = _REPORTED.get()  # read on the judging thread, before any await
        try:
            answer = complete_fn(prompt)
        except retry_on:
            raise
        except Exception as exc:
            raise final(exc) from exc
        if not inspect.isawaitable(answer):
            return _read(answer, grades, sink, grade_retried)
        pending = answer

        async def finish() -> Any:
            try:
                value = await pending
            except retry_on:
                raise
            except Exception as exc:
                raise final(exc) from exc
            return _read(value, grades, sink, grade_retried)

        return finish()

    complete.__qualname__ = getattr(complete_fn, "__qualname__", type(complete_fn).__name__)
    return complete


def _read(
    answer: Any,
    grades: Mapping[str, float] | None,
    sink: list[JudgeResponse] | None,
    grade_retried: bool,
) -> Any:
    usage: Any = None
    if isinstance(answer, JudgeResponse):
        if sink is not None:
            sink.append(answer)
        text: Any = answer.text
        usage = {
            "input_tokens": answer.input_tokens or 0,
            "output_tokens": answer.output_tokens or 0,
        }
    elif isinstance(answer, tuple) and len(answer) == 2:
        text, usage = answer
    else:
        text = answer
    if grades and isinstance(text, str):
        text = _as_verdict(text, grades, grade_retried)
    return text if usage is None else (text, usage)


def _as_verdict(text: str, grades: Mapping[str, float], grade_retried: bool) -> str:
    """``text`` when it is a JSON verdict, else the JSON verdict of the grade it names."""
    try:
        parse_verdict(text)
        return text
    except MalformedVerdict:
        pass
    try:
        grade, score = parse_grade(text, grades)
    except MalformedVerdict as exc:
        raise AttemptFailure(f"malformed verdict: {exc}", retryable=grade_retried) from None
    said = text.strip()
    reasoning = said if said.strip("()[]*.: \n").upper() != grade.upper() else f"Grade {grade}."
    verdict = graded_verdict(grade, score, reasoning)
    return json.dumps(
        {"passed": verdict.passed, "score": verdict.score, "reasoning": verdict.reasoning}
    )


class ReportingJudge:
    """A judge (the engine's runner over a :func:`graded_completion`) whose outcomes carry the
    cost and model that ``JudgeResponse`` answers reported, when the engine priced none."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def judge(
        self, prompt: str, *, samples: int = 1, params: dict[str, Any] | None = None
    ) -> JudgeOutcome:
        reported: list[JudgeResponse] = []
        token = _REPORTED.set(reported)
        try:
            outcome: JudgeOutcome = self.inner.judge(prompt, samples=samples, params=params)
        finally:
            _REPORTED.reset(token)
        changes: dict[str, Any] = {}
        costs = [r.cost_usd for r in reported if r.cost_usd is not None]
        if costs and outcome.cost_usd is None:
            changes["cost_usd"] = float(sum(costs))
        model = next((r.model for r in reported if r.model), None)
        if model:
            provider = next((r.provider for r in reported if r.provider), None)
            changes["model"] = f"{provider}:{model}" if provider else model
        return replace(outcome, **changes) if changes else outcome

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


def judge_metadata(record: Mapping[str, Any] | None, template: Any) -> dict[str, Any]:
    """agentic-evals' metadata of a judge score, from its tooltrail ``judge`` record: the
    status, attempts, latency, tokens, cost, model, samples and agreement, and for a
    letter-graded template its name and the grade of the score."""
    metadata: dict[str, Any] = {}
    if isinstance(template, RubricTemplate):
        metadata["rubric"] = template.name
    if not record:
        return metadata
    metadata["judge_status"] = "unavailable" if record.get("error") else "ok"
    metadata["judge_attempts"] = record.get("attempts", 0)
    metadata["judge_latency_ms"] = round(float(record.get("latency_s") or 0.0) * 1000, 3)
    if record.get("error"):
        metadata["judge_error"] = record["error"]
    for key in ("input_tokens", "output_tokens"):
        if record.get(key):
            metadata[f"judge_{key}"] = record[key]
    if record.get("cost_usd") is not None:
        metadata["judge_cost_usd"] = record["cost_usd"]
        metadata["judge_cost_source"] = "estimated"
    if record.get("model"):
        metadata["judge_model"] = record["model"]
    if (record.get("samples") or 0) > 1:
        metadata["judge_samples"] = record["samples"]
        metadata["judge_agreement"] = record.get("agreement")
    return metadata
