"""The ``trail`` fixture, run inside pytest by ``pytester``: outcomes and exact messages.

In-process runs switch the global provider hookup off (``tooltrail_global_provider = false``)
so this process's global tracer provider stays untouched; tests of the global provider run
pytest in a subprocess.
"""

from __future__ import annotations

import pytest

import tooltrail.pytest.trail  # noqa: F401 - imported once here, not again by every inner run

pytest_plugins = ["pytester"]

#: Inner runs skip the hypothesis plugin, which would import hypothesis again on every run.
INNER = ("-p", "no:hypothesispytest")
NO_GLOBAL_INI = "[pytest]\ntooltrail_global_provider = false\n"

# Imported by the sample tests: emits GenAI execute_tool spans the way instrumentations do.
SUPPORT = """
import json
import threading

def tool(tracer, name, **args):
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": json.dumps(args),
    }
    with tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes):
        pass

def refund_run(tracer, amount=49.99):
    tool(tracer, "lookup_order", order_id="ORD-7731")
    tool(tracer, "verify_identity", customer_id="C-118")
    tool(tracer, "issue_refund", order_id="ORD-7731", amount=amount)

def on_thread(fn, *args, **kwargs):
    worker = threading.Thread(target=fn, args=args, kwargs=kwargs)
    worker.start()
    worker.join()
"""

REFUND_CALLS = (
    "Calls made (3):\n"
    "  1. lookup_order {'order_id': 'ORD-7731'}\n"
    "  2. verify_identity {'customer_id': 'C-118'}\n"
    "  3. issue_refund {'order_id': 'ORD-7731', 'amount': 49.99}"
)


