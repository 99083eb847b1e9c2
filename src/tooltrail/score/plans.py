"""A case compiled to its checks (``CasePlan``), and the plans of a run kept for every trace it
evaluates (``CasePlans``).

Compiling is the one place a case's fields, its turns' expectations and its evaluators become
checks: the runner (``score.runner``) and the suite's needs (``score.needs``) both read plans.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tooltrail.checks.expectations import case_checks
from tooltrail.checks.protocol import Check
from tooltrail.checks.registry import Registry, default_registry, is_builtin
from tooltrail.checks.turns import expect_checks

if TYPE_CHECKING:
    from tooltrail.suite.case import TestCase


@dataclass(slots=True, frozen=True)
class CasePlan:
    """A case compiled to checks: its fields', each turn's, then its scorers', in report order."""

    case: TestCase
    checks: list[Check]
    #: Turn ``n``'s checks at index ``n - 1``.
    turns: list[list[Check]]
    scorers: list[Check]
    #: Per scorer: whether it is one of tooltrail's own (no time limit: see ``score.timed``).
    builtin_scorers: list[bool]
    #: The exception type name when the case's fields could not be compiled to checks.
    broken: str | None = None
    #: Whether a scorer of the case is not tooltrail's own: the case's checks then run
    #: through ``checks.timelimit``, that scorer under the case's time limit. Worked out once
    #: per plan, not on every trace ``evaluate_cases`` is given.
    timed: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "timed", not all(self.builtin_scorers))

    def all_checks(self) -> Iterator[Check]:
        """Every check of the plan: its fields', its turns', its scorers'."""
        yield from self.checks
        for turn in self.turns:
            yield from turn
        yield from self.scorers


def compile_case(case: TestCase, registry: Registry | None) -> CasePlan:
    """The checks of ``case``; scorers are looked up in ``registry`` (default: the
    process-wide one)."""
    broken = None
    try:
        checks = case_checks(case)
        turns = [expect_checks(turn.expect) for turn in case.turns]
    except Exception as exc:  # bad input must cost one row, not the run
        checks, turns, broken = [], [], type(exc).__name__
    scorers: list[Check] = []
    if case.evaluators:
        build = (registry if registry is not None else default_registry()).build
        scorers = [build(evaluator) for evaluator in case.evaluators]
    return CasePlan(
        case=case,
        checks=checks,
        turns=turns,
        scorers=scorers,
        builtin_scorers=[is_builtin(scorer) for scorer in scorers],
        broken=broken,
    )


class CasePlans:
    """Each case compiled to its checks once, for every trace a run evaluates it on.

    Compiling a case (``case_checks``, each turn's checks, the registry building its scorers)
    cost about a quarter of ``evaluate_cases`` when done per trace (the batch pass, one policy:
    profiled at 5% of ``tooltrail eval``'s CPU). A plan is keyed by the case *object*, not its
    id: two suites, or two cases of one suite, may share an id with different expectations.
    The plan holds its case, so the object's ``id()`` cannot be reused while it is cached.
    Cases must not be changed while the plans are in use; keep one ``CasePlans`` for one run
    (a batch task) and let it go with it. Scorers are built once per case, as
    ``evaluate_suite`` always did: a scorer object must not keep state between traces.
    Threads may share one (a task's judged traces): two that compile a case at once make
    two equal plans, and one of them is kept.
    """

    __slots__ = ("registry", "_plans")

    def __init__(self, registry: Registry | None = None) -> None:
        #: Where the cases' scorers are looked up (``None``: the process-wide registry).
        self.registry = registry
        self._plans: dict[int, CasePlan] = {}

    def of(self, case: TestCase) -> CasePlan:
        """The compiled ``case``: compiled on first use, then the same plan."""
        plan = self._plans.get(id(case))
        if plan is None or plan.case is not case:
            plan = self._plans[id(case)] = compile_case(case, self.registry)
        return plan
