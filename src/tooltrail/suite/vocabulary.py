"""The expectation vocabulary, written once: every key a case or a turn's ``expect`` may set.

Three readers share this table: the suite loader (``suite.load``: which keys a file may hold
and how each value is read), the case model (``suite.case``: whether a case or a turn expects
anything at all, and the message when it does not) and the checks (``checks.expectations``,
``checks.turns``: which checks each key compiles to, in this order). A new expectation is a
row here, a reader of its kind in ``suite.load`` when the kind is new, and a builder in the
checks; a test holds the builders to this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: How a value is written and read:
#: ``names`` a list of strings; ``tool_values`` tool -> mapping of argument values;
#: ``tool_names`` tool -> list of argument names; ``count`` a whole number (at least
#: ``minimum``); ``measure`` a number, 0 or more; ``flag`` true or false; ``tool_call_args``
#: a list of ``{tool, args, mode, judge}``; ``judge`` a ``{rubric, model}`` block; ``objects``
#: check objects (Python only); ``tool_sources`` tool -> argument path -> where its value
#: comes from (``suite.argrules.read_args_from``); ``handoffs`` a ``{required, forbidden,
#: order}`` mapping (``suite.handoffs.read_handoffs``).
Kind = Literal[
    "names", "tool_values", "tool_names", "count", "measure", "flag", "tool_call_args", "judge",
    "objects", "tool_sources", "handoffs",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Term:
    """One expectation key."""

    key: str
    kind: Kind
    #: The least whole number a ``count`` takes.
    minimum: int = 0
    #: Whether setting it is an expectation by itself (``tool_calls_ordered`` only changes
    #: how ``tool_calls_include`` is judged).
    alone: bool = True
    #: Whether suite and agent test files may write it (check objects are Python only).
    in_files: bool = True
    #: Whether it is a budget read from what the trace used (``checks.budgets``).
    budget: bool = False


#: A case's expectation fields, in the order their checks run and are reported (the contract's
#: order: contains, required_tool, forbidden_tool, tool_args, tool_arg_values, args_from,
#: tool_order, allowed_agents, the handoff checks, turn_count_threshold, then the budgets).
CASE_TERMS: tuple[Term, ...] = (
    Term("expected_contains", "names"),
    Term("required_tools", "names"),
    Term("forbidden_tools", "names"),
    Term("required_tool_arguments", "tool_names"),
    Term("expected_tool_arguments", "tool_values"),
    Term("args_from", "tool_sources"),
    Term("required_tool_order", "names"),
    Term("allowed_agents", "tool_names"),
    Term("handoffs", "handoffs"),
    Term("max_turns", "count", minimum=1),
    Term("max_latency_ms", "measure", budget=True),
    Term("max_tool_calls", "count", budget=True),
    Term("max_llm_calls", "count", budget=True),
    Term("max_tokens", "count", budget=True),
    Term("max_cost_usd", "measure", budget=True),
)

#: A turn's ``expect`` keys (pytest-agent-eval's ``Expect``), in the order their checks run.
TURN_TERMS: tuple[Term, ...] = (
    Term("tool_calls_include", "names"),
    Term("tool_calls_exclude", "names"),
    Term("tool_calls_ordered", "flag", alone=False),
    Term("tool_calls_args", "tool_call_args"),
    Term("max_latency_ms", "measure", budget=True),
    Term("judge", "judge"),
    Term("evaluators", "objects", in_files=False),
)


def is_set(value: Any) -> bool:
    """Whether an expectation value asks for anything: not ``None``, ``False`` or empty."""
    if value is None or value is False:
        return False
    if isinstance(value, (list, tuple, dict)):
        return bool(value)
    return True


def expects_anything(terms: tuple[Term, ...], owner: Any) -> bool:
    """Whether ``owner`` (a case, an ``Expect``) sets an expectation of ``terms`` that counts
    by itself."""
    return any(term.alone and is_set(getattr(owner, term.key)) for term in terms)


def file_keys(terms: tuple[Term, ...]) -> tuple[str, ...]:
    """The keys of ``terms`` a file may write, in table order."""
    return tuple(term.key for term in terms if term.in_files)


def keys_of_kind(terms: tuple[Term, ...], kind: Kind) -> tuple[str, ...]:
    """The keys of ``terms`` whose values are of ``kind``."""
    return tuple(term.key for term in terms if term.kind == kind)


#: The case fields that are budgets (``checks.budgets``).
BUDGET_FIELDS = tuple(term.key for term in CASE_TERMS if term.budget)


def missing_expectation(case_id: str) -> str:
    """What a case that checks nothing is told."""
    plain = ", ".join(term.key for term in CASE_TERMS if not term.budget)
    return (
        f"case {case_id!r} has no expectation: set at least one of {plain}, a budget "
        f"({', '.join(BUDGET_FIELDS)}), evaluators or turns[].expect"
    )
