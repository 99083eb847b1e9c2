"""CasePlans: each case compiled once for many traces, keyed by the case object.

A plan cached under the wrong key would give one case the checks of another: two cases (or
two suites' cases) with one id and different expectations, or a new case object at the
address of a freed one. These tests fail when the key is the case id, or an address that
the cache does not keep alive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from fixtures import CORPUS

from tooltrail import EvaluatorConfig, Registry, Score, TestCase, evaluate_cases
from tooltrail.checks.expectations import RequiredTool
from tooltrail.convert import read_traces
from tooltrail.score import CasePlans

LOOPING = CORPUS / "pydantic-ai" / "d_loop_web_search.otlp.jsonl"


def looping_trace():
    (trace,) = read_traces([str(LOOPING)])
    return trace


def verdicts(results):
    return [(s.name, s.passed) for r in results for s in r.scores]


def test_cases_sharing_an_id_keep_their_own_expectations() -> None:
    trace = looping_trace()
    plans = CasePlans()
    searched = TestCase(id="policy", required_tools=["web_search"])
    refunded = TestCase(id="policy", required_tools=["issue_refund"])
    first = evaluate_cases([searched], trace, plans=plans)
    second = evaluate_cases([refunded], trace, plans=plans)
    assert verdicts(first) == [("required_tool:web_search", True)]
    assert verdicts(second) == [("required_tool:issue_refund", False)]
    # and the first case's plan is still its own
    assert verdicts(evaluate_cases([searched], trace, plans=plans)) == verdicts(first)


def test_a_new_case_at_a_freed_address_is_compiled_anew() -> None:
    plans = CasePlans()
    for n in range(50):  # CPython reuses a freed object's address at once
        case = TestCase(id="same", required_tools=[f"tool_{n}"])
        assert plans.of(case).checks == [RequiredTool(f"tool_{n}")]
        del case


def test_the_same_results_as_compiling_per_trace() -> None:
    trace = looping_trace()
    cases = [
        TestCase(
            id="a",
            forbidden_tools=["web_search"],
            evaluators=[EvaluatorConfig("no_redundant_tool_calls", threshold=0.5)],
        ),
        TestCase(id="b", ignore_failed_calls=True, required_tools=["web_search"]),
    ]
    plans = CasePlans()
    for _ in range(3):
        assert evaluate_cases(cases, trace, plans=plans) == evaluate_cases(cases, trace)


@dataclass(frozen=True)
class CountedCheck:
    """A plug-in check that counts how often it is built."""

    built: ClassVar[list[int]] = []

    def __post_init__(self) -> None:
        CountedCheck.built.append(1)

    def evaluate(self, ctx) -> Score:  # type: ignore[no-untyped-def]
        return Score.passing("counted", "counted", "Counted.")


def test_scorers_are_built_once_per_case_not_per_trace() -> None:
    registry = Registry.with_builtins()
    registry.register("counted", CountedCheck)
    case = TestCase(id="counted", evaluators=[EvaluatorConfig("counted")])
    trace = looping_trace()
    CountedCheck.built.clear()
    plans = CasePlans(registry)
    for _ in range(5):
        (result,) = evaluate_cases([case], trace, plans=plans)
        assert verdicts([result]) == [("counted", True)]
    assert len(CountedCheck.built) == 1
    CountedCheck.built.clear()
    for _ in range(5):  # without plans: compiled for each trace, as before
        evaluate_cases([case], trace, registry=registry)
    assert len(CountedCheck.built) == 5
