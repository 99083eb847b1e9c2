"""The one check protocol: a check is an object with ``evaluate(ctx) -> Score | list[Score]``.

Built-in checks are small frozen dataclasses whose fields are their configuration
(``RequiredTool(tool="verify_identity")``); a suite's case fields and turn expectations compile
to lists of them, and a registered scorer is built from its ``EvaluatorConfig`` the same way.
Everything a check may look at travels in one explicit :class:`CheckContext`. What a check
needs beyond the calls (what a trace used, what was said, a judge) it declares in boolean
attributes, read in one place (``checks.needs.needs_of``) into a :class:`CheckNeeds`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tooltrail.checks.agent_scope import scope_to_agent
from tooltrail.checks.score import Score
from tooltrail.checks.view import CallView
from tooltrail.model import EvalTrace
from tooltrail.redact import Redaction

if TYPE_CHECKING:
    from tooltrail.suite.case import TestCase

CheckResult = Score | list[Score]


@dataclass(slots=True, frozen=True)
class CheckContext:
    """What one check sees of one evaluation.

    ``view`` is the call index built once per evaluation (without failed attempts when the case
    says ``ignore_failed_calls``; one turn's calls for a per-turn check). ``output`` is the
    agent's reply. ``turn`` is the 1-based turn a per-turn check judges, else ``None``.
    ``redaction`` is the run's redaction (``None``: ``redact.DEFAULT_REDACTION``): what a check
    sends out of the process (a judge's prompt) goes through it.
    """

    trace: EvalTrace
    view: CallView
    output: Any
    case: TestCase | None = None
    turn: int | None = None
    redaction: Redaction | None = None


class Check(Protocol):
    """Anything with ``evaluate(ctx)``: a built-in check, a registered class, a wrapped function.

    A check may also declare what it needs, each a ``bool`` attribute (a class attribute, a
    field or a property) named in :data:`NEEDS`, the default when it is left out being that of
    :class:`CheckNeeds`: ``reads_usage``, ``reads_content``, ``reads_calls``, ``reads_reply``,
    ``asks_judge``. They are optional, so they are not members of this protocol (a plug-in
    that declares none is a check all the same); a value that is not a ``bool``, or an
    attribute named like them that is none of them (``read_usage``), is a configuration error
    (``checks.needs``)."""

    def evaluate(self, ctx: CheckContext) -> CheckResult: ...


@dataclass(slots=True, frozen=True)
class CheckNeeds:
    """What one check needs, each field's default the one a check that does not say gets.

    ``usage``: it reads what a trace used (tokens, cost, model calls: ``checks.budgets``), so
    traces are converted with ``usage=True``. ``content``: it reads what was said and returned
    (tool results, each turn's input and reply), so traces are converted with
    ``content=True``. ``calls``: it reads the tool calls, so it gives no verdict on a trace
    recorded without their content (``checks.uncaptured``). ``reply``: it reads the reply,
    with the same rule for a trace that records none. ``judge``: it asks the run's judge
    (``checks.judges``), so a run builds one."""

    usage: bool = False
    content: bool = False
    calls: bool = True
    reply: bool = False
    judge: bool = False


#: The attribute a check declares each need with -> the field of ``CheckNeeds`` it sets.
NEEDS: dict[str, str] = {
    "reads_usage": "usage",
    "reads_content": "content",
    "reads_calls": "calls",
    "reads_reply": "reply",
    "asks_judge": "judge",
}


def case_context(
    case: TestCase,
    trace: EvalTrace,
    output: Any = None,
    view: CallView | None = None,
    redaction: Redaction | None = None,
) -> CheckContext:
    """The context of ``case`` on ``trace``: ``view`` (the trace's call index, built here when
    not given) without failed attempts when the case ignores them; ``output`` defaults to the
    trace's reply; ``redaction`` the run's. A case with ``agent`` sees that agent's calls only
    (``checks.agent_scope``)."""
    if view is None:
        view = CallView(trace.tool_calls)
    if case.ignore_failed_calls:
        view = view.without_failed()
    if case.agent is not None:
        trace, view = scope_to_agent(trace, view, case.agent)
    return CheckContext(
        trace=trace,
        view=view,
        output=trace.output if output is None else output,
        case=case,
        redaction=redaction,
    )


def run_checks(checks: list[Check], ctx: CheckContext, scores: list[Score]) -> None:
    """Append the scores of ``checks`` on ``ctx`` to ``scores``, in order."""
    append = scores.append
    for check in checks:
        result = check.evaluate(ctx)
        if type(result) is Score:
            append(result)
        else:
            scores.extend(result)  # type: ignore[arg-type]
