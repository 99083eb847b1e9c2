"""The handoff checks of a case's ``handoffs:`` (``suite.handoffs.Handoffs``): a handoff that
must happen, one that must not, and an order of handoffs and tool calls (docs/checks.md,
"Agents and handoffs").

They read ``EvalTrace.handoffs`` (the converter finds them: docs/convert.md, "Handoffs") and
the calls' names and agents, never their arguments, so a run recorded without its calls'
arguments still gets a verdict (``reads_calls = False``); one that records no call while a
model asked for tools gets ``ContentNotCaptured``. A handoff's ``position`` places it among
the calls: it came after ``tool_calls[:position]`` and before the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from tooltrail.checks.agents import call_by, unrecorded
from tooltrail.checks.protocol import Check, CheckContext
from tooltrail.checks.score import Score
from tooltrail.model import Handoff, ToolCall
from tooltrail.suite.handoffs import Handoffs, HandoffTo, Step


def _text() -> Any:
    """A text of a check worked out once when it is built: not compared, not shown."""
    return field(init=False, repr=False, compare=False)


def label(step: HandoffTo) -> str:
    """A handoff in a score's name: ``triage->refunds``, ``->refunds``, ``triage->``."""
    return f"{step.source or ''}->{step.target or ''}"


def shown_step(step: Step) -> str:
    """A step of an order as the texts name it: ``'issue_refund'``, ``handoff to 'refunds'``."""
    return repr(step) if isinstance(step, str) else f"handoff {step}"


def described(handoff: Handoff, calls: list[ToolCall]) -> str:
    """``from {source!r} to {target!r} ({how})``: a handoff as the texts name it; ``{how}`` is
    the call that made it (``call_by``), else ``an agent span``."""
    source = repr(handoff.source) if handoff.source is not None else "an unnamed agent"
    target = repr(handoff.target) if handoff.target is not None else "an unnamed agent"
    made_by = handoff.call
    if made_by is not None and 0 <= made_by < len(calls):
        how = call_by(made_by + 1, calls[made_by])
    else:
        how = "an agent span"
    return f"from {source} to {target} ({how})"


def _span_ids(handoffs: list[Handoff]) -> tuple[str, ...]:
    return tuple(h.span_id for h in handoffs if h.span_id)


@dataclass(slots=True, frozen=True)
class HandoffRequired:
    """``handoff_required:{source}->{target}``: some handoff of the run matches ``step``."""

    step: HandoffTo
    reads_calls: ClassVar[bool] = False
    score_name: str = _text()

    def __post_init__(self) -> None:
        object.__setattr__(self, "score_name", f"handoff_required:{label(self.step)}")

    def evaluate(self, ctx: CheckContext) -> Score:
        name, metric, step = self.score_name, "handoff_required", self.step
        missing = unrecorded(ctx, metric)
        if missing is not None:
            missing.name = name
            return missing
        handoffs, calls = ctx.trace.handoffs, ctx.view.calls
        for handoff in handoffs:
            if step.matches(handoff.source, handoff.target):
                return Score.passing(
                    name,
                    metric,
                    f"A handoff {step} happened: {described(handoff, calls)}.",
                    span_ids=_span_ids([handoff]),
                )
        if not handoffs:
            return Score.failing(
                name, metric, f"No handoff {step} happened; the run has no handoffs."
            )
        listed = "; ".join(described(handoff, calls) for handoff in handoffs)
        return Score.failing(
            name,
            metric,
            f"No handoff {step} happened; the run's handoffs: {listed}.",
            span_ids=_span_ids(handoffs),
        )


