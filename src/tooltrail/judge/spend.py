"""A spend account the judge asks before it calls a model: budgets that outlive a run.

A ``JudgeRunner``'s own ``budget_usd`` is per run, which in a receiver that never ends means
"until the money is gone". A spend window (``pipeline.spend_window``: so many dollars per hour
or day, shared by every worker process) is a ``SpendAccount``, installed for the judge checks
of a context with :func:`use_spend_account`, as the run's judge is (``judge.use_judge``):

- ``reserve()`` before a judgement that would call a model (a cached verdict asks nothing):
  a ticket to go ahead, or ``None`` when the account's budget is spent; then the judgement
  ends as a skip with ``skipped="budget"`` (a ``JudgeBudget`` error score), and
  ``refusal()`` says why;
- ``settle(ticket, cost_usd)`` after it, with what it cost (also when it failed).

Test traffic is judged outside any account (``use_spend_account(None)``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Protocol


class SpendAccount(Protocol):
    """Dollars a judge may spend, asked before and told after each judgement."""

    def reserve(self) -> Any | None:
        """A ticket to call the model, or ``None`` when the budget is spent."""
        ...

    def settle(self, ticket: Any, cost_usd: float) -> None:
        """What the judgement of ``ticket`` cost."""
        ...

    def refusal(self) -> str:
        """Why ``reserve`` said no, for the judgement's error text."""
        ...


_ACCOUNT: ContextVar[SpendAccount | None] = ContextVar("tooltrail_spend_account", default=None)


def spend_account() -> SpendAccount | None:
    """The account the judge checks of this context spend from (``None``: no account)."""
    return _ACCOUNT.get()


@contextmanager
def use_spend_account(account: SpendAccount | None) -> Iterator[None]:
    """Judge checks in this block spend from ``account`` (``None``: from none)."""
    token = _ACCOUNT.set(account)
    try:
        yield
    finally:
        _ACCOUNT.reset(token)
