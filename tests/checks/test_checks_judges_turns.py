"""Judges per turn, in pytest-agent-eval's vocabulary: ``Expect(judge=...)``, a YAML turn's
``judge: {rubric, model}``, and ``tool_calls_args`` entries with ``judge:``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from judge_double import ScriptedJudge, verdict
from test_checks_judges import HEADER, block, shown, tail

from tooltrail import EvalTrace, Expect, JudgeConfig, TestCase, ToolCall, Turn, evaluate_trace
from tooltrail.judge import set_model_resolver, use_judge
from tooltrail.model import Turn as TraceTurn
from tooltrail.suite import SuiteError, TestSuite, ToolCallArgs


def booking_trace() -> EvalTrace:
    return EvalTrace(
        trace_id="t1",
        output="Booked for 10am tomorrow.",
        tool_calls=[
            ToolCall(name="find_slots", args={"date": "tomorrow"}, span_id="s1", turn=1),
            ToolCall(name="book_slot", args={"time": "10am"}, span_id="s2", turn=2),
        ],
        turns=[
            TraceTurn(1, input="Any slots tomorrow?", reply="10am or 2pm."),
            TraceTurn(2, input="10am please", reply="Booked for 10am tomorrow."),
        ],
    )


def test_expect_judge_judges_that_turns_reply_after_the_conversation_before_it() -> None:
    first = ScriptedJudge([verdict(True, reasoning="Offers both.")])
    case = TestCase(
        id="c",
        turns=[
            Turn(
                "Any slots tomorrow?", Expect(judge=JudgeConfig("Offers the slots.", judge=first))
            ),
            Turn("10am please", Expect(tool_calls_include=["book_slot"])),
        ],
    )
    result = evaluate_trace(case, booking_trace())
    assert [shown(prompt) for prompt in first.prompts] == [
        HEADER + "\n\n"
        "# Conversation before the reply\n"
        "## Turn 1\n"
        + block("user's message", "Any slots tomorrow?")
        + "### Tool call 1\n"
        + block("tool name", "find_slots")
        + block("arguments", '{"date":"tomorrow"}')
        + "Result: (not recorded)\n"
        "\n# Reply to judge (turn 1)\n"
        + block("reply to judge", "10am or 2pm.")
        + tail("Offers the slots.", "the reply to judge (turn 1)")
    ]
    judged = result.scores[0]
    assert (judged.name, judged.metric, judged.turn, judged.passed) == (
        "turn1:llm_judge",
        "llm_judge",
        1,
        True,
    )
    assert judged.explanation == "Judge passed the reply (custom): Offers both."


def test_a_tool_calls_args_entry_with_a_judge_judges_that_turns_calls_only() -> None:
    judge = ScriptedJudge([verdict(False, 0.2, "Not 9am.")])
    case = TestCase(
        id="c",
        turns=[
            Turn("Any slots tomorrow?"),
            Turn(
                "10am please",
                Expect(
                    tool_calls_args=[
                        ToolCallArgs(tool="book_slot", args={"time": "10am"}),
                        ToolCallArgs(tool="book_slot", judge={"rubric": "The time is 9am."}),
                    ],
                    judge="task_completed",  # (grounded: no result recorded, not judged)
                ),
            ),
        ],
    )
    with use_judge(judge):
        result = evaluate_trace(case, booking_trace())
    assert [(s.name, s.passed) for s in result.scores] == [
        ("turn2:tool_calls_args:book_slot", True),
        ("turn2:tool_args_judge:book_slot", False),
        ("turn2:llm_judge", False),
    ]
    assert (
        "# Tool call to judge\n"
        "Call 1 of 1 to this tool\n"
        + block("tool name", "book_slot")
        + block("user's message in that turn", "10am please")
        + block("arguments", '{"time":"10am"}')
        + tail("The time is 9am.", "the arguments of the tool call to judge")
    ) in shown(judge.prompts[0])
    reply = block("reply to judge", "Booked for 10am tomorrow.")
    assert f"# Reply to judge (turn 2)\n{reply}" in shown(judge.prompts[1])
    assert result.scores[1].explanation == (
        "Judge failed all 1 judged calls of 'book_slot' (custom); call 1 came closest: Not 9am."
    )


def test_an_entry_without_args_or_judge_still_asks_for_a_call_of_the_tool() -> None:
    assert ToolCallArgs(tool="a").args == {}
    assert ToolCallArgs(tool="a", judge="r").args is None
    assert Expect(tool_calls_args=[ToolCallArgs(tool="a", judge="r")]).is_empty() is False
    assert Expect(judge={"rubric": "r", "model": "m"}).judge == JudgeConfig("r", "m")
    with pytest.raises(SuiteError, match="a judge's rubric must be non-empty text"):
        Expect(judge={"rubric": " "})


@pytest.fixture()
def models() -> Iterator[dict[str, ScriptedJudge]]:
    judges: dict[str, ScriptedJudge] = {}
    previous = set_model_resolver(lambda model: judges.setdefault(model, ScriptedJudge()))
    yield judges
    set_model_resolver(previous)


SUITE = """\
name: bookings
cases:
  - id: booking
    turns:
      - user: Any slots tomorrow?
        expect:
          judge: {rubric: Offers the free slots., model: "test:mini"}
      - user: 10am please
        expect:
          tool_calls_args:
            - tool: book_slot
              judge:
                rubric: The time is one the user chose.
