"""The pytest plugin's repeated trials: a confidence makes a flaky test inconclusive, shown as
such and with the session's exit code 75 when nothing else failed (docs/pytest.md).

The sample agent is seeded: ``random.Random(1)``, a run passing when it draws below 0.7, so
ten runs are P F F P P P P F P P, 7 of 10, whose 95% Wilson interval [0.3968, 0.8922] (by hand
in tests/evaluate/test_trials.py) straddles the threshold 0.8.
"""

from __future__ import annotations

import pytest

import tooltrail.pytest.trail  # noqa: F401 - imported once here, not again by every inner run

pytest_plugins = ["pytester"]

INNER = ("-p", "no:hypothesispytest")

SUPPORT = '''
import json
import random

from tooltrail import Expect, Turn

TURNS = [Turn("Refund ORD-7731", Expect(tool_calls_include=["verify_identity"]))]

def tool(tracer, name):
    attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                  "gen_ai.tool.call.arguments": json.dumps({})}
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        pass

def flaky(tracer, seed=1, rate=0.7):
    """A factory of conversations that verify the customer when the seeded draw says so."""
    draw = random.Random(seed)
    def make():
        verifies = draw.random() < rate
        def agent(user):
            tool(tracer, "lookup_order")
            if verifies:
                tool(tracer, "verify_identity")
            tool(tracer, "issue_refund")
        return agent
    return make
'''

FLAKY_TEST = """
import pytest
from support import TURNS, flaky

@pytest.mark.tooltrail(runs=10, threshold=0.8, confidence=0.95)
def test_refund(trail):
    trail.run_turns(flaky(trail.tracer), TURNS, factory=True)
"""


@pytest.fixture
def sample(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\ntooltrail_global_provider = false\n")
    pytester.makepyfile(support=SUPPORT)
    return pytester


def test_a_straddling_interval_is_inconclusive_and_exits_75(sample: pytest.Pytester) -> None:
    sample.makepyfile(test_flaky=FLAKY_TEST)
    result = sample.runpytest_subprocess(*INNER, "-v")
    assert result.ret == 75
    result.stdout.fnmatch_lines(
        [
            "*test_flaky.py::test_refund INCONCLUSIVE*",
            "*tooltrail: 1 test was inconclusive*(exit 75: rerun)",
            "INCONCLUSIVE test_flaky.py::test_refund - *TrialsInconclusive*",
            "*1 failed*",
        ]
    )
    message = "\n".join(
        line.removeprefix("E").strip() for line in result.stdout.lines if line.startswith("E ")
    )
    assert message.startswith(
        "tooltrail.pytest.TrialsInconclusive: 7/10 runs passed; threshold 0.8 needs 8/10\n"
        "95% Wilson interval [39.7%, 89.2%] straddles the threshold 0.8: inconclusive\n"
        "flip rate 0.44 (4 changes in 10 runs)\n"
        "k           1      2      3      4      5      6      7      8     10\n"
        "pass@k  0.700  0.933  0.992  1.000  1.000  1.000  1.000  1.000  1.000\n"
        "pass^k  0.700  0.467  0.292  0.167  0.083  0.033  0.008  0.000  0.000\n"
        "runs 2, 3, 8 failed:\n"
    )
    assert message.endswith("passed runs: 1, 4, 5, 6, 7, 9, 10")


def test_another_failure_keeps_pytests_exit_code(sample: pytest.Pytester) -> None:
    sample.makepyfile(
        test_flaky=FLAKY_TEST + "\ndef test_broken():\n    assert False\n",
    )
    result = sample.runpytest(*INNER)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*tooltrail: 1 test was inconclusive*"])


def test_without_a_confidence_the_threshold_alone_decides(sample: pytest.Pytester) -> None:
    sample.makepyfile(test_flaky=FLAKY_TEST.replace(", confidence=0.95", ""))
    result = sample.runpytest(*INNER)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # 7/10 < 0.8
    result.stdout.fnmatch_lines(["E   *TrajectoryAssertionError: 7/10 runs passed; threshold*"])
    assert "Wilson" not in result.stdout.str()  # the message as it always was


def test_the_ini_option_sets_the_sessions_confidence(sample: pytest.Pytester) -> None:
    sample.makeini("[pytest]\ntooltrail_global_provider = false\ntooltrail_confidence = 0.95\n")
    sample.makepyfile(test_flaky=FLAKY_TEST.replace(", confidence=0.95", ""))
    assert sample.runpytest(*INNER).ret == 75


def test_the_command_line_option_sets_it_too(sample: pytest.Pytester) -> None:
    sample.makepyfile(test_flaky=FLAKY_TEST.replace(", confidence=0.95", ""))
    assert sample.runpytest(*INNER, "--tooltrail-confidence", "0.95").ret == 75


def test_a_decided_test_is_not_inconclusive(sample: pytest.Pytester) -> None:
    # Ten of ten at a threshold of 0.7: the interval [0.7225, 1] clears it.
    sample.makepyfile(
        test_sure=FLAKY_TEST.replace("threshold=0.8", "threshold=0.7").replace(
            "flaky(trail.tracer)", "flaky(trail.tracer, rate=1.0)"
        )
    )
    result = sample.runpytest(*INNER)
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)


def test_a_bad_confidence_is_a_usage_error(sample: pytest.Pytester) -> None:
    sample.makepyfile(test_flaky=FLAKY_TEST)
    result = sample.runpytest(*INNER, "--tooltrail-confidence", "95")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*tooltrail_confidence (--tooltrail-confidence): confidence must lie strictly*"]
    )


def test_a_yaml_agent_test_takes_a_confidence(sample: pytest.Pytester) -> None:
    sample.makeconftest(
        "import pytest\nfrom support import flaky\n\n"
        "@pytest.fixture\ndef refund_agent(trail):\n    return flaky(trail.tracer)\n"
    )
    sample.mkdir("tests")
    sample.mkdir("tests/agents")
    (sample.path / "tests" / "agents" / "refund.yaml").write_text(
        "agent: refund_agent\nfactory: true\nruns: 10\nthreshold: 0.8\nconfidence: 0.95\n"
        "cases:\n  - id: refund_verifies\n    turns:\n      - user: Refund ORD-7731\n"
        "        expect: {tool_calls_include: [verify_identity]}\n"
    )
    result = sample.runpytest(*INNER, "-v")
    assert result.ret == 75
    result.stdout.fnmatch_lines(["*refund_verifies INCONCLUSIVE*"])


def test_the_session_report_carries_the_figures(sample: pytest.Pytester) -> None:
    import json

    sample.makepyfile(test_flaky=FLAKY_TEST)
    assert sample.runpytest(*INNER, "--tooltrail-report", "report.json").ret == 75
    (verdict,) = json.loads((sample.path / "report.json").read_text())["summary"]["runs"]
    assert (verdict["passed_runs"], verdict["runs"]) == (7, 10)
    assert (verdict["trials"]["flips"], verdict["trials"]["verdict"]) == (4, "inconclusive")


def test_the_mark_survives_the_serialization_pytest_xdist_applies(
    sample: pytest.Pytester,
) -> None:
    from _pytest.reports import TestReport

    from tooltrail.pytest.trials import TrialVerdicts

    sample.makepyfile(test_flaky=FLAKY_TEST)
    recorder = sample.inline_run(*INNER)
    controller = TrialVerdicts()
    for report in recorder.getreports("pytest_runtest_logreport"):
        controller.pytest_runtest_logreport(TestReport._from_json(report._to_json()))
    assert (controller.inconclusive, controller.other_failures) == (1, 0)
