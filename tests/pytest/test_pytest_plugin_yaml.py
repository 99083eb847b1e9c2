"""YAML agent test files collected as pytest items: outcomes, messages, strict keys."""

from __future__ import annotations

import pytest

import tooltrail.pytest.trail  # noqa: F401 - imported once here, not again by every inner run
import tooltrail.pytest.yaml_items  # noqa: F401

pytest_plugins = ["pytester"]

INNER = ("-p", "no:hypothesispytest")

CONFTEST = '''
import itertools
import json

import pytest
from opentelemetry import trace

AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "booking_agent"}

def tool(tracer, name, **args):
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                  "gen_ai.tool.call.arguments": json.dumps(args)}
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        pass

class Booking:
    def __init__(self, tracer, books_twice=False):
        self.tracer, self.books_twice = tracer, books_twice
    def __call__(self, user):
        with self.tracer.start_as_current_span("invoke_agent booking_agent", attributes=AGENT):
            time = user.split()[-1]
            if user.startswith("Book"):
                tool(self.tracer, "create_booking", time=time)
            else:
                tool(self.tracer, "update_booking", time=time)
                if self.books_twice:
                    tool(self.tracer, "create_booking", time=time)
        return "done"

@pytest.fixture
def booking_agent(trail):
    return Booking(trail.tracer)

@pytest.fixture
def double_booking_agent(trail):
    return Booking(trail.tracer, books_twice=True)

@pytest.fixture(scope="module")
def conversation_numbers():
    """Shared by every case of a file: module-scoped fixtures work for YAML items."""
    return itertools.count(1)

@pytest.fixture
def flaky_agent(conversation_numbers, trail):
    """A factory of conversations: every second one books twice."""
    def make():
        return Booking(trail.tracer, books_twice=next(conversation_numbers) % 2 == 0)
    return make
'''

TURNS = """
    turns:
      - user: Book 10am
        expect: {tool_calls_include: [create_booking]}
      - user: Move 11am
        expect:
          tool_calls_include: [update_booking]
          tool_calls_exclude: [create_booking]
"""


