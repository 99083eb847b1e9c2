"""The judge checks: a rubric, a prompt built from the trajectory, a judge's verdict, a score.

``llm_judge`` judges a reply (the trace's final reply, or one turn's in the per-turn form) given
the conversation before it; ``tool_args_judge`` the arguments of one tool's calls, passing when
any call's do (one request per call, stopping at the first that passes); ``trajectory_judge``
the whole run, with a reference trajectory when the check or the case gives one.

A check asks a :class:`~tooltrail.judge.Judge`: its own (``judge=``, Python only), else the
judge for its ``model`` from the installed resolver (``judge.set_model_resolver``), else the
run's (``judge.use_judge``). It never raises and never passes without a verdict: no judge, an
unavailable judge, a spent budget and content the trace does not record are error scores.
The prompts are ``checks.judge_prompts``'; the score texts are listed in docs/judge.md.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from tooltrail.checks.judge_prompts import args_prompt, reply_prompt, trajectory_prompt
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.reference import recorded_calls
from tooltrail.checks.rubrics import BUILTIN_RUBRICS, RubricError, resolve_rubric
from tooltrail.checks.score import Score, config_error
from tooltrail.judge.active import active_judge, judge_for_model
from tooltrail.judge.outcome import Judge, JudgeOutcome
from tooltrail.judge.override import overriding_judge
from tooltrail.model import ToolCall
from tooltrail.redact import DEFAULT_REDACTION
from tooltrail.suite.suite_error import SuiteError

if TYPE_CHECKING:
    from tooltrail.checks.entries import CheckLookup

#: The ``error`` of a score that got no verdict, by cause.
NO_JUDGE = "NoJudge"
JUDGE_UNAVAILABLE = "JudgeUnavailable"
JUDGE_BUDGET = "JudgeBudget"
JUDGE_SKIPPED = "JudgeSkipped"
CONTENT_NOT_CAPTURED = "ContentNotCaptured"

NO_JUDGE_TEXT = (
    "No judge is configured: give the check a judge (judge=...), run it inside "
    "tooltrail.judge.use_judge(...), or name a judge model."
)


@dataclass(slots=True, frozen=True)
class JudgeSettings:
    """What every judge check is configured with (its dataclass fields are config keys)."""

    rubric: Any = None
    samples: Any = None
    judge: Any = None
    model: Any = None
    policy: Any = None
    name: Any = None

    #: Judge checks read what was said and returned (``score.needs``: ``reads_content``).
    reads_content: ClassVar[bool] = True
    #: Judge checks ask the run's judge unless given one (``score.needs``: ``asks_judge``).
    asks_judge: ClassVar[bool] = True
    #: The rubric when none is configured (``None``: one must be).
    DEFAULT_RUBRIC: ClassVar[str | None] = "task_completed"

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """The first problem of a suite file's config, for ``Registry.check``."""
        if config.get("judge") is not None:
            return ("judge",), (
                "a judge object is given in Python only; in a file, name a model with `model:`"
            )
        for key in ("model", "policy", "name"):
            value = config.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                return (key,), "expected a non-empty string"
        samples = config.get("samples")
        if samples is not None and _samples(samples) is None:
            return ("samples",), f"expected a whole number, 1 or more, not {samples!r}"
        if "tool" in (f.name for f in fields(cls)):
            tool = config.get("tool")
            if not isinstance(tool, str) or not tool:
                return ("tool",), "expected the name of the tool whose arguments to judge"
        rubric = config.get("rubric", cls.DEFAULT_RUBRIC)
        if rubric is None:
            return ("rubric",), "required: rubric text or the name of a built-in rubric"
        try:
            resolve_rubric(rubric, config.get("policy") or "(the case's policy)")
        except RubricError as exc:
            return ("rubric",), str(exc)
        return None


