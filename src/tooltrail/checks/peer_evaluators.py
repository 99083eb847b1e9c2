"""agentic-evals' evaluator contract: functions of an ``EvaluationContext`` that return scores.

An agentic-evals evaluator is anything with a ``name`` and ``evaluate(context) -> list[Score]``,
where ``context`` holds the case, the sample (its ``output`` and ``trace``) and the
``EvaluatorConfig`` that named it. :class:`CallableEvaluator` adapts a function of the
context (sync or ``async def``); ``LLMJudgeEvaluator`` (``checks.judge_shapes``) adds the
judge's retries and samples. Registered on a tooltrail ``Registry`` (or the
:class:`EvaluatorRegistry` alias), each becomes a check: at every evaluation it builds the
context from what tooltrail evaluates (the case, the trace and its reply, the configured
evaluator), and finishes the scores as agentic-evals does: ``passed`` is ``value >=
threshold`` (the threshold defaults to 1, as there) and never for an unavailable judgement,
``required`` is the config's, and ``evaluator``, ``evaluator_type`` and ``evaluator_version``
say what produced them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from tooltrail.checks.peer_async import resolved
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.registry import Registry
from tooltrail.checks.score import Score
from tooltrail.model import EvalTrace
from tooltrail.suite.case import EvaluatorConfig, TestCase

if TYPE_CHECKING:
    from tooltrail.checks.protocol import Check

#: agentic-evals' default pass mark of a registered evaluator's score.
DEFAULT_THRESHOLD = 1.0


@dataclass(frozen=True, slots=True)
class EvaluatedSample:
    """The run an evaluator judges, in agentic-evals' ``EvaluationSample`` shape: the case's
    id, the agent's reply (``""`` when the trace records none) and the trace."""

    case_id: str
    output: str
    trace: EvalTrace


@dataclass(frozen=True, slots=True)
class EvaluationContext:
    """What an agentic-evals evaluator is given: the ``case``, the ``sample`` (``output``,
    ``trace``) and the ``config`` that named it (its ``threshold`` is 1 when the suite sets
    none, agentic-evals' default)."""

    case: Any
    sample: Any
    config: Any


def context_of(ctx: CheckContext, name: str, config: dict[str, Any]) -> EvaluationContext:
    """The agentic-evals context of one tooltrail evaluation, for the evaluator ``name``
    configured with ``config``: the case's own ``EvaluatorConfig`` when it has one."""
    case = ctx.case if ctx.case is not None else TestCase(id=ctx.trace.trace_id or "")
    named = [e for e in case.evaluators if e.name == name]
    found = next((e for e in named if e.config is config), None) or next(
        (e for e in named if e.config == config), None
    )
    settings = found if found is not None else EvaluatorConfig(name=name, config=dict(config))
    if settings.threshold is None:
        settings = replace(settings, threshold=DEFAULT_THRESHOLD)
    output = ctx.output
    text = "" if output is None else output if isinstance(output, str) else str(output)
    sample = EvaluatedSample(case_id=case.id, output=text, trace=ctx.trace)
    return EvaluationContext(case=case, sample=sample, config=settings)


def finished(
    scores: Iterable[Score], context: EvaluationContext, evaluator: CallableEvaluator
) -> list[Score]:
    """``scores`` as agentic-evals finishes an evaluator's (see the module)."""
    config = context.config
    threshold = config.threshold if config.threshold is not None else DEFAULT_THRESHOLD
    done = []
    for score in scores:
        if not isinstance(score, Score):
            raise TypeError(
                f"evaluator {evaluator.name!r} returned {type(score).__name__}, not a Score"
            )
        stamped = replace(
            score,
            evaluator=evaluator.name,
            evaluator_type=evaluator.evaluator_type,
            evaluator_version=evaluator.version,
        )
        if not stamped.skipped:
            unavailable = (stamped.metadata or {}).get("judge_status") == "unavailable"
            stamped.passed = (
                stamped.error is None and not unavailable and stamped.value >= threshold
            )
            stamped.required = bool(config.required)
        done.append(stamped)
    return done