@pytest.fixture
def sample(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(NO_GLOBAL_INI)
    pytester.makepyfile(support=SUPPORT)
    return pytester


def failure_of(pytester: pytest.Pytester, body: str) -> str:
    """The message of the one failing sample test (without the exception's type name)."""
    pytester.makepyfile(test_sample="from support import *\n\n" + body)
    recorder = pytester.inline_run(*INNER)
    failures = recorder.getfailures()
    assert len(failures) == 1, [r.nodeid for r in failures]
    message = failures[0].longrepr.reprcrash.message
    prefix = "tooltrail.pytest.TrajectoryAssertionError: "
    assert message.startswith(prefix), message
    return message[len(prefix) :]


def passes(pytester: pytest.Pytester, body: str) -> None:
    pytester.makepyfile(test_sample="from support import *\n\n" + body)
    tests = body.count("\ndef test_")
    pytester.inline_run(*INNER).assertoutcome(passed=tests)


def test_assertions_pass_on_the_calls_the_test_made(sample: pytest.Pytester) -> None:
    passes(
        sample,
        """
def test_refund(trail):
    refund_run(trail.tracer)
    trail.assert_called("verify_identity")
    trail.assert_called("issue_refund", args={"amount": 49.99})
    trail.assert_called("lookup_order", args={"order_id": "ORD-7731"}, mode="exact")
    trail.assert_not_called("web_search")
    trail.assert_order(["lookup_order", "verify_identity", "issue_refund"])
    trail.assert_order(["lookup_order", "issue_refund"], mode="subsequence")
    assert [c.name for c in trail.calls] == ["lookup_order", "verify_identity", "issue_refund"]
""",
    )


def test_assert_called_without_a_call_says_so_and_lists_the_calls(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
def test_refund(trail):
    refund_run(trail.tracer)
    trail.assert_called("web_search")
""",
    )
    assert message == "Required tool 'web_search' was not called.\n" + REFUND_CALLS


def test_assert_called_with_no_spans_at_all_says_no_calls_were_made(
    sample: pytest.Pytester,
) -> None:
    message = failure_of(
        sample,
        """
def test_nothing(trail):
    trail.assert_called("lookup_order")
""",
    )
    assert message == "Required tool 'lookup_order' was not called.\nCalls made: none."


def test_assert_called_with_wrong_arguments_shows_every_call_of_the_tool(
    sample: pytest.Pytester,
) -> None:
    message = failure_of(
        sample,
        """
def test_wrong_amount(trail):
    refund_run(trail.tracer, amount=499.9)
    trail.assert_called("issue_refund", args={"order_id": "ORD-7731", "amount": 49.99})
""",
    )
    assert message == (
        "Tool 'issue_refund' was called with [{'order_id': 'ORD-7731', 'amount': 499.9}], "
        "not {'order_id': 'ORD-7731', 'amount': 49.99}.\n"
        + REFUND_CALLS.replace("'amount': 49.99}", "'amount': 499.9}")
    )


def test_exact_mode_rejects_a_call_with_extra_arguments(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
def test_exact(trail):
    refund_run(trail.tracer)
    trail.assert_called("issue_refund", args={"amount": 49.99}, mode="exact")
""",
    )
    assert message == (
        "No call of 'issue_refund' matched {'amount': 49.99} (exact); its calls had "
        "[{'order_id': 'ORD-7731', 'amount': 49.99}]\n" + REFUND_CALLS
    )


def test_assert_not_called_names_the_forbidden_tool(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
def test_forbidden(trail):
    refund_run(trail.tracer)
    trail.assert_not_called("issue_refund")
""",
    )
    assert message == "Forbidden tool 'issue_refund' was called.\n" + REFUND_CALLS


def test_assert_order_uses_the_first_call_rule_by_default(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
def test_order(trail):
    refund_run(trail.tracer)
    trail.assert_order(["verify_identity", "lookup_order"])
""",
    )
    assert message == (
        "Required order ['verify_identity', 'lookup_order'] not met: "
        "'lookup_order' was called before 'verify_identity'.\n" + REFUND_CALLS
    )


def test_assert_order_subsequence_lets_each_entry_consume_one_call(
    sample: pytest.Pytester,
) -> None:
    message = failure_of(
        sample,
        """
def test_order(trail):
    refund_run(trail.tracer)
    trail.assert_order(["lookup_order", "lookup_order"], mode="subsequence")
""",
    )
    assert message == (
        "Tools ['lookup_order', 'lookup_order'] were not called in order; the turn's calls were "
        "['lookup_order', 'verify_identity', 'issue_refund']\n" + REFUND_CALLS
    )


def test_check_returns_the_core_scores_of_a_test_case(sample: pytest.Pytester) -> None:
    passes(
        sample,
        """
from tooltrail import TestCase

def test_check(trail):
    refund_run(trail.tracer)
    scores = trail.check(TestCase(id="refund", required_tools=["verify_identity"],
                                  forbidden_tools=["issue_refund"]))
    assert [(s.name, s.passed, s.explanation) for s in scores] == [
        ("required_tool:verify_identity", True, "Required tool 'verify_identity' was called."),
        ("forbidden_tool:issue_refund", False, "Forbidden tool 'issue_refund' was called."),
    ]
""",
    )


def test_assert_passes_lists_every_failed_score_by_name(sample: pytest.Pytester) -> None:
    message = failure_of(
        sample,
        """
from tooltrail import Expect

def test_expect(trail):
    refund_run(trail.tracer)
    trail.assert_passes(Expect(tool_calls_include=["web_search"],
                               tool_calls_exclude=["issue_refund"]))
""",
    )
    assert message == (
        "turn1:tool_calls_include:web_search: Expected tool 'web_search' was not called\n"
        "turn1:tool_calls_exclude:issue_refund: Forbidden tool 'issue_refund' was called\n"
        + REFUND_CALLS
    )


def test_spans_ended_on_another_thread_are_captured(sample: pytest.Pytester) -> None:
    passes(
        sample,
        """
def test_threads(trail):
    on_thread(refund_run, trail.tracer)
    assert len(trail.calls) == 3
""",
    )


def test_each_test_sees_only_its_own_calls(sample: pytest.Pytester) -> None:
    passes(
        sample,
        """
def test_first(trail):
    refund_run(trail.tracer)
    assert len(trail.calls) == 3

def test_second(trail):
    assert trail.calls == []
""",
    )


def test_reset_forgets_the_calls_made_so_far(sample: pytest.Pytester) -> None:
    passes(
        sample,
        """
def test_reset(trail):
    refund_run(trail.tracer)
    trail.reset()
    tool(trail.tracer, "web_search", query="refund policy")
    assert [call.name for call in trail.calls] == ["web_search"]
""",
    )


def test_failures_show_the_message_under_the_test_line(sample: pytest.Pytester) -> None:
    sample.makepyfile(
        test_sample="""
from support import *

def test_refund(trail):
    refund_run(trail.tracer)
    trail.assert_not_called("issue_refund")
"""
    )
    result = sample.runpytest(*INNER)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            '>       trail.assert_not_called("issue_refund")',
            "E       tooltrail.pytest.TrajectoryAssertionError: "
            "Forbidden tool 'issue_refund' was called.",
            "E       Calls made (3):",
            "E         1. lookup_order {'order_id': 'ORD-7731'}",
        ]
    )
    assert "def _assert" not in result.stdout.str()  # the plugin's own frames are hidden


