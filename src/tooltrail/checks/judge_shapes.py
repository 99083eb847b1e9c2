"""The judge classes of agentic-evals and pytest-agent-eval, with their constructor shapes.

Code written for either builds these with the same arguments after changing its imports; each
is a tooltrail check (``evaluate(ctx)``) that runs ``llm_judge`` or ``tool_args_judge``:

- agentic-evals: ``LLMJudgeEvaluator(name, judge, retry=..., samples=N)`` and
  ``LLMRubricEvaluator(name, template, complete_fn, retry=..., samples=N)``, registered with
  ``Registry.register(evaluator)`` and named by a case's ``EvaluatorConfig``;
  ``RetryPolicy``; ``make_rubric`` (``checks.rubrics``).
- pytest-agent-eval: ``JudgeEvaluator(rubric, model, retries, timeout)`` and
  ``ToolCallArgsJudgeEvaluator(tool, rubric, model, retries, timeout)``, in a turn's
  ``Expect(evaluators=[...])``.

The judge is a :class:`~tooltrail.judge.Judge` object, or a completion function (prompt ->
text, or text plus usage; sync or async), which :func:`as_judge` wraps in the engine's
``JudgeRunner`` with the shape's retry policy (or ``retries``), ``timeout`` and ``samples``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from tooltrail.checks.judges import LlmJudge, ToolArgsJudge
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.rubrics import Rubric
from tooltrail.checks.score import Score


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How often a judge is asked again after a failure (agentic-evals' shape): at most
    ``max_attempts`` calls, waiting ``backoff_seconds * backoff_multiplier ** (n - 1)`` (at
    most ``max_backoff_seconds``) before retry ``n``. Handed to the judge engine that wraps a
    completion function; a ``Judge`` object retries by its own settings."""

    max_attempts: int = 1
    backoff_seconds: float = 0.0
    backoff_multiplier: float = 2.0
    max_backoff_seconds: float = 30.0
    retry_on: tuple[type[Exception], ...] = (Exception,)

    def __post_init__(self) -> None:
        if isinstance(self.max_attempts, bool) or self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.backoff_seconds < 0 or self.max_backoff_seconds < 0:
            raise ValueError("backoff seconds must not be negative")
        if self.backoff_multiplier < 1:
            raise ValueError("backoff_multiplier must be at least 1")
        if not self.retry_on:
            raise ValueError("retry_on must name at least one exception type")


def as_judge(
    judge: Any,
    retry: RetryPolicy | None = None,
    *,
    retries: int | None = None,
    timeout: float | None = None,
    samples: int = 1,
) -> Any:
    """``judge`` as a ``Judge``: a ``Judge`` object is used as it is; a completion function is
    wrapped in a ``JudgeRunner`` (no cache: the caller's function may change between runs).

    ``retry`` (agentic-evals): ``max_attempts`` calls, waiting ``backoff_seconds * 2 ** n``
    (the engine's doubling; at most ``max_backoff_seconds``; a ``Retry-After`` wins), and only
    ``retry_on`` exceptions are retried, any other ends the judgement at once. Else
    ``retries`` more calls (pytest-agent-eval; default none). ``timeout``: seconds per call."""
    if callable(getattr(judge, "judge", None)):
        return judge
    if callable(judge):
        from tooltrail.judge.runner import DEFAULT_TIMEOUT_S, JudgeRunner

        options: dict[str, Any] = {}
        if retry is not None:
            options = {
                "retries": retry.max_attempts - 1,
                "backoff_s": retry.backoff_seconds,
                "max_wait_s": retry.max_backoff_seconds,
            }
            if retry.retry_on != (Exception,):
                judge = _retrying_only(judge, retry.retry_on)
        elif retries is not None:
            options["retries"] = retries
        else:
            options["retries"] = 0  # retries are opt-in, as in agentic-evals
        return JudgeRunner(
            judge,
            timeout_s=DEFAULT_TIMEOUT_S if timeout is None else timeout,
            samples=_samples(samples),
            **options,
        )
    raise TypeError(
        f"judge must be a Judge object (judge(prompt, samples=, params=)), not "
        f"{type(judge).__name__}"
    )


