"""The judge classes of agentic-evals and pytest-agent-eval, with their constructor shapes and
their contracts (docs/judge.md, "agentic-evals and pytest-agent-eval code").

- agentic-evals: ``LLMJudgeEvaluator(name, judge_fn, version=, retry=, samples=)`` calls
  ``judge_fn(context)`` (an ``EvaluationContext``) and gets a ``Score`` back, under
  ``RetryPolicy`` and ``samples`` (``checks.peer_judging``); given a tooltrail ``Judge``
  object instead, it runs ``llm_judge`` under its name. ``LLMRubricEvaluator(name, template,
  complete_fn, ...)`` asks ``complete_fn`` (prompt -> text or ``JudgeResponse``; sync or
  async) through the judge engine to grade the reply by a letter-graded ``RubricTemplate``
  (``FACTUALITY``, ``make_rubric(...)``), a built-in rubric's name, or rubric text. Both are
  registered with ``registry.register(evaluator)`` and named by a case's ``EvaluatorConfig``.
- pytest-agent-eval: ``JudgeEvaluator(rubric, model, retries, timeout)`` and
  ``ToolCallArgsJudgeEvaluator(tool, rubric, model, retries, timeout)``, in a turn's
  ``Expect(evaluators=[...])``, or awaited on a ``TurnContext`` as pytest-agent-eval does. A
  ``model`` no run resolves is asked through its provider's SDK with these ``retries`` and
  ``timeout`` (``judge.fallback``); with no model and no run judge, ``[tool.agent_eval]
  model`` of ``./pyproject.toml`` answers (``judge.active``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from tooltrail.checks.judges import LlmJudge, ToolArgsJudge
from tooltrail.checks.peer_evaluators import (
    CallableEvaluator,
    ContextCheck,
    EvaluationContext,
    context_of,
    finished,
)
from tooltrail.checks.peer_judging import RetryPolicy, ajudged, judged
from tooltrail.checks.peer_protocol import EvalResult, TurnContext, awaited_result
from tooltrail.checks.peer_rubric import ReportingJudge, graded_completion, judge_metadata
from tooltrail.checks.protocol import Check, CheckContext
from tooltrail.checks.rubric_templates import RUBRIC_TEMPLATES, RubricTemplate
from tooltrail.checks.rubrics import Rubric
from tooltrail.checks.score import Score, config_error
from tooltrail.checks.view import CallView
from tooltrail.judge.active import resolver_installed, use_model_resolver
from tooltrail.judge.fallback import model_judge

__all__ = [
    "JudgeEvaluator",
    "LLMJudgeEvaluator",
    "LLMRubricEvaluator",
    "RetryPolicy",
    "ToolCallArgsJudgeEvaluator",
    "as_judge",
]


def _is_judge_object(value: Any) -> bool:
    return callable(getattr(value, "judge", None))


def as_judge(
    judge: Any,
    retry: RetryPolicy | None = None,
    *,
    retries: int | None = None,
    timeout: float | None = None,
    samples: int = 1,
    grades: dict[str, float] | None = None,
) -> Any:
    """``judge`` as a ``Judge``: a ``Judge`` object is used as it is; a completion function
    (prompt -> text, ``(text, usage)`` or ``JudgeResponse``) is wrapped in the engine's
    ``JudgeRunner`` (no cache: the caller's function may change between runs), reading
    ``grades`` letters when given (``checks.peer_rubric``).

    ``retry`` (agentic-evals): ``max_attempts`` calls, waiting ``backoff_seconds * 2 ** n``
    (the engine's doubling; at most ``max_backoff_seconds``; a ``Retry-After`` wins), and only
    ``retry_on`` exceptions are retried, any other ends the judgement at once. Else
    ``retries`` more calls (pytest-agent-eval; default none). ``timeout``: seconds per call."""
    if _is_judge_object(judge):
        return judge
    if not callable(judge):
        raise TypeError(
            f"judge must be a Judge object (judge(prompt, samples=, params=)) or a completion "
            f"function, not {type(judge).__name__}"
        )
    from tooltrail.judge.runner import DEFAULT_TIMEOUT_S, JudgeRunner

    options: dict[str, Any] = {"retries": 0}  # retries are opt-in, as in agentic-evals
    retry_on: tuple[type[Exception], ...] = (Exception,)
    if retry is not None:
        options = {
            "retries": retry.max_attempts - 1,
            "backoff_s": retry.backoff_seconds,
            "max_wait_s": retry.max_backoff_seconds,
        }
        retry_on = retry.retry_on
    elif retries is not None:
        options["retries"] = retries
    name = getattr(judge, "__qualname__", type(judge).__name__)
    runner = JudgeRunner(
        graded_completion(judge, grades, retry_on),
        model=f"function:{name}",
        timeout_s=DEFAULT_TIMEOUT_S if timeout is None else timeout,
        samples=_samples(samples),
        **options,
    )
    return ReportingJudge(runner)


def _samples(samples: Any) -> int:
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError("samples must be at least 1")
    return samples


class LLMJudgeEvaluator(CallableEvaluator):
    """A judge registered under ``name`` (agentic-evals' shape).

    ``judge`` is agentic-evals' judge function, ``judge_fn(context) -> Score`` (sync or
    ``async def``), run under ``retry`` (default one attempt) and ``samples``: a function that
    fails every attempt is an unavailable score (value 0, never passing). Or it is a
    tooltrail ``Judge`` object, which then judges the reply as ``llm_judge`` does, with the
    case's ``EvaluatorConfig.config`` ``rubric`` (default ``rubric=``, else
    ``task_completed``) and ``policy``; its verdict passes unless a threshold says otherwise.
    ``version`` is stamped on the scores (``Score.evaluator_version``)."""

    def __init__(
        self,
        name: str,
        judge: Any,
        *,
        version: str | None = None,
        retry: RetryPolicy | None = None,
        samples: int = 1,
        evaluator_type: str = "llm_judge",
        rubric: str | Rubric | RubricTemplate | None = None,
    ) -> None:
        engine = _is_judge_object(judge)
        if not engine and not callable(judge):
            raise TypeError(
                "judge must be a function of the evaluation context (context -> Score) or a "
                f"Judge object (judge(prompt, samples=, params=)), not {type(judge).__name__}"
            )
        function = judge.judge if engine else judge  # a Judge object's is not called as one
        super().__init__(name, function, evaluator_type=evaluator_type, version=version)
        self.retry = retry
        self.samples = _samples(samples)
        self.rubric = rubric
        #: A Judge object (the engine's way), else ``None`` (a judge function).
        self.judge = judge if engine else None
        #: What a case's config may set: the rubric's keys for a Judge object; anything for a
        #: judge function (its own ``context.config.config``).
        self.config_keys = frozenset({"rubric", "policy"}) if engine else None

    def evaluate(self, context: EvaluationContext | CheckContext) -> list[Score]:
        if isinstance(context, CheckContext) and self.judge is not None:  # a turn's Expect
            return _engine_scores(self, context, {})
        return super().evaluate(context)

    def scores(self, context: EvaluationContext) -> list[Score]:
        if self.judge is not None:
            return _engine_scores(self, _check_context(context), context.config.config)
        return judged(
            self.function, context, name=self.name, retry=self.retry or RetryPolicy(),
            samples=self.samples,
        )  # fmt: skip

    async def aevaluate(self, context: EvaluationContext) -> list[Score]:
        if self.judge is not None:  # the engine's requests block: off the running loop
            return await asyncio.to_thread(self.evaluate, context)
        return await super().aevaluate(context)

    async def ascores(self, context: EvaluationContext) -> list[Score]:
        return await ajudged(
            self.function, context, name=self.name, retry=self.retry or RetryPolicy(),
            samples=self.samples,
        )  # fmt: skip

    def configured(self, config: dict[str, Any]) -> Check:
        if self.judge is None:
            return ContextCheck(evaluator=self, config=config)
        return _EngineCheck(evaluator=self, config=config)


def _check_context(context: EvaluationContext) -> CheckContext:
    """A tooltrail context for an agentic-evals one (an evaluator called directly)."""
    trace = context.sample.trace
    return CheckContext(
        trace=trace, view=CallView(trace.tool_calls), output=context.sample.output,
        case=context.case,
    )  # fmt: skip


def _engine_scores(
    evaluator: LLMJudgeEvaluator, ctx: CheckContext, config: dict[str, Any]
) -> list[Score]:
    """``llm_judge`` by the evaluator's ``Judge`` object, its scores stamped as agentic-evals'
    (provenance, ``judge_*`` metadata)."""
    rubric = config.get("rubric", evaluator.rubric)
    score = LlmJudge(
        rubric=rubric, samples=evaluator.samples, judge=evaluator.judge,
        policy=config.get("policy"), name=evaluator.name,
    ).evaluate(ctx)  # fmt: skip
    return [_stamped(score, evaluator, rubric)]


def _stamped(score: Score, evaluator: CallableEvaluator, rubric: Any) -> Score:
    metadata = judge_metadata(score.judge, rubric)
    if isinstance(rubric, RubricTemplate) and score.error is None:
        grade = rubric.grade_of(score.value)
        if grade is not None:
            metadata["verdict"] = grade
    return replace(
        score,
        metadata=metadata or None,
        evaluator=evaluator.name,
        evaluator_type=evaluator.evaluator_type,
        evaluator_version=evaluator.version,
    )


@dataclass(frozen=True, slots=True)
class _EngineCheck:
    """An ``LLMJudgeEvaluator`` over a ``Judge`` object, as one case configured it."""

    evaluator: Any
    config: dict[str, Any]

    reads_content: ClassVar[bool] = True
    asks_judge: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> list[Score]:
        return _engine_scores(self.evaluator, ctx, self.config)


class LLMRubricEvaluator(LLMJudgeEvaluator):
    """A judge grading the reply by a rubric ``template`` (agentic-evals' shape): a
    letter-graded ``RubricTemplate`` (``FACTUALITY``, ``make_rubric``), a built-in rubric's or
    template's name, a ``Rubric``, or rubric text, asking ``complete_fn`` (prompt -> text,
    ``(text, usage)`` or ``JudgeResponse``; sync or async; or a ``Judge`` object).

    A case's ``EvaluatorConfig.config`` may give ``reference`` (a template's ``{expected}``,
    shown as the reference answer), ``extra`` (more places of the template), ``rubric`` and
    ``policy``; the case's ``input`` is the template's ``{input}``. A letter-graded template's
    score passes at ``value >= threshold`` (default 1, as in agentic-evals)."""

    def __init__(
        self,
        name: str,
        template: RubricTemplate | Rubric | str,
        complete_fn: Any,
        *,
        version: str | None = None,
        retry: RetryPolicy | None = None,
        samples: int = 1,
    ) -> None:
        template = _named(template)
        grades = template.verdict_scores if isinstance(template, RubricTemplate) else None
        judge = as_judge(complete_fn, retry, samples=_samples(samples), grades=grades)
        super().__init__(
            name, judge, version=version, retry=retry, samples=samples,
            evaluator_type="llm_rubric", rubric=template,
        )  # fmt: skip
        self.template = template
        self.config_keys = frozenset({"rubric", "policy", "reference", "extra"})

    def evaluate(self, context: EvaluationContext | CheckContext) -> list[Score]:
        if isinstance(context, CheckContext):  # a turn's Expect
            return _rubric_scores(self, context, context_of(context, self.name, {}))
        return _rubric_scores(self, _check_context(context), context)

    def scores(self, context: EvaluationContext) -> list[Score]:
        return _rubric_scores(self, _check_context(context), context)

    def configured(self, config: dict[str, Any]) -> Check:
        return _RubricCheck(evaluator=self, config=config)


def _rubric_scores(
    evaluator: LLMRubricEvaluator, ctx: CheckContext, context: EvaluationContext
) -> list[Score]:
    config = context.config.config
    template = _named(config.get("rubric", evaluator.template))
    rubric: Any = template
    if isinstance(template, RubricTemplate):
        try:
            text = template.rubric_text(
                question=_text(getattr(context.case, "input", None)),
                reference=_text(config.get("reference")),
                extra=config.get("extra") if isinstance(config.get("extra"), dict) else None,
            )
        except (KeyError, IndexError, ValueError) as exc:
            why = f"{type(exc).__name__}: {exc}"
            return [
                config_error(
                    evaluator.name,
                    "llm_judge",
                    f"Rubric template {template.name!r} cannot be filled in: {why}.",
                )
            ]
        rubric = Rubric(name=template.name, text=text)
    score = LlmJudge(
        rubric=rubric, samples=evaluator.samples, judge=evaluator.judge,
        policy=config.get("policy"), name=evaluator.name,
    ).evaluate(ctx)  # fmt: skip
    stamped = _stamped(score, evaluator, template)
    if isinstance(template, RubricTemplate):  # graded as agentic-evals grades: by threshold
        return finished([stamped], context, evaluator)
    return [stamped]


def _named(rubric: Any) -> Any:
    """A built-in template's name as the template (so its grades are read), else ``rubric``."""
    if isinstance(rubric, str):
        return RUBRIC_TEMPLATES.get(rubric.strip(), rubric)
    return rubric


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None if value is None else str(value)


