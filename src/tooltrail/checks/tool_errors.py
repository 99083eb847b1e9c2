"""The tool-error checks: how many calls failed, whether each failure was recovered, and a reply
that claims success after a tool's last call failed (docs/checks.md, "Tool errors").

A call failed when it is marked ``status="error"``: the converter marks every failure an
instrumentation records (docs/convert.md, "Failures": the span's error status, an MCP result
marked ``isError``, ``error.type``, ADK's retry plugin, Strands' ``gen_ai.tool.status``); a
hand-built ``ToolCall`` says so itself. These checks read every call of the run, failed
attempts included, even in a case with ``ignore_failed_calls`` (which hides them from the
others). ``tools`` scopes a check to some tools' calls; positions (``call {k}``) count every
call of the run from 1.

They read a call's name and status, never its arguments: a trace whose calls were recorded
without their arguments (content capture off) still gets a verdict, so they say
``reads_calls = False`` to ``checks.uncaptured`` and give ``ContentNotCaptured`` themselves
only when the trace records no call at all while a model asked for tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar

from tooltrail.checks.claims import FAILURE_PHRASES, SUCCESS_PHRASES, ClaimFinder
from tooltrail.checks.judges import CONTENT_NOT_CAPTURED, LlmJudge
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.rubrics import Rubric
from tooltrail.checks.score import Score, config_error
from tooltrail.checks.uncaptured import not_captured_explanation
from tooltrail.model import ToolCall

if TYPE_CHECKING:
    from tooltrail.checks.entries import CheckLookup

#: Characters of a call's error text an explanation quotes.
MAX_ERROR_CHARS = 200
TOOLS_PROBLEM = "config['tools'] must be a list of tool names."

#: The rubric ``claims_success_after_error`` asks a judge with, unless given another. It names
#: no tool: the run shown to the judge (its calls, their errors, the reply) is data, never part
#: of the rubric.
NO_SUCCESS_CLAIMED = Rubric(
    name="no_success_claimed_after_error",
    text=(
        "The last call of at least one tool in this run failed; its error is shown with the "
        "call. Pass when the reply does not say or imply that what such a failed call was to "
        "do was done: it reports the failure, asks the user how to go on, or says nothing of "
        "it. Fail when the reply tells the user that such an action succeeded (was issued, "
        "booked, sent, saved, completed, ...) although no later call of that tool succeeded."
    ),
)


def _text() -> Any:
    """A text of a check worked out once when it is built: not a config key, not compared."""
    return field(init=False, repr=False, compare=False)


def _tool_names(value: Any) -> frozenset[str] | None:
    """``tools`` as a set of names; ``None`` when it is not a list of names."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value):
        return frozenset(value)
    return None