class CallableEvaluator:
    """A function of the evaluation context as an evaluator (agentic-evals' shape): it returns
    a ``Score`` or a list of them, and may be ``async def``. ``version`` names the function's
    logic (for a judge: its prompt and model) and is stamped on every score."""

    #: Every config key is the function's to read (``context.config.config``).
    config_keys: frozenset[str] | None = None

    def __init__(
        self,
        name: str,
        function: Callable[[EvaluationContext], Any],
        *,
        evaluator_type: str = "custom",
        version: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError("evaluator name must not be empty")
        if version is not None and not version.strip():
            raise ValueError("evaluator version must not be blank")
        if not callable(function):
            raise TypeError(f"evaluator {name!r} needs a function of the context, not {function!r}")
        self.name = name
        self.function = function
        self.evaluator_type = evaluator_type
        self.version = version

    def evaluate(self, context: EvaluationContext | CheckContext) -> list[Score]:
        """The scores on ``context`` (agentic-evals' ``EvaluationContext``, or a tooltrail
        ``CheckContext``, as a turn's ``Expect(evaluators=[...])`` gives it)."""
        if isinstance(context, CheckContext):
            context = context_of(context, self.name, {})
        return finished(self.scores(context), context, self)

    async def aevaluate(self, context: EvaluationContext) -> list[Score]:
        """:meth:`evaluate`, awaiting an ``async def`` function on the running loop."""
        return finished(await self.ascores(context), context, self)

    def scores(self, context: EvaluationContext) -> list[Score]:
        """What the function gives on ``context``, before :func:`finished`."""
        result = resolved(self.function(context))
        return list(result) if isinstance(result, (list, tuple)) else [result]

    async def ascores(self, context: EvaluationContext) -> list[Score]:
        result: Any = self.function(context)
        if inspect.isawaitable(result):
            result = await result
        return list(result) if isinstance(result, (list, tuple)) else [result]

    def configured(self, config: dict[str, Any]) -> Check:
        """The check one case's config makes of this evaluator (``Registry.build``)."""
        return ContextCheck(evaluator=self, config=config)


class BusinessRuleEvaluator(CallableEvaluator):
    """An application's own pass/fail rule (agentic-evals' named ``CallableEvaluator``)."""

    def __init__(
        self,
        name: str,
        rule: Callable[[EvaluationContext], Any],
        *,
        version: str | None = None,
    ) -> None:
        super().__init__(name, rule, evaluator_type="business_rule", version=version)


@dataclass(frozen=True, slots=True)
class ContextCheck:
    """A registered agentic-evals evaluator as one case configured it."""

    evaluator: Any
    config: dict[str, Any]

    #: The function may read the reply and what the tools returned.
    reads_content: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> list[Score]:
        context = context_of(ctx, self.evaluator.name, self.config)
        return finished(self.evaluator.scores(context), context, self.evaluator)


class _ProtocolEvaluator(CallableEvaluator):
    """An object of agentic-evals' ``Evaluator`` protocol (``name``, ``evaluate(context)``,
    perhaps ``version``) as a :class:`CallableEvaluator`."""

    def __init__(self, evaluator: Any) -> None:
        version = getattr(evaluator, "version", None)
        super().__init__(
            evaluator.name,
            evaluator.evaluate,
            evaluator_type=str(getattr(evaluator, "evaluator_type", "custom")),
            version=version if isinstance(version, str) else None,
        )


class EvaluatorRegistry(Registry):
    """agentic-evals' ``EvaluatorRegistry``: a tooltrail ``Registry`` (empty; no built-in
    scorers) whose ``register(evaluator)`` also takes any object with a ``name`` and an
    ``evaluate(context)`` method, as agentic-evals' ``Evaluator`` protocol does."""

    def register(
        self,
        name: Any,
        fn: Any = None,
        *,
        config_keys: Iterable[str] | None = None,
        replace: bool = False,
    ) -> Any:
        if (
            fn is None
            and not isinstance(name, (str, type))
            and isinstance(getattr(name, "name", None), str)
            and not callable(getattr(name, "configured", None))
            and callable(getattr(name, "evaluate", None))
        ):
            name = _ProtocolEvaluator(name)
        return super().register(name, fn, config_keys=config_keys, replace=replace)
