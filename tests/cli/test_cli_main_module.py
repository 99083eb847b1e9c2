"""``python -m tooltrail`` is the ``tooltrail`` command (for an environment whose scripts
directory is not on PATH)."""

from __future__ import annotations

import subprocess
import sys

from fixtures import REFUND_DUMP, REFUND_SUITE


def test_python_m_tooltrail_runs_the_command() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tooltrail", "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("tooltrail, version ")


def test_python_m_tooltrail_names_itself_and_keeps_the_exit_codes() -> None:
    usage = subprocess.run(
        [sys.executable, "-m", "tooltrail", "nosuch"], capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 2 and "Usage: tooltrail " in usage.stderr
    failed = subprocess.run(
        [sys.executable, "-m", "tooltrail", "eval", str(REFUND_SUITE), str(REFUND_DUMP), "-q"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert failed.returncode == 1 and failed.stdout.startswith("correct ")