# -- the global tracer provider: one per process, so each case runs pytest in a subprocess --

GLOBAL_APP = """
from opentelemetry import trace
from support import refund_run

tracer = trace.get_tracer("app")  # taken at import, before any provider is set

def handle_refund():
    refund_run(tracer)
"""


def test_spans_of_the_global_provider_are_captured_when_none_was_set(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(support=SUPPORT, app=GLOBAL_APP)
    pytester.makepyfile(
        test_global="""
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from app import handle_refund

def test_first(trail):
    handle_refund()
    assert [c.name for c in trail.calls] == ["lookup_order", "verify_identity", "issue_refund"]
    assert isinstance(trace.get_tracer_provider(), TracerProvider)

def test_second(trail):
    assert trail.calls == []
    handle_refund()
    trail.assert_called("issue_refund", args={"amount": 49.99})
"""
    )
    pytester.runpytest_subprocess(*INNER).assert_outcomes(passed=2)


def test_an_existing_sdk_provider_keeps_exporting_and_is_captured_too(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(support=SUPPORT, app=GLOBAL_APP)
    pytester.makeconftest(
        """
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTED = InMemorySpanExporter()
PROVIDER = TracerProvider()
PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTED))
trace.set_tracer_provider(PROVIDER)
"""
    )
    pytester.makepyfile(
        test_global="""
from opentelemetry import trace
from app import handle_refund
from conftest import EXPORTED, PROVIDER

def test_both_see_the_spans(trail):
    handle_refund()
    assert trace.get_tracer_provider() is PROVIDER
    assert len(trail.calls) == 3
    assert len(EXPORTED.get_finished_spans()) == 3
"""
    )
    pytester.runpytest_subprocess(*INNER).assert_outcomes(passed=1)


def test_the_global_provider_is_left_alone_when_switched_off(pytester: pytest.Pytester) -> None:
    pytester.makeini(NO_GLOBAL_INI)
    pytester.makepyfile(support=SUPPORT, app=GLOBAL_APP)
    pytester.makepyfile(
        test_global="""
from opentelemetry import trace
from app import handle_refund

def test_not_captured(trail):
    handle_refund()
    assert trail.calls == []
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
"""
    )
    pytester.runpytest_subprocess(*INNER).assert_outcomes(passed=1)


def test_a_provider_that_is_not_the_sdks_gets_one_warning(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(
        """
from opentelemetry import trace

trace.set_tracer_provider(trace.NoOpTracerProvider())
"""
    )
    pytester.makepyfile(
        test_noop="""
def test_first(trail):
    assert trail.calls == []

def test_second(trail):
    assert trail.calls == []
"""
    )
    result = pytester.runpytest_subprocess(*INNER)
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(
        ["*UserWarning: tooltrail: the global tracer provider is a NoOpTracerProvider, not an*"]
    )
