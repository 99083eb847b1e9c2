"""The pytest plugin's judge options: YAML agent tests' ``judge:`` blocks asked of the model the
session names (``--tooltrail-judge-model``, ini ``tooltrail_judge_*``), through the real openai
client against the scripted loopback judge server."""

from __future__ import annotations

import pytest
from judge_server import JudgeServer, judge_server_fixture, verdict  # noqa: F401

import tooltrail.pytest.yaml_items  # noqa: F401 - imported once here, not by every inner run

pytest_plugins = ["pytester"]

INNER = ("-p", "no:hypothesispytest")

CONFTEST = """
import json

import pytest


@pytest.fixture
def booking_agent(trail):
    tracer = trail.tracer

    def run(user):
        time = user.split()[-1]
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_slot",
                      "gen_ai.tool.call.arguments": json.dumps({"time": time})}
        with tracer.start_as_current_span("execute_tool book_slot", attributes=attributes):
            pass
        return f"Booked for {time}."
    return run
"""

AGENT_TESTS = """\
agent: booking_agent
cases:
  - id: good
    turns:
      - user: Book 10am
        expect:
          judge: {rubric: Confirms the time the user asked for.}
  - id: bad
    turns:
      - user: Book 3pm
        expect:
          judge: {rubric: Confirms the time the user asked for.}
"""


def project(pytester: pytest.Pytester, ini: str) -> None:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n" + ini)
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("tests")
    pytester.mkdir("tests/agents")
    (pytester.path / "tests/agents/booking.yaml").write_text(AGENT_TESTS)


def test_yaml_judge_blocks_ask_the_model_named_on_the_command_line(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    judge_server.script(verdict(True, 0.9, "confirms 10am"), verdict(False, 0.1, "no time"))
    project(
        pytester,
        f"tooltrail_judge_base_url = {judge_server.openai_url}\ntooltrail_judge_no_cache = true\n",
    )
    result = pytester.runpytest(*INNER, "--tooltrail-judge-model", "openai:judge-model")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*turn1:llm_judge: Judge failed the reply (custom): no time*"])
    assert judge_server.count == 2
    first, second = judge_server.requests
    assert first.body["model"] == "judge-model"
    assert 'part="user\'s message">\nBook 10am\n' in first.prompt
    assert 'part="reply to judge">\nBooked for 10am.\n' in first.prompt
    assert 'part="user\'s message">\nBook 3pm\n' in second.prompt


def test_the_ini_file_names_the_model_and_the_cache_makes_a_rerun_free(
    pytester: pytest.Pytester, judge_server: JudgeServer
) -> None:
    cache = pytester.path / "judge-cache.sqlite3"
    project(
        pytester,
        f"tooltrail_judge_model = openai:judge-model\n"
        f"tooltrail_judge_base_url = {judge_server.openai_url}\n"
        f"tooltrail_judge_cache = {cache}\n",
    )
    pytester.runpytest(*INNER).assert_outcomes(passed=2)
    assert judge_server.count == 2
    pytester.runpytest(*INNER).assert_outcomes(passed=2)
    assert judge_server.count == 2  # every verdict came from the cache


def test_a_bad_judge_setting_is_a_usage_error_before_any_test(pytester: pytest.Pytester) -> None:
    project(pytester, "tooltrail_judge_concurrency = many\n")
    result = pytester.runpytest(*INNER, "--tooltrail-judge-model", "openai:judge-model")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tooltrail_judge_concurrency must be a whole number, not 'many'"])
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    result = pytester.runpytest(*INNER, "--tooltrail-judge-model", "opnai:judge-model")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*tooltrail judge: judge model 'opnai:judge-model'*"])
