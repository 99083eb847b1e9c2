"""What a registry holds, apart from the registry: a registered check (``ScorerEntry``), a
plain scorer function as a check (``FunctionCheck``), and what a check may ask of the registry
it was registered on (``CheckLookup``).

Kept below ``checks.registry`` so that a check validating its config against other registered
checks (``trajectory_match``'s comparators) names no registry module: the registry imports the
built-in checks, and they import only this, so no import (type-only ones included) closes a
circle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from tooltrail.checks.protocol import Check, CheckContext
from tooltrail.checks.score import Score
from tooltrail.model import EvalTrace

if TYPE_CHECKING:
    from tooltrail.suite.case import TestCase

ScorerResult = Score | list[Score]
ScorerFn = Callable[[EvalTrace, "TestCase", dict[str, Any]], ScorerResult]


@dataclass(slots=True, frozen=True)
class FunctionCheck:
    """A plain scorer function as a check: ``fn(trace, case, config)`` on each evaluation."""

    fn: ScorerFn
    config: dict[str, Any]

    def evaluate(self, ctx: CheckContext) -> ScorerResult:
        return self.fn(ctx.trace, ctx.case, self.config)  # type: ignore[arg-type]


@dataclass(slots=True, frozen=True)
class ScorerEntry:
    """One registered check: a check class or a plain function, and the config keys it reads
    (others are a configuration error; ``None``: any key)."""

    registered: type | ScorerFn
    config_keys: frozenset[str] | None = None

    def build(self, config: dict[str, Any]) -> Check:
        """The check this entry makes of one ``config``."""
        registered = self.registered
        if isinstance(registered, type):
            return registered(**config)  # type: ignore[no-any-return]
        configured = getattr(registered, "configured", None)
        if configured is not None:  # an evaluator object (``checks.judge_shapes``)
            return configured(config)  # type: ignore[no-any-return]
        return FunctionCheck(registered, config)


class CheckLookup(Protocol):
    """What a check may look up on the registry it was built by (``Registry`` is one): the
    registered checks by name, for a config naming one (``config_problem(config, registry)``,
    ``bind_registry(registry)``)."""

    def get(self, name: str) -> type | ScorerFn | None: ...

    def entry(self, name: str) -> ScorerEntry | None: ...

    def names(self) -> list[str]: ...