@pytest.fixture
def sample(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("tests")
    pytester.mkdir("tests/agents")
    return pytester


def write(pytester: pytest.Pytester, text: str, name: str = "tests/agents/booking.yaml") -> None:
    (pytester.path / name).write_text(text)


def collection_error(pytester: pytest.Pytester) -> str:
    recorder = pytester.inline_run(*INNER)
    (report,) = [r for r in recorder.getreports("pytest_collectreport") if r.failed]
    return str(report.longrepr)


def test_each_case_is_an_item_that_passes_or_fails(sample: pytest.Pytester) -> None:
    write(
        sample,
        "agent: booking_agent\ncases:\n  - id: reschedule\n"
        + TURNS
        + "  - id: double_booking\n    agent: double_booking_agent\n"
        + TURNS,
    )
    recorder = sample.inline_run(*INNER)
    recorder.assertoutcome(passed=1, failed=1)
    (failed,) = recorder.getfailures()
    assert failed.nodeid == "tests/agents/booking.yaml::double_booking"
    assert str(failed.longrepr) == (
        "0/1 runs passed; every run must pass\n"
        "run 1 failed:\n"
        "    turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called\n"
        "    calls made:\n"
        "      turn 1: create_booking {'time': '10am'}\n"
        "      turn 2: update_booking {'time': '11am'}, create_booking {'time': '11am'}\n"
        "passed runs: none"
    )


def test_runs_threshold_and_factory_come_from_the_file_and_the_case(
    sample: pytest.Pytester,
) -> None:
    write(
        sample,
        "agent: flaky_agent\nfactory: true\nruns: 4\nthreshold: 0.5\ncases:\n"
        "  - id: half_pass\n" + TURNS + "  - id: three_quarters\n    threshold: 0.75\n" + TURNS,
    )
    recorder = sample.inline_run(*INNER)
    recorder.assertoutcome(passed=1, failed=1)
    (failed,) = recorder.getfailures()
    assert str(failed.longrepr).splitlines()[:2] == [
        "2/4 runs passed; threshold 0.75 needs 3/4",
        "runs 2, 4 failed:",
    ]


def test_xfail_and_skip_keys_mark_the_item(sample: pytest.Pytester) -> None:
    write(
        sample,
        "cases:\n  - id: known_bug\n    agent: double_booking_agent\n"
        "    xfail: books twice\n" + TURNS + "  - id: later\n    agent: booking_agent\n"
        "    skip: not yet\n" + TURNS,
    )
    result = sample.runpytest(*INNER, "-rxs")
    result.assert_outcomes(xfailed=1, skipped=1)
    result.stdout.fnmatch_lines(
        ["XFAIL tests/agents/booking.yaml::known_bug - books twice", "SKIPPED * not yet"]
    )


def test_a_misspelled_case_key_is_an_error_with_line_and_did_you_mean(
    sample: pytest.Pytester,
) -> None:
    write(sample, "cases:\n  - id: typo\n    agnet: booking_agent\n" + TURNS)
    message = collection_error(sample)
    path = sample.path / "tests/agents/booking.yaml"
    assert message.startswith(
        f"{path}:3: cases[0].agnet: unknown key 'agnet' (did you mean 'agent'?); allowed keys: "
    )


def test_a_misspelled_expectation_key_is_an_error_with_line_and_did_you_mean(
    sample: pytest.Pytester,
) -> None:
    write(
        sample,
        "agent: booking_agent\ncases:\n  - id: typo\n    turns:\n      - user: Book 10am\n"
        "        expect: {tool_call_include: [create_booking]}\n",
    )
    message = collection_error(sample)
    path = sample.path / "tests/agents/booking.yaml"
    assert message.startswith(
        f"{path}:6: cases[0].turns[0].expect.tool_call_include: unknown key "
        "'tool_call_include' (did you mean 'tool_calls_include'?)"
    )


def test_a_misspelled_top_level_key_is_an_error(sample: pytest.Pytester) -> None:
    write(sample, "agents: booking_agent\ncases:\n  - id: typo\n" + TURNS)
    message = collection_error(sample)
    path = sample.path / "tests/agents/booking.yaml"
    assert message.startswith(
        f"{path}:1: agents: unknown key 'agents' (did you mean 'agent'?); allowed keys: "
    )


def test_a_case_without_an_agent_is_an_error(sample: pytest.Pytester) -> None:
    write(sample, "cases:\n  - id: nobody\n" + TURNS)
    message = collection_error(sample)
    path = sample.path / "tests/agents/booking.yaml"
    assert message == (
        f"{path}:2: cases[0]: missing key 'agent' (the name of the agent fixture to call), "
        "on the case or at the top of the file"
    )


def test_an_agent_fixture_that_does_not_exist_is_a_setup_error(sample: pytest.Pytester) -> None:
    write(sample, "cases:\n  - id: missing\n    agent: booking_agnet\n" + TURNS)
    recorder = sample.inline_run(*INNER)
    (report,) = [r for r in recorder.getreports("pytest_runtest_logreport") if r.failed]
    assert report.when == "setup"
    assert "fixture 'booking_agnet' not found" in str(report.longrepr)


def test_files_outside_the_configured_glob_are_not_collected(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\ntooltrail_global_provider = false\ntooltrail_files = scenarios/*.yml\n"
    )
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("scenarios")
    pytester.mkdir("tests")
    pytester.mkdir("tests/agents")
    write(pytester, "agent: booking_agent\ncases:\n  - id: here\n" + TURNS, "scenarios/a.yml")
    write(pytester, "agent: booking_agent\ncases:\n  - id: not_here\n" + TURNS)
    recorder = pytester.inline_run(*INNER)
    (passed,) = [r for r in recorder.getreports("pytest_runtest_logreport") if r.when == "call"]
    assert passed.nodeid == "scenarios/a.yml::here"
    assert passed.passed


def test_other_yaml_files_are_left_alone(sample: pytest.Pytester) -> None:
    write(sample, "not: [an, agent, test\n", "tests/config.yaml")
    sample.inline_run(*INNER).assertoutcome()


def test_a_near_miss_of_a_scorer_name_in_an_agent_test_file_names_its_line(tmp_path) -> None:
    from tooltrail.pytest.yaml_items import load_agent_tests
    from tooltrail.suite import SuiteError

    path = tmp_path / "agent_tests.yaml"
    path.write_text(
        "agent: agent\ncases:\n  - id: a\n    turns: [{user: hi}]\n"
        "    evaluators: [{name: tool_call_precison}]\n",
        encoding="utf-8",
    )
    with pytest.raises(SuiteError) as info:
        load_agent_tests(path)
    assert info.value.line == 5
    assert "did you mean 'tool_call_precision'?" in str(info.value)
