"""``trail.run_turns`` and ``@pytest.mark.tooltrail``: runs, threshold, concurrency, messages."""

from __future__ import annotations

import pytest

import tooltrail.pytest.trail  # noqa: F401 - imported once here, not again by every inner run

pytest_plugins = ["pytester"]

INNER = ("-p", "no:hypothesispytest")

# A scripted booking agent for the sample tests; `bad(n)` says which conversations book twice.
SUPPORT = '''
import asyncio
import itertools
import json

from tooltrail import Expect, ToolCallArgs, Turn

AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booking_agent"}

def tool(tracer, name, **args):
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps(args),
    }
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        pass

def answer(tracer, user, books_twice):
    time = user.split()[-1]
    if user.startswith("Book"):
        tool(tracer, "create_booking", time=time)
        return f"Booked for {time}."
    tool(tracer, "update_booking", time=time)
    if books_twice:
        tool(tracer, "create_booking", time=time)
    return f"Moved to {time}."

def agents(tracer, bad=()):
    """A factory of sync conversations; conversation n books twice when n is in `bad`."""
    numbers = itertools.count(1)
    def make():
        books_twice = next(numbers) in bad
        def agent(user):
            with tracer.start_as_current_span("invoke_agent booking_agent", attributes=AGENT):
                return answer(tracer, user, books_twice)
        return agent
    return make

class Gauge:
    """How many async turns are in flight at once."""
    def __init__(self):
        self.now = self.peak = 0

def async_agents(tracer, gauge, bad=()):
    numbers = itertools.count(1)
    def make():
        books_twice = next(numbers) in bad
        async def agent(user):
            gauge.now += 1
            gauge.peak = max(gauge.peak, gauge.now)
            with tracer.start_as_current_span("invoke_agent booking_agent", attributes=AGENT):
                await asyncio.sleep(0.02)
                reply = answer(tracer, user, books_twice)
            gauge.now -= 1
            return reply
        return agent
    return make

TURNS = [
    Turn(user="Book 10am", expect=Expect(
        tool_calls_include=["create_booking"],
        tool_calls_args=[ToolCallArgs("create_booking", {"time": "10am"})])),
    Turn(user="Move 11am", expect=Expect(
        tool_calls_include=["update_booking"], tool_calls_exclude=["create_booking"])),
]
'''

DOUBLE_BOOKED_BLOCK = [
    "    turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called",
    "    calls made:",
    "      turn 1: create_booking {'time': '10am'}",
    "      turn 2: update_booking {'time': '11am'}, create_booking {'time': '11am'}",
]