def _samples(value: Any) -> int | None:
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def _prepared(
    settings: JudgeSettings, ctx: CheckContext, name: str, metric: str
) -> tuple[str, str, Judge, int] | Score:
    """``(label, rubric text, judge, samples)``, or the error score that stands instead."""
    samples = _samples(settings.samples)
    if samples is None:
        return config_error(
            name, metric, f"config['samples'] must be a whole number, 1 or more, not "
            f"{settings.samples!r}."
        )  # fmt: skip
    policy = settings.policy
    if policy is None and ctx.case is not None:
        policy = ctx.case.metadata.get("policy")
    rubric = settings.rubric if settings.rubric is not None else settings.DEFAULT_RUBRIC
    if rubric is None:
        return config_error(
            name, metric, "config['rubric'] is required: rubric text or the name of a built-in "
            f"rubric ({', '.join(BUILTIN_RUBRICS)})."
        )  # fmt: skip
    try:
        label, text = resolve_rubric(rubric, policy)
    except RubricError as exc:
        why = str(exc)
        if not why.startswith("config["):  # a sentence starts upper case, a config key not
            why = why[:1].upper() + why[1:]
        return config_error(name, metric, f"{why}.")
    judge = overriding_judge() or settings.judge
    if judge is None and settings.model is not None:
        try:
            judge = judge_for_model(str(settings.model))
        except ValueError as exc:
            return Score.failing(
                name, metric, f"Judge model {settings.model!r} cannot be used: {exc}.",
                error=NO_JUDGE, turn=ctx.turn,
            )  # fmt: skip
        if judge is None:
            return Score.failing(
                name, metric, f"No judge for model {settings.model!r}: no model resolver is "
                "installed (tooltrail.judge.set_model_resolver).", error=NO_JUDGE, turn=ctx.turn,
            )  # fmt: skip
    if judge is None:
        judge = active_judge()
    if judge is None:
        return Score.failing(name, metric, NO_JUDGE_TEXT, error=NO_JUDGE, turn=ctx.turn)
    if not callable(getattr(judge, "judge", None)):
        return config_error(
            name, metric, f"config['judge'] must have a judge(prompt, samples=, params=) "
            f"method, not {type(judge).__name__}."
        )  # fmt: skip
    return label, text, judge, samples


def _ask(judge: Judge, prompt: str, samples: int, metric: str, label: str) -> JudgeOutcome:
    """One request to the judge; ``params`` (part of its cache key) name the check and rubric."""
    return judge.judge(prompt, samples=samples, params={"check": metric, "rubric": label})


def _no_verdict(
    name: str, metric: str, outcome: JudgeOutcome, span_ids: tuple[str, ...], turn: int | None
) -> Score | None:
    """The error score of an outcome without a verdict, else ``None``."""
    if outcome.skipped == "budget":
        text, error = "Judge not called: the judge cost budget is spent.", JUDGE_BUDGET
    elif outcome.skipped is not None:
        text, error = f"Judge not called: {outcome.skipped}.", JUDGE_SKIPPED
    elif outcome.verdict is None:
        why = outcome.error or "no verdict"
        text = f"Judge unavailable after {outcome.attempts} attempt(s): {why}."
        error = JUDGE_UNAVAILABLE
    else:
        return None
    score = Score.failing(name, metric, text, span_ids=span_ids, error=error, turn=turn)
    score.judge = outcome.record()
    return score


def _verdict_score(
    name: str,
    metric: str,
    outcome: JudgeOutcome,
    text: str,
    span_ids: tuple[str, ...],
    turn: int | None,
    record: dict[str, Any] | None = None,
) -> Score:
    verdict = outcome.verdict
    assert verdict is not None
    return Score(
        name=name,
        metric=metric,
        value=float(verdict.score),
        passed=bool(verdict.passed),
        explanation=text,
        span_ids=span_ids,
        turn=turn,
        judge=record if record is not None else outcome.record(),
    )


def _content_not_captured(name: str, metric: str, what: str, turn: int | None) -> Score:
    return Score.failing(
        name, metric, f"Content not captured: {what}.", error=CONTENT_NOT_CAPTURED, turn=turn
    )


#: The built-in rubric that judges a reply against the tool results (``checks.rubrics``).
GROUNDED = "grounded_in_tool_results"


def _ungrounded(label: str, calls: list[ToolCall]) -> bool:
    """Whether ``label`` asks for grounding in tool results the trace does not record: the
    run made calls, and none of them records a result or an error. A judge shown only
    ``(not recorded)`` would judge what it cannot see."""
    return (
        label == GROUNDED
        and bool(calls)
        and all(call.result is None and call.error is None for call in calls)
    )


NO_RESULTS = "the trace records no tool result to ground the reply in"


def _calls(ctx: CheckContext) -> list[ToolCall]:
    """Every call of the run (the conversation a judge is shown), without failed attempts when
    the case ignores them."""
    calls = ctx.trace.tool_calls
    if ctx.case is not None and ctx.case.ignore_failed_calls:
        return [call for call in calls if call.status != "error"]
    return list(calls)


def _last_turn(ctx: CheckContext) -> int:
    numbers = [turn.number for turn in ctx.trace.turns]
    numbers += [call.turn for call in ctx.trace.tool_calls]
    return max(numbers, default=1)


