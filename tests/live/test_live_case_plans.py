"""The inline evaluator (live and ``serve``) compiles each case of its fixed suite once, not
once per trace: compiling was about a quarter of evaluating a trace (``score.CasePlans``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from opentelemetry.sdk.trace import TracerProvider

from tooltrail import EvaluatorConfig, Registry, Score, TestCase
from tooltrail.live import InlineEvaluator, ToolArgsProcessor, TraceBuffer, tool
from tooltrail.model import EvalTrace
from tooltrail.results import CaseResult
from tooltrail.suite import TestSuite


@dataclass(frozen=True)
class BuiltCount:
    """A plug-in check that counts how often it is built."""

    built: ClassVar[list[int]] = []

    def __post_init__(self) -> None:
        BuiltCount.built.append(1)

    def evaluate(self, ctx) -> Score:  # type: ignore[no-untyped-def]
        return Score.passing("built_count", "built_count", "Counted.")


def test_each_case_is_compiled_once_for_all_the_traces_it_judges() -> None:
    registry = Registry.with_builtins()
    registry.register("built_count", BuiltCount)
    suite = TestSuite(
        name="plans", cases=[TestCase(id="any", evaluators=[EvaluatorConfig("built_count")])]
    )
    seen: list[list[CaseResult]] = []

    def on_result(trace: EvalTrace, results: list[CaseResult]) -> None:
        seen.append(results)

    provider = TracerProvider()
    evaluator = InlineEvaluator(suite, on_result=on_result, registry=registry)
    BuiltCount.built.clear()  # (checking the suite when the evaluator is made builds it too)
    provider.add_span_processor(ToolArgsProcessor(TraceBuffer(evaluator, grace_s=0)))
    tracer = provider.get_tracer("agent")
    for n in range(5):
        with tracer.start_as_current_span(
            "invoke_agent", attributes={"tooltrail.case_id": "any", "n": n}
        ):
            with tool("lookup_order", {"order_id": f"ORD-{n}"}, tracer=tracer):
                pass
    provider.shutdown()
    assert [[r.passed for r in results] for results in seen] == [[True]] * 5
    assert len(BuiltCount.built) == 1
