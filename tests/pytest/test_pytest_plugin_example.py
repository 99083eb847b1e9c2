"""examples/pytest_booking runs as its README says: passes, xfails with its message asserted."""

from __future__ import annotations

import subprocess
import sys

from fixtures import ROOT


def test_the_booking_example_passes_with_its_two_deliberate_failures_xfailed() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:hypothesispytest",
            "-rx",
            "examples/pytest_booking",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("=") and "5 passed, 2 xfailed" in lines[-1], done.stdout
    assert (
        "XFAIL examples/pytest_booking/agents/booking.yaml::second_booking_is_caught - "
        "turn 2 books a second table"
    ) in lines
    assert (
        "XFAIL examples/pytest_booking/test_booking.py::test_second_booking_in_turn_2_is_caught"
        " - turn 2 books twice"
    ) in lines
