"""The machinery behind tooltrail's pytest plugin (the entry module is ``tooltrail.pytest_plugin``).

``Trail`` is the ``trail`` fixture's object; ``TrajectoryAssertionError`` is what its
assertions raise; ``RunsResult`` is what ``trail.run_turns`` returns, and
``TrialsInconclusive`` what it raises when its runs' interval straddles the threshold.
"""

from __future__ import annotations

from tooltrail.pytest.runs import (
    RunOutcome,
    RunsResult,
    TrajectoryAssertionError,
    TrialsInconclusive,
)
from tooltrail.pytest.trail import Trail

TrajectoryAssertionError.__module__ = __name__
TrialsInconclusive.__module__ = __name__

__all__ = ["RunOutcome", "RunsResult", "Trail", "TrajectoryAssertionError", "TrialsInconclusive"]
