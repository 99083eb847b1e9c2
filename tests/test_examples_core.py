"""The seed examples, run as a user runs them; expected output is the issue's text, by hand."""

# ruff: noqa: E501  (the expected blocks are the issue's lines, verbatim)

import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).parent.parent / "examples"

# Copied from issue 2, item 7: the block `python examples/refund_trajectory.py` must print.
REFUND_EXPECTED = """\
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

# The booking seed: two turns, three runs at threshold 0.8, the second create_booking of turn 2
# caught in runs 1 and 3.
BOOKING_EXPECTED = """\
booking run 1          FAIL
    turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called
booking run 2          PASS
booking run 3          FAIL
    turn2:tool_calls_exclude:create_booking: Forbidden tool 'create_booking' was called

tool_calls_args          6/6 passed
tool_calls_exclude       1/3 passed
tool_calls_include       6/6 passed

booking                1/3 runs passed (threshold 0.8): FAIL

1/3 runs passed
"""


def run_example(name: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, timeout=60, check=False
    )


def test_the_refund_example_prints_the_issue_block_byte_for_byte():
    done = run_example("refund_trajectory.py")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == REFUND_EXPECTED.encode()


def test_the_booking_example_fails_with_turn_labelled_reasons():
    done = run_example("booking_turns.py")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == BOOKING_EXPECTED


def test_the_python_api_screen_in_docs_core_runs():
    doc = (EXAMPLES.parent / "docs" / "core.md").read_text("utf-8")
    code = doc.split("```python\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr.decode()
    assert b"required_tool:verify_identity: Required tool 'verify_identity' was not called." in (
        done.stdout
    )