def _reply(ctx: CheckContext, turn: int) -> str | None:
    """The reply of ``turn``: the context's reply for the whole-trace form (the trace's, or
    the one the caller gave); else the turn's record's, else (for the last turn) the trace's."""
    if ctx.turn is None and ctx.output is not None:
        output = ctx.output
        return output if isinstance(output, str) else str(output)
    for record in ctx.trace.turns:
        if record.number == turn and record.reply is not None:
            return record.reply
    if turn == _last_turn(ctx) and ctx.output is not None:
        output = ctx.output
        return output if isinstance(output, str) else str(output)
    return None


def _prefix(ctx: CheckContext, base: str) -> str:
    return f"turn{ctx.turn}:{base}" if ctx.turn is not None else base


@dataclass(slots=True, frozen=True)
class LlmJudge(JudgeSettings):
    """``llm_judge``: the rubric over a reply, given the conversation before it."""

    def evaluate(self, ctx: CheckContext) -> Score:
        metric = "llm_judge"
        name = _prefix(ctx, self.name or metric)
        ready = _prepared(self, ctx, name, metric)
        if isinstance(ready, Score):
            return ready
        label, rubric, judge, samples = ready
        turn = ctx.turn if ctx.turn is not None else _last_turn(ctx)
        reply = _reply(ctx, turn)
        if reply is None:
            return _content_not_captured(
                name, metric, f"the trace records no reply of turn {turn} to judge", ctx.turn
            )
        calls = _calls(ctx)
        if _ungrounded(label, calls):
            return _content_not_captured(name, metric, NO_RESULTS, ctx.turn)
        rules = ctx.redaction or DEFAULT_REDACTION
        prompt = reply_prompt(rubric, ctx.trace, calls, turn, reply, rules)
        outcome = _ask(judge, prompt, samples, metric, label)
        failed = _no_verdict(name, metric, outcome, (), ctx.turn)
        if failed is not None:
            return failed
        assert outcome.verdict is not None
        verb = "passed" if outcome.verdict.passed else "failed"
        text = f"Judge {verb} the reply ({label}): {outcome.verdict.reasoning}"
        return _verdict_score(name, metric, outcome, text, (), ctx.turn)


@dataclass(slots=True, frozen=True)
class ToolArgsJudge(JudgeSettings):
    """``tool_args_judge``: the rubric over the arguments of ``tool``'s calls; passes when any
    call's arguments satisfy it. One request per call, in order, stopping at the first pass."""

    tool: Any = None

    DEFAULT_RUBRIC: ClassVar[str | None] = None

    def evaluate(self, ctx: CheckContext) -> Score:
        metric = "tool_args_judge"
        tool = self.tool
        if not isinstance(tool, str) or not tool:
            return config_error(metric, metric, "config['tool'] must name the tool to judge.")
        name = _prefix(ctx, f"{self.name or metric}:{tool}")
        ready = _prepared(self, ctx, name, metric)
        if isinstance(ready, Score):
            return ready
        label, rubric, judge, samples = ready
        calls = ctx.view.calls_of(tool)
        if not calls:
            return Score.failing(
                name, metric, f"Tool {tool!r} was not called, so no arguments were judged.",
                turn=ctx.turn,
            )  # fmt: skip
        judged = [(number, call) for number, call in enumerate(calls, 1) if call.args is not None]
        if not judged:
            return _content_not_captured(
                name, metric, f"no call of {tool!r} records its arguments", ctx.turn
            )
        inputs = {record.number: record.input for record in ctx.trace.turns}
        rules = ctx.redaction or DEFAULT_REDACTION
        outcomes: list[tuple[int, ToolCall, JudgeOutcome]] = []
        for number, call in judged:
            prompt = args_prompt(rubric, call, number, len(calls), inputs.get(call.turn), rules)
            outcome = _ask(judge, prompt, samples, metric, label)
            outcomes.append((number, call, outcome))
            verdict = outcome.verdict
            if verdict is not None and outcome.skipped is None and verdict.passed:
                text = (
                    f"Judge passed call {number} of {len(calls)} of {tool!r} ({label}): "
                    f"{verdict.reasoning}"
                )
                span_ids: tuple[str, ...] = (call.span_id,) if call.span_id else ()
                record = _combined([o for _, _, o in outcomes], outcome)
                return _verdict_score(name, metric, outcome, text, span_ids, ctx.turn, record)
        span_ids = tuple(c.span_id for _, c, _ in outcomes if c.span_id)
        for _, _, outcome in outcomes:
            failed = _no_verdict(name, metric, outcome, span_ids, ctx.turn)
            if failed is not None:
                failed.judge = _combined([o for _, _, o in outcomes], outcome)
                return failed
        number, _, best = max(outcomes, key=lambda item: (item[2].verdict.score, -item[0]))  # type: ignore[union-attr]
        assert best.verdict is not None
        unread = len(calls) - len(judged)
        note = f" ({unread} without recorded arguments not judged)" if unread else ""
        text = (
            f"Judge failed all {len(judged)} judged calls of {tool!r}{note} ({label}); call "
            f"{number} came closest: {best.verdict.reasoning}"
        )
        record = _combined([o for _, _, o in outcomes], best)
        return _verdict_score(name, metric, best, text, span_ids, ctx.turn, record)