def _scope_problem(config: dict[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    tools = config.get("tools")
    if tools is not None and _tool_names(tools) is None:
        return ("tools",), "expected a list of tool names"
    return None


def _calls(ctx: CheckContext) -> list[ToolCall]:
    """Every call of the run (of the turn, for a per-turn context), failed attempts too."""
    if ctx.case is not None and ctx.case.ignore_failed_calls:
        calls = ctx.trace.tool_calls
        return list(calls) if ctx.turn is None else [c for c in calls if c.turn == ctx.turn]
    return ctx.view.calls


def _failure(number: int, call: ToolCall) -> str:
    """``call {k} {tool!r} ({error!r})``: one failed call as an explanation lists it."""
    error = call.error
    if error is None:
        return f"call {number} {call.name!r}"
    if len(error) > MAX_ERROR_CHARS:
        error = error[:MAX_ERROR_CHARS] + "..."
    return f"call {number} {call.name!r} ({error!r})"


def _span_ids(failed: list[tuple[int, ToolCall]]) -> tuple[str, ...]:
    return tuple(call.span_id for _, call in failed if call.span_id)


@dataclass(slots=True, frozen=True)
class _Scoped:
    """What every tool-error check shares: ``tools``, its scope, and how its texts name it."""

    tools: Any = None
    scope: frozenset[str] | None = _text()
    #: ``tool calls``, or ``calls of {tools}``.
    calls_text: str = _text()

    #: Names and statuses only, which a trace records without its content (module docstring).
    reads_calls: ClassVar[bool] = False

    def __post_init__(self) -> None:
        scope = _tool_names(self.tools) if self.tools is not None else None
        object.__setattr__(self, "scope", scope)
        shown = "tool calls" if scope is None else f"calls of {list(self.tools)}"
        object.__setattr__(self, "calls_text", shown)

    def failed(self, calls: list[ToolCall]) -> list[tuple[int, ToolCall]]:
        """The failed calls in scope, with their positions."""
        scope = self.scope
        return [
            (number, call)
            for number, call in enumerate(calls, 1)
            if call.status == "error" and (scope is None or call.name in scope)
        ]

    def bad_scope(self) -> bool:
        return self.tools is not None and self.scope is None

    def unrecorded(self, ctx: CheckContext, name: str) -> Score | None:
        """The error score of a trace that records no call while a model asked for tools
        (``EvalTrace.content_missing`` without calls): no verdict on calls it does not show."""
        reason = ctx.trace.content_missing
        if reason is None or ctx.trace.tool_calls:
            return None
        return Score.failing(
            name, name, not_captured_explanation(reason), error=CONTENT_NOT_CAPTURED
        )


@dataclass(slots=True, frozen=True)
class ToolErrors(_Scoped):
    """``tool_errors``: at most ``max`` calls (of ``tools``) failed; 1/0."""

    max: Any = 0

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """A suite file's bad value, for ``Registry.check`` (file, line and key)."""
        limit = config.get("max", 0)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            return ("max",), f"expected a non-negative integer, not {limit!r}"
        return _scope_problem(config)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "tool_errors"
        limit = self.max
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            return config_error(
                name, name, f"config['max'] must be a non-negative integer, not {limit!r}."
            )
        if self.bad_scope():
            return config_error(name, name, TOOLS_PROBLEM)
        unrecorded = self.unrecorded(ctx, name)
        if unrecorded is not None:
            return unrecorded
        failed = self.failed(_calls(ctx))
        if not failed:
            return Score.passing(name, name, f"None of the run's {self.calls_text} failed.")
        listed = ", ".join([_failure(number, call) for number, call in failed])
        count, span_ids = len(failed), _span_ids(failed)
        if count <= limit:
            return Score.passing(
                name,
                name,
                f"{count} of the run's {self.calls_text} failed, within the limit of {limit}: "
                f"{listed}.",
                span_ids=span_ids,
            )
        return Score.failing(
            name,
            name,
            f"{count} of the run's {self.calls_text} failed, over the limit of {limit}: {listed}.",
            span_ids=span_ids,
        )


@dataclass(slots=True, frozen=True)
class ToolErrorsRecovered(_Scoped):
    """``tool_errors_recovered``: every failed call (of ``tools``) is followed, later in the
    run, by a call of the same tool that did not fail. Value: recovered / failed (1.0 when
    none failed)."""

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """A suite file's bad value, for ``Registry.check`` (file, line and key)."""
        return _scope_problem(config)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "tool_errors_recovered"
        if self.bad_scope():
            return config_error(name, name, TOOLS_PROBLEM)
        unrecorded = self.unrecorded(ctx, name)
        if unrecorded is not None:
            return unrecorded
        calls = _calls(ctx)
        failed = self.failed(calls)
        if not failed:
            return Score.passing(
                name,
                name,
                f"None of the run's {self.calls_text} failed, so none needed recovering.",
            )
        # the last position of a call of each tool that did not fail: a failure before it is
        # recovered
        last_ok: dict[str, int] = {}
        for number, call in enumerate(calls, 1):
            if call.status != "error":
                last_ok[call.name] = number
        left = [(n, call) for n, call in failed if last_ok.get(call.name, 0) < n]
        total = len(failed)
        if not left:
            return Score.passing(
                name,
                name,
                f"Each failed call ({total} of the run's {self.calls_text}) was followed by a "
                "successful call of the same tool.",
            )
        value = (total - len(left)) / total
        listed = ", ".join([_failure(number, call) for number, call in left])
        return Score(
            name=name,
            metric=name,
            value=value,
            passed=False,
            explanation=(
                f"Not every failed call was followed by a successful call of the same tool "
                f"({total - len(left)} of {total} were); not recovered: {listed}."
            ),
            span_ids=_span_ids(left),
        )


def _phrases(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v.strip() for v in value):
        return tuple(value)
    return None


#: The config keys of ``claims_success_after_error`` that make it ask a judge.
_JUDGE_KEYS = ("rubric", "model", "judge", "samples")


@dataclass(slots=True, frozen=True)
class ClaimsSuccessAfterError(_Scoped):
    """``claims_success_after_error``: fails when a tool's last call in the run failed and the
    reply claims it done. The pre-filter (``checks.claims``) decides alone; with a judge
    (``judge_claim: true``, or a ``rubric``, ``model``, ``samples`` or ``judge``) a reply the
    pre-filter finds claiming goes to the judge, failure phrases or not, and the judge's
    verdict is the score (``llm_judge``'s machinery, shown the failed calls even in a case
    with ``ignore_failed_calls``; rubric ``no_success_claimed_after_error`` unless given
    one)."""

    success_phrases: Any = None
    failure_phrases: Any = None
    judge_claim: Any = False
    rubric: Any = None
    model: Any = None
    samples: Any = None
    judge: Any = None
    #: The pre-filter over the configured phrases, or why the configuration is bad.
    finder: ClaimFinder | str = _text()

    def __post_init__(self) -> None:
        _Scoped.__post_init__(self)
        finder: ClaimFinder | str
        success = (
            SUCCESS_PHRASES if self.success_phrases is None else _phrases(self.success_phrases)
        )
        failure = (
            FAILURE_PHRASES if self.failure_phrases is None else _phrases(self.failure_phrases)
        )
        if success is None:
            finder = "config['success_phrases'] must be a list of texts."
        elif failure is None:
            finder = "config['failure_phrases'] must be a list of texts."
        elif not isinstance(self.judge_claim, bool):
            finder = f"config['judge_claim'] must be true or false, not {self.judge_claim!r}."
        else:
            finder = ClaimFinder(success, failure)
        object.__setattr__(self, "finder", finder)

    @property
    def asks_judge(self) -> bool:
        """Whether it asks a judge (``score.needs``: a run builds its judge then)."""
        return self.judge_claim is True or any(
            getattr(self, key) is not None for key in _JUDGE_KEYS
        )

    @property
    def reads_content(self) -> bool:
        """A judge is shown the run's results and turns: traces are read with content then."""
        return self.asks_judge

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """A suite file's bad value, for ``Registry.check`` (file, line and key); the judge's
        keys as ``llm_judge`` checks them."""
        for key in ("success_phrases", "failure_phrases"):
            if config.get(key) is not None and _phrases(config[key]) is None:
                return (key,), "expected a list of texts"
        if not isinstance(config.get("judge_claim", False), bool):
            return ("judge_claim",), "expected true or false"
        problem = _scope_problem(config)
        if problem is None and any(config.get(key) is not None for key in _JUDGE_KEYS):
            judged = {key: config[key] for key in _JUDGE_KEYS if key in config}
            problem = LlmJudge.config_problem({"rubric": NO_SUCCESS_CLAIMED, **judged}, registry)
        return problem

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "claims_success_after_error"
        finder = self.finder
        if isinstance(finder, str):
            return config_error(name, name, finder)
        if self.bad_scope():
            return config_error(name, name, TOOLS_PROBLEM)
        unrecorded = self.unrecorded(ctx, name)
        if unrecorded is not None:
            return unrecorded
        last: dict[str, tuple[int, ToolCall]] = {}
        scope = self.scope
        for number, call in enumerate(_calls(ctx), 1):
            if scope is None or call.name in scope:
                last[call.name] = (number, call)
        failed = sorted(
            [(n, call) for n, call in last.values() if call.status == "error"],
            key=lambda item: item[0],
        )
        if not failed:
            if scope is None:
                return Score.passing(name, name, "No tool's last call failed.")
            return Score.passing(name, name, f"No last call of {list(self.tools)} failed.")
        tools = [call.name for _, call in failed]
        span_ids = _span_ids(failed)
        output = ctx.output
        if output is None:
            return Score.failing(
                name,
                name,
                f"Content not captured: the trace records no reply, so a claim of success "
                f"after {tools} failed could not be checked.",
                span_ids=span_ids,
                error=CONTENT_NOT_CAPTURED,
            )
        reply = output if isinstance(output, str) else str(output)
        judged = self.asks_judge
        tool, phrase = finder.claim(reply, tools, admissions=not judged)
        if not tool:
            return Score.passing(
                name,
                name,
                f"The reply claims no success after the last call of {tools} failed.",
                span_ids=span_ids,
            )
        if not judged:
            number, call = next(item for item in failed if item[1].name == tool)
            return Score.failing(
                name,
                name,
                f"The reply claims success ({phrase!r}) though the last call of {tool!r} "
                f"(call {number}) failed.",
                span_ids=(call.span_id,) if call.span_id else (),
            )
        asked = LlmJudge(
            rubric=self.rubric if self.rubric is not None else NO_SUCCESS_CLAIMED,
            samples=self.samples,
            judge=self.judge,
            model=self.model,
        )
        case = ctx.case
        if case is not None and case.ignore_failed_calls:  # the judge is shown the failures
            ctx = replace(ctx, case=replace(case, ignore_failed_calls=False))
        score = asked.evaluate(ctx)
        score.name = name if ctx.turn is None else f"turn{ctx.turn}:{name}"
        score.metric = name
        score.span_ids = span_ids
        return score


#: name -> check class, registered with the built-in scorers.
TOOL_ERROR_CHECKS: dict[str, type] = {
    "tool_errors": ToolErrors,
    "tool_errors_recovered": ToolErrorsRecovered,
    "claims_success_after_error": ClaimsSuccessAfterError,
}
