"""The pytest plugin judges a hostile agent run with every injected text fenced: a YAML agent
test whose user message, tool name, tool arguments, tool result and reply hold injections,
judged through the real SDK by the scripted judge server, which records each request (what is
asserted of them: tests/judge_fencing.py)."""

from __future__ import annotations

import json

import pytest
from judge_fencing import (
    ARGUMENTS_NOTE,
    EVERYWHERE,
    REPLY,
    RUBRIC,
    TOOL_NAME,
    TOOL_RESULT,
    USER_MESSAGE,
    assert_fenced,
    assert_structured_output,
    shown_values,
)
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401

import tooltrail.pytest.yaml_items  # noqa: F401 - imported once here, not by every inner run

pytest_plugins = ["pytester"]

INNER = ("-p", "no:hypothesispytest")

CONFTEST = f"""
import json

import pytest


@pytest.fixture
def web_agent(trail):
    tracer = trail.tracer

    def run(user):
        fetch = {{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "fetch_page",
                 "gen_ai.tool.call.arguments": json.dumps(
                     {{"url": "https://example.org/", "note": {ARGUMENTS_NOTE!r}}}),
                 "gen_ai.tool.call.result": {TOOL_RESULT!r}}}
        with tracer.start_as_current_span("execute_tool fetch_page", attributes=fetch):
            pass
        hostile = {{"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": {TOOL_NAME!r},
                   "gen_ai.tool.call.arguments": "{{}}", "gen_ai.tool.call.result": "ok"}}
        with tracer.start_as_current_span("execute_tool hostile", attributes=hostile):
            pass
        return {REPLY!r}
    return run
"""

AGENT_TESTS = f"""\
agent: web_agent
cases:
  - id: hostile
    turns:
      - user: {json.dumps(USER_MESSAGE)}
        expect:
          judge: {{rubric: {json.dumps(RUBRIC)}}}
          tool_calls_args:
            - {{tool: fetch_page, judge: {{rubric: {json.dumps(RUBRIC)}}}}}
"""


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_plugin_fences_every_injected_text_in_every_judge_request(
    pytester: pytest.Pytester, judge_server: JudgeServer, provider: str
) -> None:
    url = judge_server.anthropic_url if provider == "anthropic" else judge_server.openai_url
    pytester.makeini(
        "[pytest]\ntooltrail_global_provider = false\n"
        f"tooltrail_judge_base_url = {url}\ntooltrail_judge_no_cache = true\n"
    )
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("tests")
    pytester.mkdir("tests/agents")
    (pytester.path / "tests/agents/web.yaml").write_text(AGENT_TESTS)
    result = pytester.runpytest(*INNER, "--tooltrail-judge-model", f"{provider}:judge-model")
    result.assert_outcomes(passed=1)
    requests = judge_server.requests
    assert len(requests) == 2
    held = [assert_fenced(request, shown_values(), [RUBRIC]) for request in requests]
    assert sorted(held, key=len) == [{"user message", "tool arguments"}, EVERYWHERE]
    for request in requests:
        assert_structured_output(request)
