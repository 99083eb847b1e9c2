"""The seed examples, run as a user runs them; expected output is the issue's text, by hand."""

# ruff: noqa: E501  (the expected blocks are the issue's lines, verbatim)

import subprocess
import sys
from pathlib import Path

from seed_report import SEED_REPORT

EXAMPLES = Path(__file__).parents[2] / "examples"


# The booking seed: two turns, three runs at threshold 0.8, the second create_booking of turn 2
# caught in runs 1 and 3. Under the runs line, the figures of the repeated runs (docs/eval.md,
# Repeated trials): fail, pass, fail flips twice; 1 - C(2, k)/C(3, k) and C(1, k)/C(3, k).
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
    95% Wilson interval [6.1%, 79.2%] is below the threshold 0.8
    flip rate 1.00 (2 changes in 3 runs)
    k           1      2      3
    pass@k  0.333  0.667  1.000
    pass^k  0.333  0.000  0.000

1/3 runs passed
"""


def run_example(name: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name)], capture_output=True, timeout=60, check=False
    )


def test_the_refund_example_prints_the_issue_block_byte_for_byte():
    done = run_example("refund_trajectory.py")
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout == SEED_REPORT.encode()


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