"""


def test_a_suite_files_judge_blocks_are_read_and_run(
    tmp_path: Path, models: dict[str, ScriptedJudge]
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    suite = TestSuite.load(path)
    (case,) = suite.cases
    assert case.turns[0].expect.judge == JudgeConfig(
        rubric="Offers the free slots.", model="test:mini"
    )
    entry = case.turns[1].expect.tool_calls_args[0]
    assert (entry.args, entry.judge) == (None, JudgeConfig("The time is one the user chose."))
    run_judge = ScriptedJudge()
    with use_judge(run_judge):
        result = evaluate_trace(case, booking_trace())
    assert [s.name for s in result.scores] == ["turn1:llm_judge", "turn2:tool_args_judge:book_slot"]
    assert result.passed
    assert len(models["test:mini"].requests) == 1
    assert "# Rubric\nOffers the free slots.\n\n# Answer\n" in models["test:mini"].prompts[0]
    assert len(run_judge.requests) == 1


@pytest.mark.parametrize(
    ("block", "message"),
    [
        (
            "judge: {rubric: r, modle: m}",
            "cases[0].turns[0].expect.judge.modle: unknown key 'modle' (did you mean 'model'?)",
        ),
        ("judge: {model: m}", "cases[0].turns[0].expect.judge: missing required key 'rubric'"),
        ("judge: just text", "cases[0].turns[0].expect.judge: expected a {rubric, model} mapping"),
        (
            "tool_calls_args: [{tool: a, judge: {rubric: ''}}]",
            "cases[0].turns[0].expect.tool_calls_args[0].judge.rubric: must not be empty",
        ),
    ],
)
def test_a_bad_judge_block_names_file_line_and_key(
    tmp_path: Path, block: str, message: str
) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: s\ncases:\n  - id: c\n    turns:\n      - user: hi\n"
                    f"        expect: {{{block}}}\n")  # fmt: skip
    with pytest.raises(SuiteError) as error:
        TestSuite.load(path)
    assert f"suite.yaml:6: {message}" in str(error.value)


pytest_plugins = ["pytester"]

CONFTEST = '''
import json

import pytest
from opentelemetry import trace

from tooltrail.judge import JudgeOutcome, JudgeVerdict, set_model_resolver

PROMPTS = []


class Judge:
    """Passes a prompt that mentions 10am, fails any other; keeps every prompt."""

    def judge(self, prompt, *, samples=1, params=None):
        PROMPTS.append(prompt)
        ok = "10am" in prompt.split("\\n# Rubric\\n")[0]  # the data, before the rubric
        verdict = JudgeVerdict(passed=ok, score=1.0 if ok else 0.0, reasoning="looked")
        return JudgeOutcome(verdict=verdict, model="test:judge", attempts=1)


set_model_resolver(lambda model: Judge())


@pytest.fixture
def booking_agent(trail):
    tracer = trail.tracer

    def run(user):
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_slot",
                      "gen_ai.tool.call.arguments": json.dumps({"time": user.split()[-1]})}
        with tracer.start_as_current_span("execute_tool book_slot", attributes=attributes):
            pass
        return f"Booked for {user.split()[-1]}."
    return run


def pytest_sessionfinish(session):
    with open("prompts.json", "w") as handle:
        json.dump(PROMPTS, handle)
'''

AGENT_TESTS = """\
agent: booking_agent
cases:
  - id: good
    turns:
      - user: Book 10am
        expect:
          judge: {rubric: Confirms the time., model: "test:judge"}
          tool_calls_args:
            - {tool: book_slot, judge: {rubric: A morning time., model: "test:judge"}}
  - id: bad
    turns:
      - user: Book 3pm
        expect:
          judge: {rubric: Confirms the time., model: "test:judge"}
"""


def test_pytest_yaml_items_run_the_judge_blocks(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makeconftest(CONFTEST)
    pytester.mkdir("tests")
    pytester.mkdir("tests/agents")
    (pytester.path / "tests/agents/booking.yaml").write_text(AGENT_TESTS)
    # The inner run's conftest installs a process-wide resolver: put back the one before it.
    previous = set_model_resolver(None)
    set_model_resolver(previous)
    try:
        result = pytester.runpytest("-p", "no:hypothesispytest")
    finally:
        set_model_resolver(previous)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*turn1:llm_judge: Judge failed the reply (custom): looked*"])
    prompts = "".join(shown(p) for p in json.loads((pytester.path / "prompts.json").read_text()))
    assert block("user's message", "Book 10am") in prompts
    assert "# Reply to judge (turn 1)\n" + block("reply to judge", "Booked for 10am.") in prompts
    assert block("arguments", '{"time":"10am"}') in prompts
