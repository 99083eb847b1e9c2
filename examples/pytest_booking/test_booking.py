"""The booking agent under test: what it did, read from its spans by the ``trail`` fixture."""

from __future__ import annotations

import pytest
from booking_agent import BookingAgent

from tooltrail import Expect, ToolCallArgs, Turn
from tooltrail.pytest import TrajectoryAssertionError

BOOK_THEN_MOVE = [
    Turn(
        user="Book a table for two at 10am.",
        expect=Expect(
            tool_calls_include=["create_booking"],
            tool_calls_args=[ToolCallArgs("create_booking", {"time": "10am"})],
        ),
    ),
    Turn(
        user="Actually, make it 11am.",
        expect=Expect(
            tool_calls_include=["update_booking"],
            tool_calls_exclude=["create_booking"],
            tool_calls_args=[ToolCallArgs("update_booking", {"time": "11am"})],
        ),
    ),
]


def test_first_message_books_the_requested_time(trail):
    BookingAgent()("Book a table for two at 10am.")

    trail.assert_called("create_booking", args={"time": "10am"})
    trail.assert_not_called("update_booking")


def test_reschedule_moves_the_booking_without_a_second_one(booking_agent, trail):
    result = trail.run_turns(booking_agent, BOOK_THEN_MOVE, factory=True)

    assert result.passed_runs == 1
    assert [call.name for call in result.runs[0].trace.tool_calls] == [
        "create_booking",
        "update_booking",
    ]


# The seed's failing case: turn 2 books a second table, which tool_calls_exclude forbids.
SECOND_BOOKING_FAILURE = """\
0/3 runs passed; threshold 0.8 needs 3/3
runs 1, 2, 3 failed:
    turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called
    calls made:
      turn 1: create_booking {'time': '10am'}
      turn 2: update_booking {'time': '11am'}, create_booking {'time': '11am'}
passed runs: none"""


@pytest.mark.xfail(raises=TrajectoryAssertionError, strict=True, reason="turn 2 books twice")
def test_second_booking_in_turn_2_is_caught(double_booking_agent, trail):
    with pytest.raises(TrajectoryAssertionError) as failure:
        trail.run_turns(double_booking_agent, BOOK_THEN_MOVE, factory=True, runs=3, threshold=0.8)

    assert str(failure.value) == SECOND_BOOKING_FAILURE
    raise failure.value


@pytest.mark.tooltrail(runs=5, threshold=0.8)
def test_flaky_agent_passes_at_threshold(flaky_booking_agents, trail):
    result = trail.run_turns(flaky_booking_agents, BOOK_THEN_MOVE, factory=True)

    assert result.passed_runs == 4
    assert [run.passed for run in result.runs] == [True, True, True, True, False]
