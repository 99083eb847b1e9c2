"""What a case expects of the handoffs between agents (its ``handoffs:`` key): handoffs that
must happen, handoffs that must not, and an order of handoffs and tool calls (docs/checks.md,
"Agents and handoffs").

Read the same way from a suite file (``suite.load``, which turns a ``RuleError`` into file,
line and key) and from Python (``TestCase(handoffs={...})`` or ``Handoffs(...)``). A handoff is
written as the name of the agent it goes to (``refunds``) or as ``{from: A, to: B}`` (either
may be left out); in ``order`` a plain name is a tool's, so a handoff there is a mapping.
The checks apply these (``checks.handoffs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooltrail.suite.argrules import RuleError

#: The keys of a case's ``handoffs:``, and of one handoff.
HANDOFFS_KEYS = ("required", "forbidden", "order")
STEP_KEYS = ("from", "to")


@dataclass(frozen=True, slots=True)
class HandoffTo:
    """A handoff as an expectation names it: to ``target`` (``to:``), from ``source``
    (``from:``), or both; a name left out matches any agent."""

    target: str | None = None
    source: str | None = None

    def __post_init__(self) -> None:
        for key, value in (("to", self.target), ("from", self.source)):
            if value is not None and (not isinstance(value, str) or not value):
                raise RuleError((key,), f"expected an agent's name, not {value!r}")
        if self.target is None and self.source is None:
            raise RuleError((), "a handoff names the agent it goes `to`, or comes `from`")

    def matches(self, source: str | None, target: str | None) -> bool:
        """Whether a handoff from ``source`` to ``target`` is this one."""
        return (self.target is None or self.target == target) and (
            self.source is None or self.source == source
        )

    def __str__(self) -> str:
        """``to 'refunds'``, ``from 'triage'``, ``from 'triage' to 'refunds'``: how a check's
        text names it."""
        if self.source is None:
            return f"to {self.target!r}"
        if self.target is None:
            return f"from {self.source!r}"
        return f"from {self.source!r} to {self.target!r}"


#: A step of ``Handoffs.order``: a tool's name (its first call) or a handoff (its first).
Step = str | HandoffTo


@dataclass(frozen=True, slots=True)
class Handoffs:
    """A case's ``handoffs:``: each of ``required`` happened, none of ``forbidden`` did, and
    the first occurrence of each step of ``order`` came after the previous step's first."""

    required: tuple[HandoffTo, ...] = ()
    forbidden: tuple[HandoffTo, ...] = ()
    order: tuple[Step, ...] = ()

    def __bool__(self) -> bool:
        """Whether it expects anything (``suite.vocabulary.is_set``)."""
        return bool(self.required or self.forbidden or self.order)


def read_handoffs(value: Any) -> Handoffs:
    """``value`` (a ``Handoffs``, or its mapping as a suite file writes it) as ``Handoffs``;
    ``RuleError`` naming the key path of what is wrong."""
    if isinstance(value, Handoffs):
        return value
    if not isinstance(value, Mapping):
        raise RuleError((), "expected a mapping of required, forbidden and order")
    unknown = [key for key in value if key not in HANDOFFS_KEYS]
    if unknown:
        raise RuleError((unknown[0],), f"unknown key; a handoffs mapping has {HANDOFFS_KEYS}")
    required, forbidden, order = (_items(value.get(key), key) for key in HANDOFFS_KEYS)
    return Handoffs(
        required=tuple(_handoff(item, ("required", i)) for i, item in enumerate(required)),
        forbidden=tuple(_handoff(item, ("forbidden", i)) for i, item in enumerate(forbidden)),
        order=tuple(_step(item, ("order", i)) for i, item in enumerate(order)),
    )


def _items(value: Any, key: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise RuleError((key,), "expected a list")
    return value


def _handoff(item: Any, where: tuple[Any, ...]) -> HandoffTo:
    """A handoff of ``required`` or ``forbidden``: an agent's name (the target) or a
    ``{from, to}`` mapping."""
    if isinstance(item, HandoffTo):
        return item
    if isinstance(item, str):
        if not item:
            raise RuleError(where, "expected an agent's name, not ''")
        return HandoffTo(target=item)
    return _mapping(item, where)


def _step(item: Any, where: tuple[Any, ...]) -> Step:
    """A step of ``order``: a tool's name, or a handoff as a ``{from, to}`` mapping."""
    if isinstance(item, HandoffTo):
        return item
    if isinstance(item, str):
        if not item:
            raise RuleError(where, "expected a tool's name, not ''")
        return item
    return _mapping(item, where)


def _mapping(item: Any, where: tuple[Any, ...]) -> HandoffTo:
    if not isinstance(item, Mapping):
        raise RuleError(where, f"expected a name or a {{from, to}} mapping, not {item!r}")
    unknown = [key for key in item if key not in STEP_KEYS]
    if unknown:
        raise RuleError(where + (unknown[0],), f"unknown key; a handoff has {STEP_KEYS}")
    try:
        return HandoffTo(target=item.get("to"), source=item.get("from"))
    except RuleError as exc:
        raise RuleError(where + exc.where, exc.message) from None


def agent_name_problem(value: Any) -> str | None:
    """Why ``value`` is not an agent's name for an ``agent:`` key (``None``: it is one, or
    no agent is named)."""
    if value is None or (isinstance(value, str) and value):
        return None
    return f"must be an agent's name, not {value!r}"


def allowed_agents_problem(value: Any) -> str | None:
    """Why ``value`` is not an ``allowed_agents`` mapping (tool -> list of agents' names)."""
    if not isinstance(value, Mapping):
        return f"allowed_agents must map tool names to lists of agents, not {value!r}"
    for tool, agents in value.items():
        if (
            isinstance(agents, (str, bytes))
            or not isinstance(agents, Sequence)
            or not all(isinstance(a, str) and a for a in agents)
        ):
            return f"allowed_agents[{tool!r}] must be a list of agents' names, not {agents!r}"
    return None
