"""The refund story: four recorded runs of a refund agent, one reply, four different trajectories.

Every run tells the customer the same thing, so a check on the reply alone passes all four.
The tool calls tell the truth: one run skipped identity verification, one refunded ten times
the amount, one looped and searched the web. Run: ``python examples/refund_trajectory.py``.
"""

from __future__ import annotations

import sys

from tooltrail import (
    EvalSpan,
    EvalTrace,
    EvaluationSample,
    EvaluatorConfig,
    TestCase,
    TestSuite,
    evaluate_suite,
    render_text,
)

REPLY = "Your refund of $49.99 for order ORD-7731 has been issued."


def call(tool: str, **args: object) -> EvalSpan:
    """A recorded tool call, as any tracer can hand it over: a name and its arguments."""
    return EvalSpan(tool_name=tool, attributes={"tool_args": args})


LOOKUP = call("lookup_order", order_id="ORD-7731")
VERIFY = call("verify_identity", customer_id="C-118")
REFUND = call("issue_refund", order_id="ORD-7731", amount=49.99)

RUNS = {
    "correct": [LOOKUP, VERIFY, REFUND],
    "skipped-verification": [LOOKUP, REFUND],
    "wrong-amount": [LOOKUP, VERIFY, call("issue_refund", order_id="ORD-7731", amount=499.9)],
    "looping": [
        LOOKUP,
        LOOKUP,
        LOOKUP,
        VERIFY,
        call("web_search", query="refund policy"),
        REFUND,
    ],
}

REFUND_CASE = TestCase(
    id="refund",
    name="Refund a delivered order",
    input="I want a refund for order ORD-7731.",
    expected_contains=["$49.99", "ORD-7731"],
    required_tools=["lookup_order", "verify_identity", "issue_refund"],
    required_tool_order=["lookup_order", "verify_identity", "issue_refund"],
    expected_tool_arguments={"issue_refund": {"order_id": "ORD-7731", "amount": 49.99}},
    evaluators=[
        EvaluatorConfig(name="tool_call_precision", threshold=1.0),
        EvaluatorConfig(name="no_redundant_tool_calls", threshold=1.0),
    ],
)


def main() -> int:
    suite = TestSuite(name="refund-agent", version="1.0", cases=[REFUND_CASE])
    samples = [
        EvaluationSample(
            case_id="refund",
            output=REPLY,
            trace=EvalTrace(trace_id=f"trace-{label}", spans=spans, metadata={"turn_count": 1}),
            label=label,
        )
        for label, spans in RUNS.items()
    ]
    report = evaluate_suite(suite, samples)
    sys.stdout.write(render_text(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