@dataclass(slots=True, frozen=True)
class HandoffForbidden:
    """``handoff_forbidden:{source}->{target}``: no handoff of the run matches ``step``."""

    step: HandoffTo
    reads_calls: ClassVar[bool] = False
    score_name: str = _text()

    def __post_init__(self) -> None:
        object.__setattr__(self, "score_name", f"handoff_forbidden:{label(self.step)}")

    def evaluate(self, ctx: CheckContext) -> Score:
        name, metric, step = self.score_name, "handoff_forbidden", self.step
        missing = unrecorded(ctx, metric)
        if missing is not None:
            missing.name = name
            return missing
        found = [h for h in ctx.trace.handoffs if step.matches(h.source, h.target)]
        if not found:
            return Score.passing(name, metric, f"No handoff {step} happened.")
        listed = "; ".join(described(handoff, ctx.view.calls) for handoff in found)
        return Score.failing(
            name,
            metric,
            f"A forbidden handoff {step} happened: {listed}.",
            span_ids=_span_ids(found),
        )


#: Where an event stands in the run: a call ``j`` at ``(j, 1, j)``, a handoff ``k`` placed
#: after ``position`` calls at ``(position, 0, k)``: before the call at ``position``, after
#: the one before it (the call that made it).
_Place = tuple[int, int, int]


@dataclass(slots=True, frozen=True)
class HandoffOrder:
    """``handoff_order``: each step's first occurrence (a tool's first call, a handoff's first
    match) came after the previous step's first occurrence; other events in between are
    fine (``required_tool_order``'s first-occurrence rule, over calls and handoffs)."""

    order: tuple[Step, ...]
    reads_calls: ClassVar[bool] = False
    shown: str = _text()

    def __post_init__(self) -> None:
        shown = "[" + ", ".join(shown_step(step) for step in self.order) + "]"
        object.__setattr__(self, "shown", shown)

    def evaluate(self, ctx: CheckContext) -> Score:
        metric = "handoff_order"
        missing_score = unrecorded(ctx, metric)
        if missing_score is not None:
            return missing_score
        calls, handoffs = ctx.view.calls, ctx.trace.handoffs
        firsts: list[tuple[_Place, str, tuple[str, ...]] | None] = [
            _first(step, calls, handoffs) for step in self.order
        ]
        missing = [
            shown_step(step) for step, at in zip(self.order, firsts, strict=True) if at is None
        ]
        if missing:
            return Score.failing(
                metric,
                metric,
                f"Required order {self.shown} not met: [{', '.join(missing)}] never happened.",
            )
        found = [at for at in firsts if at is not None]
        for n in range(1, len(found)):
            earlier, later = found[n - 1], found[n]
            if later[0] <= earlier[0]:
                return Score.failing(
                    metric,
                    metric,
                    f"Required order {self.shown} not met: {later[1]} came before {earlier[1]}.",
                    span_ids=later[2],
                )
        return Score.passing(
            metric,
            metric,
            f"Handoffs and calls happened in the required order {self.shown}.",
            span_ids=tuple(span for at in found for span in at[2]),
        )


def _first(
    step: Step, calls: list[ToolCall], handoffs: list[Handoff]
) -> tuple[_Place, str, tuple[str, ...]] | None:
    """The first occurrence of ``step``: its place, how the texts name it, its span."""
    if isinstance(step, str):
        for j, call in enumerate(calls):
            if call.name == step:
                return (j, 1, j), call_by(j + 1, call), (call.span_id,) if call.span_id else ()
        return None
    for k, handoff in enumerate(handoffs):
        if step.matches(handoff.source, handoff.target):
            text = f"the handoff {described(handoff, calls)}"
            return (handoff.position, 0, k), text, (handoff.span_id,) if handoff.span_id else ()
    return None


def handoff_checks(case: Any, handoffs: Handoffs) -> list[Check]:
    """The checks of a case's ``handoffs:``: each required handoff, each forbidden one, then
    the order."""
    checks: list[Check] = [HandoffRequired(step) for step in handoffs.required]
    checks += [HandoffForbidden(step) for step in handoffs.forbidden]
    if handoffs.order:
        checks.append(HandoffOrder(handoffs.order))
    return checks
