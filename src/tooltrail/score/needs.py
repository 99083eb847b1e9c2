"""What a suite's checks need of its traces and of the run, asked once before anything is read:
what traces used (``usage``), what was said and returned (``content``), a judge (``judge``);
and how long one trace's evaluation may take because of time limits.

Each check's needs are read by ``checks.needs.needs_of`` (the one reader of the attributes a
check declares them with); here they are added up over every check of every case: its fields',
its turns' and its scorers' (``score.plans``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tooltrail.checks.needs import needs_of
from tooltrail.checks.timelimit import DEFAULT_CHECK_TIMEOUT_S
from tooltrail.score.plans import compile_case

if TYPE_CHECKING:
    from tooltrail.checks.registry import Registry
    from tooltrail.suite.case import TestCase


@dataclass(slots=True, frozen=True)
class SuiteNeeds:
    """What the checks of a suite need. ``usage``: traces converted with ``usage=True``
    (``tooltrail.convert``; ``checks.budgets``). ``content``: with ``content=True`` (judges of
    replies or tool results). ``judge``: the run builds its judge (``score.run_judge``)."""

    usage: bool = False
    content: bool = False
    judge: bool = False


def suite_needs(cases: Iterable[TestCase], registry: Registry | None = None) -> SuiteNeeds:
    """What the checks of ``cases`` need (scorers looked up in ``registry``, default the
    process-wide one). Raises ``checks.needs.CheckNeedsError`` for a check that declares its
    needs wrongly (a need that is not a ``bool``, a misspelt one)."""
    usage = content = judge = False
    for case in cases:
        for check in compile_case(case, registry).all_checks():
            needs = needs_of(check)
            usage, content, judge = (
                usage or needs.usage,
                content or needs.content,
                judge or needs.judge,
            )
        if usage and content and judge:
            break
    return SuiteNeeds(usage=usage, content=content, judge=judge)


def reads_usage(cases: Iterable[TestCase], registry: Registry | None = None) -> bool:
    """Whether a check of ``cases`` reads what a trace used (``checks.budgets``; a plug-in
    check may say so too). Traces must then be converted with ``usage=True``."""
    return suite_needs(cases, registry).usage


def reads_content(cases: Iterable[TestCase], registry: Registry | None = None) -> bool:
    """Whether a check of ``cases`` reads what was said and returned (a judge of replies or
    tool results). Traces must then be converted with ``content=True``."""
    return suite_needs(cases, registry).content


def asks_judge(cases: Iterable[TestCase], registry: Registry | None = None) -> bool:
    """Whether a check of ``cases`` asks a judge model (``checks.judges``): only then does a
    run build its judge (``score.run_judge``)."""
    return suite_needs(cases, registry).judge


def evaluation_time_limit(cases: Iterable[TestCase], registry: Registry | None = None) -> float:
    """The longest one trace's evaluation can take because of time limits: every check under
    one (not tooltrail's own) of every case running up to its case's ``check_timeout``.
    Whoever watches an evaluation for being stuck (``serve``'s trace buffer) waits longer."""
    total = 0.0
    for case in cases:
        plan = compile_case(case, registry)
        timed = sum(1 for builtin in plan.builtin_scorers if not builtin)
        if timed:
            limit = case.check_timeout
            total += timed * (limit if limit is not None else DEFAULT_CHECK_TIMEOUT_S)
    return total
