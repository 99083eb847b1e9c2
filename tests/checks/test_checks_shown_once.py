"""The checks whose texts show a list or mapping of their configuration spell it once, when
built, not on every trace they judge (a batch task keeps its checks for every trace:
``score.CasePlans``); the texts are those of docs/checks.md whichever way they are made.
The texts that depend on the configuration alone (a score's name, what a pass and the usual
failures say) are spelled once too: every trace's score holds the same string object."""

from __future__ import annotations

from typing import Any

from tooltrail import EvalSpan, EvalTrace
from tooltrail.checks.expectations import (
    Contains,
    ForbiddenTool,
    RequiredTool,
    ToolArgs,
    ToolArgValues,
    ToolOrder,
)
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.view import CallView


class Spelled(dict[str, Any]):
    """A mapping that counts how often it is spelled out."""

    spelled = 0

    def __repr__(self) -> str:
        Spelled.spelled += 1
        return super().__repr__()


class SpelledList(list[str]):
    spelled = 0

    def __repr__(self) -> str:
        SpelledList.spelled += 1
        return super().__repr__()


def context(*calls: tuple[str, dict[str, Any]]) -> CheckContext:
    trace = EvalTrace(
        "t",
        spans=[
            EvalSpan(name, {"tool_args": args}, span_id=f"s{n}")
            for n, (name, args) in enumerate(calls)
        ],
    )
    return CheckContext(trace=trace, view=CallView(trace.tool_calls), output=None)


def test_expected_arguments_are_spelled_once_for_many_traces() -> None:
    Spelled.spelled = 0
    check = ToolArgValues("refund", Spelled(order_id="ORD-1", amount=49.99))
    passed = context(("refund", {"order_id": "ORD-1", "amount": 49.99}))
    failed = context(("refund", {"order_id": "ORD-2"}))
    texts = [check.evaluate(ctx).explanation for ctx in (passed, failed, passed)]
    assert Spelled.spelled == 1
    assert texts == [
        "Tool 'refund' was called with {'order_id': 'ORD-1', 'amount': 49.99}.",
        "Tool 'refund' was called with [{'order_id': 'ORD-2'}], not "
        "{'order_id': 'ORD-1', 'amount': 49.99}.",
        "Tool 'refund' was called with {'order_id': 'ORD-1', 'amount': 49.99}.",
    ]


def test_the_order_and_the_argument_names_are_spelled_once() -> None:
    SpelledList.spelled = 0
    order = ToolOrder(SpelledList(["a", "b"]))
    keys = ToolArgs("a", SpelledList(["x"]))
    ctx = context(("a", {"x": 1}), ("b", {}))
    for _ in range(3):
        assert order.evaluate(ctx).explanation == (
            "Tools were first called in the required order ['a', 'b']."
        )
        assert keys.evaluate(ctx).explanation == "Tool 'a' included required arguments ['x']."
    assert SpelledList.spelled == 2  # once per check


def test_names_and_texts_of_a_check_are_one_object_in_every_trace_s_score() -> None:
    """Spelled per trace, each was a new string that the row's redaction hashed again and the
    batch task's ``RowCompactor`` looked up again."""
    traces = [context(("a", {"x": 1}), ("b", {})), context(("c", {}), ("a", {"x": 1}), ("b", {}))]
    missing = [context(("c", {})), context(("c", {}), ("d", {}))]
    checks = [
        Contains("ok"),
        RequiredTool("a"),
        ForbiddenTool("a"),
        ToolArgs("a", ["x"]),
        ToolArgValues("a", {"x": 1}),
        ToolOrder(["a", "b"]),
    ]
    for check in checks:
        for contexts in (traces, missing):
            first, second = (check.evaluate(ctx) for ctx in contexts)
            assert first.to_dict() | {"span_ids": []} == second.to_dict() | {"span_ids": []}
            assert first.name is second.name, check
            if not isinstance(check, ToolOrder) or first.passed:  # "... never called" varies
                assert first.explanation is second.explanation, check