@pytest.fixture
def sample(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makepyfile(support=SUPPORT)
    return pytester


def run_sample(pytester: pytest.Pytester, body: str) -> pytest.HookRecorder:
    pytester.makepyfile(test_sample="import pytest\nfrom support import *\n\n" + body)
    return pytester.inline_run(*INNER)


def failure_of(pytester: pytest.Pytester, body: str) -> str:
    failures = run_sample(pytester, body).getfailures()
    assert len(failures) == 1, [r.nodeid for r in failures]
    message = failures[0].longrepr.reprcrash.message
    return message.removeprefix("tooltrail.pytest.TrajectoryAssertionError: ")


def test_marker_runs_pass_when_the_share_of_passed_runs_equals_the_threshold(
    sample: pytest.Pytester,
) -> None:
    recorder = run_sample(
        sample,
        """
@pytest.mark.tooltrail(runs=5, threshold=0.8)
def test_flaky(trail):
    result = trail.run_turns(agents(trail.tracer, bad={3}), TURNS, factory=True)
    assert (result.passed_runs, len(result.runs)) == (4, 5)
""",
    )
    recorder.assertoutcome(passed=1)


def test_below_the_threshold_each_failing_run_is_listed_and_passing_runs_summarised(
    sample: pytest.Pytester,
) -> None:
    message = failure_of(
        sample,
        """
@pytest.mark.tooltrail(runs=5, threshold=0.8)
def test_flaky(trail):
    trail.run_turns(agents(trail.tracer, bad={2, 4}), TURNS, factory=True)
""",
    )
    assert message.splitlines() == [
        "3/5 runs passed; threshold 0.8 needs 4/5",
        "runs 2, 4 failed:",
        *DOUBLE_BOOKED_BLOCK,
        "passed runs: 1, 3, 5",
    ]


def test_without_a_threshold_every_run_must_pass(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
def test_runs(trail):
    trail.run_turns(agents(trail.tracer, bad={2}), TURNS, factory=True, runs=2)
""",
    )
    assert message.splitlines() == [
        "1/2 runs passed; every run must pass",
        "run 2 failed:",
        *DOUBLE_BOOKED_BLOCK,
        "passed runs: 1",
    ]


def test_every_failing_turn_of_a_run_is_reported_with_its_turn(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
def test_wrong_times(trail):
    turns = [Turn(user="Book 9am", expect=TURNS[0].expect),
             Turn(user="Book 11am", expect=TURNS[1].expect)]
    trail.run_turns(agents(trail.tracer), turns, factory=True)
""",
    )
    assert message.splitlines() == [
        "0/1 runs passed; every run must pass",
        "run 1 failed:",
        "    turn1:tool_calls_args:create_booking: No call of 'create_booking' matched "
        "{'time': '10am'} (subset); its calls had [{'time': '9am'}]",
        "    turn2:tool_calls_include:update_booking: "
        "Expected tool 'update_booking' was not called",
        "    turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called",
        "    calls made:",
        "      turn 1: create_booking {'time': '9am'}",
        "      turn 2: create_booking {'time': '11am'}",
        "passed runs: none",
    ]


def test_an_agent_that_raises_fails_its_run_at_that_turn_and_the_other_runs_go_on(
    sample: pytest.Pytester,
) -> None:
    message = failure_of(
        sample,
        """
import itertools

def test_crash(trail):
    numbers = itertools.count(1)
    def make():
        n = next(numbers)
        good = agents(trail.tracer)()
        def agent(user):
            if n == 1 and user.startswith("Move"):
                raise ValueError("no table free")
            return good(user)
        return agent
    trail.run_turns(make, TURNS, factory=True, runs=2)
""",
    )
    assert message.splitlines() == [
        "1/2 runs passed; every run must pass",
        "run 1 failed:",
        "    turn2:agent_error: The agent raised ValueError: no table free",
        "    calls made:",
        "      turn 1: create_booking {'time': '10am'}",
        "      turn 2: none",
        "passed runs: 2",
    ]


def test_async_runs_go_concurrently_and_each_keeps_its_own_calls(
    sample: pytest.Pytester,
) -> None:
    run_sample(
        sample,
        """
@pytest.mark.tooltrail(runs=5, threshold=0.8)
def test_concurrent(trail):
    gauge = Gauge()
    result = trail.run_turns(async_agents(trail.tracer, gauge, bad={3}), TURNS, factory=True)
    assert gauge.peak == 5
    assert [run.passed for run in result.runs] == [True, True, False, True, True]
    assert [len(run.trace.tool_calls) for run in result.runs] == [2, 2, 3, 2, 2]
""",
    ).assertoutcome(passed=1)


def test_concurrency_caps_the_runs_in_flight(sample: pytest.Pytester) -> None:
    run_sample(
        sample,
        """
@pytest.mark.tooltrail(runs=4, concurrency=2)
def test_capped(trail):
    gauge = Gauge()
    trail.run_turns(async_agents(trail.tracer, gauge), TURNS, factory=True)
    assert gauge.peak == 2
""",
    ).assertoutcome(passed=1)


def test_async_tests_await_arun_turns_on_their_own_loop(sample: pytest.Pytester) -> None:
    run_sample(
        sample,
        """
def test_async(trail):
    async def main():
        with pytest.raises(RuntimeError, match="await trail.arun_turns"):
            trail.run_turns(async_agents(trail.tracer, Gauge()), TURNS, factory=True)
        return await trail.arun_turns(
            async_agents(trail.tracer, Gauge()), TURNS, factory=True, runs=3)
    assert asyncio.run(main()).passed_runs == 3
""",
    ).assertoutcome(passed=1)


def test_tool_calls_returned_by_a_hand_written_agent_are_judged(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
from tooltrail import ToolCall

def test_returned(trail):
    def agent(user):
        if user.startswith("Book"):
            return [{"name": "create_booking", "args": {"time": "10am"}}]
        return {"output": "Moved.", "tool_calls": [
            ToolCall("update_booking", {"time": "11am"}), ("create_booking", '{"time": "11am"}')]}
    trail.run_turns(agent, TURNS)
""",
    )
    assert message.splitlines() == [
        "0/1 runs passed; every run must pass",
        "run 1 failed:",
        *DOUBLE_BOOKED_BLOCK,
        "passed runs: none",
    ]


def test_a_test_case_brings_its_case_expectations_runs_and_threshold(
    sample: pytest.Pytester,
) -> None:
    message = failure_of(
        sample,
        """
from tooltrail import TestCase

def test_case(trail):
    case = TestCase(id="booking", turns=TURNS, expected_contains=["booked"],
                    runs=2, threshold=0.5)
    trail.run_turns(agents(trail.tracer), case, factory=True)
""",
    )
    assert message.splitlines() == [
        "0/2 runs passed; threshold 0.5 needs 1/2",
        "runs 1, 2 failed:",
        "    contains:booked: Output is missing required text: 'booked'.",
        "    calls made:",
        "      turn 1: create_booking {'time': '10am'}",
        "      turn 2: update_booking {'time': '11am'}",
        "passed runs: none",
    ]


def test_the_marker_rejects_unknown_options(sample: pytest.Pytester) -> None:
    recorder = run_sample(
        sample,
        """
@pytest.mark.tooltrail(run=3)
def test_typo(trail):
    pass
""",
    )
    (report,) = [r for r in recorder.getreports("pytest_runtest_logreport") if r.failed]
    assert report.when == "setup"
    assert (
        "@pytest.mark.tooltrail takes only the keywords runs, threshold, concurrency and "
        "confidence; got ['run']" in str(report.longrepr)
    )
