"""The README's main command: ``tooltrail eval`` on the bundled refund example shows the seed's
verdicts, from the bundled dump and from a dump the live path writes now."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOLTRAIL = [sys.executable, "-c", "from tooltrail.cli import main; main()"]

#: The report of the seed example, exactly as issue 2 gives it.
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
"""  # noqa: E501


def eval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*TOOLTRAIL, "eval", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_readme_command_prints_the_seed_report_from_the_bundled_dump() -> None:
    result = eval_cli("examples/refund/suite.yaml", "examples/refund/")
    assert result.stdout == SEED_REPORT
    assert result.returncode == 1  # three of the four runs fail
    assert "4 traces read" in result.stderr


def test_a_dump_written_by_the_live_path_now_gets_the_same_report(tmp_path: Path) -> None:
    dump = tmp_path / "refund.otlp.jsonl"
    subprocess.run(
        [sys.executable, "examples/instrumented_agent.py", "--out", str(dump)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=120,
    )
    result = eval_cli("examples/refund/suite.yaml", str(dump), "--workers", "1")
    assert result.stdout == SEED_REPORT
