"""evaluate_cases: several cases on one trace, one shared call index, the same results."""

import copy
from dataclasses import fields

from fixtures import CORPUS, refund_test_case

from tooltrail import EvaluatorConfig, Registry, TestCase, evaluate_cases, evaluate_trace
from tooltrail.checks import view as view_module
from tooltrail.convert import read_traces

LOOPING = CORPUS / "pydantic-ai" / "d_loop_web_search.otlp.jsonl"

REFUND = refund_test_case(
    "required_tools", "required_tool_order", "expected_tool_arguments", "evaluators"
)
NO_SEARCH = TestCase(
    id="no-search",
    forbidden_tools=["web_search"],
    evaluators=[EvaluatorConfig("no_redundant_tool_calls", threshold=0.5)],
)
TOLERANT = TestCase(
    id="tolerant",
    ignore_failed_calls=True,
    evaluators=[EvaluatorConfig("max_tool_calls", config={"max": 3})],
)


def looping_trace():
    (trace,) = read_traces([str(LOOPING)])
    return trace


def test_results_equal_one_evaluate_trace_per_case_in_order():
    trace = looping_trace()
    cases = [REFUND, NO_SEARCH, TOLERANT]
    shared = evaluate_cases(cases, trace, output="Refund issued for ORD-7731.")
    alone = [evaluate_trace(c, trace, output="Refund issued for ORD-7731.") for c in cases]
    assert shared == alone
    assert [r.case_id for r in shared] == ["refund", "no-search", "tolerant"]


def test_duplicate_calls_are_found_once_for_all_cases(monkeypatch):
    found = []
    real = view_module.CallView._find_duplicates

    def counting(self):
        found.append(self.size)
        return real(self)

    monkeypatch.setattr(view_module.CallView, "_find_duplicates", counting)
    trace = looping_trace()
    results = evaluate_cases([REFUND, NO_SEARCH], trace)
    redundancy = [s for r in results for s in r.scores if s.name == "no_redundant_tool_calls"]
    assert [s.explanation for s in redundancy] == [
        "2/4 tool calls exactly duplicated an earlier call.",
        "2/4 tool calls exactly duplicated an earlier call.",
    ]
    assert found == [4]


def trace_state(trace):
    """Every field of the trace, copied: what an evaluation must leave as it found it."""
    return copy.deepcopy({f.name: getattr(trace, f.name) for f in fields(trace)})


def test_nothing_is_left_on_the_trace():
    trace = looping_trace()
    before = trace_state(trace)
    evaluate_cases([REFUND, NO_SEARCH], trace)
    assert trace_state(trace) == before
    assert not hasattr(trace, "view_cache")  # the call index travels in the check context


def test_no_cases_give_no_results():
    assert evaluate_cases([], looping_trace()) == []


def test_a_scorer_that_raises_fails_its_own_case_only():
    registry = Registry.with_builtins()

    def broken(trace, case, config):
        raise RuntimeError("boom")

    registry.register("broken", broken)
    flaky = TestCase(id="flaky", evaluators=[EvaluatorConfig("broken")])
    trace = looping_trace()
    before = trace_state(trace)
    flaky_row, search_row = evaluate_cases([flaky, NO_SEARCH], trace, registry=registry)
    assert not flaky_row.passed
    assert flaky_row.scores[0].error == "RuntimeError"
    assert trace_state(trace) == before
    assert search_row == evaluate_trace(NO_SEARCH, trace, registry=registry)