def _retrying_only(
    fn: Callable[[str], Any], retry_on: tuple[type[Exception], ...]
) -> Callable[[str], Any]:
    """``fn`` whose exceptions other than ``retry_on`` end the judgement (not retried)."""
    from tooltrail.judge.failure import AttemptFailure

    def final(exc: Exception) -> AttemptFailure:
        return AttemptFailure(f"{type(exc).__name__}: {exc}", retryable=False)

    async def awaited(pending: Awaitable[Any]) -> Any:
        try:
            return await pending
        except retry_on:
            raise
        except Exception as exc:
            raise final(exc) from exc

    def complete(prompt: str) -> Any:
        try:
            answer = fn(prompt)
        except retry_on:
            raise
        except Exception as exc:
            raise final(exc) from exc
        return awaited(answer) if inspect.isawaitable(answer) else answer

    return complete


def _samples(samples: Any) -> int:
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise ValueError("samples must be at least 1")
    return samples


class LLMJudgeEvaluator:
    """A judge over the reply, registered under ``name`` (agentic-evals' shape).

    Register it (``registry.register(evaluator)``) and name it in a case's evaluators; the
    case's ``EvaluatorConfig.config`` may set ``rubric`` and ``policy`` (default rubric:
    ``rubric=``, else ``task_completed``). ``samples=N`` asks the judge for N samples (the
    majority verdict, the mean score and the agreement are the judge's outcome). ``version``
    and ``evaluator_type`` are kept for reports."""

    #: The ``EvaluatorConfig.config`` keys it reads.
    config_keys = frozenset({"rubric", "policy"})

    def __init__(
        self,
        name: str,
        judge: Any,
        *,
        version: str | None = None,
        retry: RetryPolicy | None = None,
        samples: int = 1,
        evaluator_type: str = "llm_judge",
        rubric: str | Rubric | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("evaluator name must not be empty")
        if version is not None and not version.strip():
            raise ValueError("evaluator version must not be blank")
        self.name = name
        self.version = version
        self.retry = retry
        self.samples = _samples(samples)
        self.evaluator_type = evaluator_type
        self.rubric = rubric
        self.judge = as_judge(judge, retry, samples=self.samples)

    def configured(self, config: dict[str, Any]) -> LlmJudge:
        """The check one case's config makes of this evaluator (``Registry.build``)."""
        rubric = config.get("rubric", self.rubric)
        return LlmJudge(
            rubric=rubric,
            samples=self.samples,
            judge=self.judge,
            policy=config.get("policy"),
            name=self.name,
        )

    def evaluate(self, ctx: CheckContext) -> Score:
        return self.configured({}).evaluate(ctx)


class LLMRubricEvaluator(LLMJudgeEvaluator):
    """A judge grading the reply by a rubric ``template`` (a ``Rubric``, a built-in rubric's
    name, or rubric text), asking ``complete_fn`` (agentic-evals' shape)."""

    def __init__(
        self,
        name: str,
        template: Rubric | str,
        complete_fn: Any,
        *,
        version: str | None = None,
        retry: RetryPolicy | None = None,
        samples: int = 1,
    ) -> None:
        super().__init__(
            name,
            complete_fn,
            version=version,
            retry=retry,
            samples=samples,
            evaluator_type="llm_rubric",
            rubric=template,
        )


@dataclass
class JudgeEvaluator:
    """A judge's rubric over a turn's reply (pytest-agent-eval's shape), for
    ``Expect(evaluators=[...])``. ``model`` is resolved by ``judge.set_model_resolver``
    (else the run's judge is asked); ``judge=`` gives a ``Judge`` object. ``retries`` and
    ``timeout`` are for the engine that serves ``model``."""

    rubric: str
    model: str | None = None
    retries: int = 2
    timeout: float = 30.0
    judge: Any = field(default=None, repr=False)

    #: It reads the turn's input and reply (``evaluate.reads_content``).
    reads_content: ClassVar[bool] = True
    #: It asks a judge (``evaluate.asks_judge``: serve and live judge it off the ingest path).
    asks_judge: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.judge is not None:  # a completion function: the engine, with these settings
            self.judge = as_judge(self.judge, retries=self.retries, timeout=self.timeout)

    def evaluate(self, ctx: CheckContext) -> Score:
        return LlmJudge(rubric=self.rubric, model=self.model, judge=self.judge).evaluate(ctx)


@dataclass
class ToolCallArgsJudgeEvaluator:
    """A judge's rubric over the arguments of ``tool``'s calls in a turn; passes when any
    call's do (pytest-agent-eval's shape)."""

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

    def evaluate(self, ctx: CheckContext) -> Score:
        check = ToolArgsJudge(
            tool=self.tool, rubric=self.rubric, model=self.model, judge=self.judge
        )
        return check.evaluate(ctx)
