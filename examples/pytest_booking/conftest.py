"""Agent fixtures for the example's tests and for the YAML cases in agents/.

Each fixture returns a factory: called once per run, it gives that run a fresh conversation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest
from booking_agent import BookingAgent, FlakyBookingAgents


@pytest.fixture
def booking_agent() -> Callable[[], BookingAgent]:
    """Correct booking conversations."""
    return BookingAgent


@pytest.fixture
def double_booking_agent() -> Callable[[], BookingAgent]:
    """Conversations with the seed's bug: moving the booking also creates a second one."""
    return functools.partial(BookingAgent, books_twice=True)


@pytest.fixture
def flaky_booking_agents() -> FlakyBookingAgents:
    """Async conversations of which every fifth double-books."""
    return FlakyBookingAgents(every=5)