def _combined(outcomes: list[JudgeOutcome], shown: JudgeOutcome) -> dict[str, Any]:
    """``shown``'s record with what every request of the check cost added up (attempts,
    latency, tokens, cost) and how many requests there were."""
    record = shown.record()
    if len(outcomes) == 1:
        return record
    costs = [o.cost_usd for o in outcomes if o.cost_usd is not None]
    record.update(
        attempts=sum(o.attempts for o in outcomes),
        latency_s=round(sum(o.latency_s for o in outcomes), 6),
        input_tokens=sum(o.input_tokens for o in outcomes),
        output_tokens=sum(o.output_tokens for o in outcomes),
        cost_usd=sum(costs) if costs else None,
        cached=all(o.cached for o in outcomes),
        requests=len(outcomes),
    )
    return record


@dataclass(slots=True, frozen=True)
class TrajectoryJudge(JudgeSettings):
    """``trajectory_judge``: the rubric over the whole run (turns, calls, arguments, results,
    replies), with a reference trajectory: ``expected`` tool names, else the case's
    ``reference`` (inline, or a recorded trace), else none."""

    expected: Any = None

    def evaluate(self, ctx: CheckContext) -> Score:
        metric = "trajectory_judge"
        name = _prefix(ctx, self.name or metric)
        ready = _prepared(self, ctx, name, metric)
        if isinstance(ready, Score):
            return ready
        label, rubric, judge, samples = ready
        reference: tuple[ToolCall, ...] | None = None
        if self.expected is not None:
            names = self.expected
            if (
                isinstance(names, (str, bytes))
                or not isinstance(names, (list, tuple))
                or not all(isinstance(n, str) for n in names)
            ):
                return config_error(
                    name, metric, "config['expected'] must be a list of tool names."
                )
            reference = tuple(ToolCall(name=n) for n in names)
        elif ctx.case is not None and ctx.case.reference is not None:
            try:
                reference = recorded_calls(ctx.case.reference)
            except SuiteError as exc:
                return config_error(
                    name, metric, f"Reference {ctx.case.reference.label}: {exc.message}."
                )
        calls = _calls(ctx)
        reply = ctx.output if ctx.output is None or isinstance(ctx.output, str) else str(ctx.output)
        if (
            not calls
            and reply is None
            and not any(t.input is not None or t.reply is not None for t in ctx.trace.turns)
        ):
            return _content_not_captured(
                name, metric, "the trace records no call, input or reply to judge", ctx.turn
            )
        if _ungrounded(label, calls):
            return _content_not_captured(name, metric, NO_RESULTS, ctx.turn)
        rules = ctx.redaction or DEFAULT_REDACTION
        prompt = trajectory_prompt(rubric, ctx.trace, calls, reply, reference, rules)
        outcome = _ask(judge, prompt, samples, metric, label)
        failed = _no_verdict(name, metric, outcome, (), ctx.turn)
        if failed is not None:
            return failed
        assert outcome.verdict is not None
        verb = "passed" if outcome.verdict.passed else "failed"
        text = f"Judge {verb} the run ({label}): {outcome.verdict.reasoning}"
        return _verdict_score(name, metric, outcome, text, (), ctx.turn)


#: name -> judge check class, registered with the built-in scorers.
JUDGE_CHECKS: dict[str, type] = {
    "llm_judge": LlmJudge,
    "tool_args_judge": ToolArgsJudge,
    "trajectory_judge": TrajectoryJudge,
}

__all__ = [
    "BUILTIN_RUBRICS",
    "JUDGE_CHECKS",
    "JudgeSettings",
    "LlmJudge",
    "ToolArgsJudge",
    "TrajectoryJudge",
]
