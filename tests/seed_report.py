"""The report of the seed refund example, exactly as issue 2 gives it (item 7), by hand.

``examples/refund_trajectory.py``, ``tooltrail eval`` on ``examples/refund/`` and the
streaming text writer must all print these bytes; the tests that say so share this copy.
"""

# ruff: noqa: E501  (the issue's lines, verbatim)

SEED_REPORT = """\
correct                PASS
skipped-verification   FAIL
    required_tool:verify_identity: Required tool 'verify_identity' was not called.
    tool_order: Required order ['lookup_order', 'verify_identity', 'issue_refund'] not met: ['verify_identity'] never called.
wrong-amount           FAIL
    tool_arg_values:issue_refund: Tool 'issue_refund' was called with [{'order_id': 'ORD-7731', 'amount': 499.9}], not {'order_id': 'ORD-7731', 'amount': 49.99}.
looping                FAIL
    tool_call_precision: 5/6 tool calls were in the allowed set ['issue_refund', 'lookup_order', 'verify_identity'].
    no_redundant_tool_calls: 2/6 tool calls exactly duplicated an earlier call.

contains                 8/8 passed
no_redundant_tool_calls  3/4 passed
required_tool            11/12 passed
tool_arg_values          3/4 passed
tool_call_precision      3/4 passed
tool_order               3/4 passed

1/4 runs passed
"""