@dataclass(frozen=True, slots=True)
class _RubricCheck:
    """An ``LLMRubricEvaluator`` as one case configured it."""

    evaluator: Any
    config: dict[str, Any]

    reads_content: ClassVar[bool] = True
    asks_judge: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> list[Score]:
        context = context_of(ctx, self.evaluator.name, self.config)
        return _rubric_scores(self.evaluator, ctx, context)


def _judged(check: Any, ctx: CheckContext, model: str | None, retries: int, timeout: float) -> Any:
    """``check`` on ``ctx``; a ``model`` that no run resolves is asked through its SDK with
    the evaluator's ``retries`` and ``timeout`` (``judge.fallback``), and a model that cannot
    be served is the check's own ``NoJudge`` score, naming why."""
    if check.judge is not None or model is None or resolver_installed():
        return check.evaluate(ctx)

    def resolve(name: str) -> Any:
        return model_judge(name, retries=retries, timeout_s=timeout)

    with use_model_resolver(resolve):
        return check.evaluate(ctx)


@dataclass
class JudgeEvaluator:
    """A judge's rubric over a turn's reply (pytest-agent-eval's shape), for
    ``Expect(evaluators=[...])``, or awaited on a ``TurnContext``. ``model`` is resolved by
    the run's resolver, else asked through its SDK with ``retries`` and ``timeout``; with no
    ``model``, the run's judge answers, else ``[tool.agent_eval] model``. ``judge=`` gives a
    ``Judge`` object or a completion function."""

    rubric: str
    model: str | None = None
    retries: int = 2
    timeout: float = 30.0
    judge: Any = field(default=None, repr=False)

    #: It reads the turn's input and reply (``score.needs``: ``reads_content``).
    reads_content: ClassVar[bool] = True
    #: It asks a judge (``score.needs``; serve and live judge it off the ingest path).
    asks_judge: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.judge is not None:  # a completion function: the engine, with these settings
            self.judge = as_judge(self.judge, retries=self.retries, timeout=self.timeout)

    def evaluate(self, ctx: CheckContext | TurnContext) -> Score | Awaitable[EvalResult]:
        """The score on a tooltrail context; on a ``TurnContext``, an awaitable
        ``EvalResult`` (pytest-agent-eval's protocol)."""
        if isinstance(ctx, TurnContext):
            return awaited_result(self.evaluate, ctx)
        check = LlmJudge(rubric=self.rubric, model=self.model, judge=self.judge)
        return _judged(check, ctx, self.model, self.retries, self.timeout)


@dataclass
class ToolCallArgsJudgeEvaluator:
    """A judge's rubric over the arguments of ``tool``'s calls in a turn; passes when any
    call's do (pytest-agent-eval's shape). The judge is found as ``JudgeEvaluator``'s."""

    tool: str
    rubric: str
    model: str | None = None
    retries: int = 2
    timeout: float = 30.0
    judge: Any = field(default=None, repr=False)

    reads_content: ClassVar[bool] = True
    asks_judge: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.judge is not None:
            self.judge = as_judge(self.judge, retries=self.retries, timeout=self.timeout)

    def evaluate(self, ctx: CheckContext | TurnContext) -> Score | Awaitable[EvalResult]:
        if isinstance(ctx, TurnContext):
            return awaited_result(self.evaluate, ctx)
        check = ToolArgsJudge(
            tool=self.tool, rubric=self.rubric, model=self.model, judge=self.judge
        )
        return _judged(check, ctx, self.model, self.retries, self.timeout)
