"""A scripted booking assistant, the agent under test in this example: no model, no network.

It reads the time out of each message and calls its tools, which emit OpenTelemetry GenAI
``execute_tool`` spans through ``tooltrail.live.tool``; each turn is an ``invoke_agent`` span.
Nothing here knows about tests: the ``trail`` fixture reads what happened from the spans.

- ``BookingAgent()`` books in turn 1 and moves the booking in later turns.
- ``BookingAgent(books_twice=True)`` has the seed's bug: when asked to move the booking it
  also creates a second one.
- ``FlakyBookingAgents(every=5)`` makes async agents of which every fifth has that bug.
"""

from __future__ import annotations

import asyncio
import itertools
import re

from opentelemetry import trace

from tooltrail.live import tool

_tracer = trace.get_tracer("booking_agent")
_TIME = re.compile(r"\b(\d{1,2}(?::\d{2})?\s?[ap]m)\b", re.IGNORECASE)
_AGENT_SPAN = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booking_agent"}


@tool
def create_booking(time: str) -> str:
    """Book a table."""
    return f"booking at {time}"


@tool
def update_booking(time: str) -> str:
    """Move the existing booking."""
    return f"booking moved to {time}"


def requested_time(message: str) -> str:
    """The time asked for in a message (``"10am"``), or ``"7pm"`` when none is given."""
    found = _TIME.search(message)
    return found.group(1).replace(" ", "").lower() if found else "7pm"


class BookingAgent:
    """One conversation: remembers whether it has booked already."""

    def __init__(self, *, books_twice: bool = False) -> None:
        self.books_twice = books_twice
        self.booking: str | None = None

    def __call__(self, message: str) -> str:
        with _tracer.start_as_current_span("invoke_agent booking_agent", attributes=_AGENT_SPAN):
            return self.reply(message)

    def reply(self, message: str) -> str:
        time = requested_time(message)
        if self.booking is None:
            self.booking = create_booking(time)
            return f"Your table is booked for {time}."
        self.booking = update_booking(time)
        if self.books_twice:
            create_booking(time)
        return f"Your booking is moved to {time}."


class AsyncBookingAgent(BookingAgent):
    """The same agent as a coroutine per turn, thinking a little before it answers."""

    async def __call__(self, message: str) -> str:  # type: ignore[override]
        with _tracer.start_as_current_span("invoke_agent booking_agent", attributes=_AGENT_SPAN):
            await asyncio.sleep(0.01)
            return self.reply(message)


class FlakyBookingAgents:
    """A factory of conversations: every ``every``-th one has the double-booking bug."""

    def __init__(self, every: int = 5) -> None:
        self.every = every
        self._made = itertools.count(1)

    def __call__(self) -> AsyncBookingAgent:
        return AsyncBookingAgent(books_twice=next(self._made) % self.every == 0)
