"""The booking story: a two-turn conversation checked turn by turn, run three times.

Turn 1 books a table for 10am; turn 2 should move it to 11am. The agent does update the booking,
but in two of three runs it also books a second table, which turn 2 forbids. The case asks for
80% of runs to pass, so it fails, and each reason says which turn broke.
Run: ``python examples/booking_turns.py``.
"""

from __future__ import annotations

import sys

from tooltrail import (
    EvalSpan,
    EvalTrace,
    EvaluationSample,
    Expect,
    TestCase,
    TestSuite,
    ToolCallArgs,
    Turn,
    evaluate_suite,
    render_text,
)


def call(turn: int, tool: str, **args: object) -> EvalSpan:
    """A recorded tool call of the given conversation turn."""
    return EvalSpan(tool_name=tool, attributes={"tool_args": args, "turn": turn})


GOOD = [call(1, "create_booking", time="10am"), call(2, "update_booking", time="11am")]
DOUBLE_BOOKED = GOOD + [call(2, "create_booking", time="11am")]

BOOKING_CASE = TestCase(
    id="booking",
    turns=[
        Turn(
            user="Book a table for two at 10am.",
            expect=Expect(
                tool_calls_include=["create_booking"],
                tool_calls_args=[ToolCallArgs(tool="create_booking", args={"time": "10am"})],
            ),
        ),
        Turn(
            user="Actually, make it 11am.",
            expect=Expect(
                tool_calls_include=["update_booking"],
                tool_calls_exclude=["create_booking"],
                tool_calls_args=[ToolCallArgs(tool="update_booking", args={"time": "11am"})],
            ),
        ),
    ],
    runs=3,
    threshold=0.8,
)


def main() -> int:
    suite = TestSuite(name="booking-agent", version="1.0", cases=[BOOKING_CASE])
    recorded = [DOUBLE_BOOKED, GOOD, DOUBLE_BOOKED]
    samples = [
        EvaluationSample(
            case_id="booking",
            trace=EvalTrace(trace_id=f"conversation-{n}", spans=spans, metadata={"turn_count": 2}),
        )
        for n, spans in enumerate(recorded, start=1)
    ]
    report = evaluate_suite(suite, samples)
    sys.stdout.write(render_text(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
