"""The replay suite's plug-in check: a trajectory's fingerprint as a score.

``replay_trajectory`` passes when the trace has at least one tool call, and its explanation
is the trajectory as the checks saw it: every call (name, canonical arguments, status, turn),
the turn count and a hash of the reply. Two results rows with equal scores therefore judged
the same calls, so comparing a receiver's results line with ``tooltrail eval``'s rows on the
same file compares verdicts *and* calls. Loaded through the real plug-in door
(``ServeConfig.plugins`` / ``load_plugins``), in worker processes too.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from tooltrail.checks.score import Score
from tooltrail.model import EvalTrace

NAME = "replay_trajectory"


def fingerprint(trace: EvalTrace) -> dict[str, Any]:
    """What of a trajectory the comparison holds to: calls in order, turns, the reply."""
    reply = trace.output
    return {
        "calls": [[c.name, c.args, c.status, c.turn] for c in trace.tool_calls],
        "turns": trace.turn_count,
        "reply": hashlib.sha256(reply.encode()).hexdigest()[:16] if reply else None,
    }


def replay_trajectory(trace: EvalTrace, case: Any, config: dict[str, Any]) -> Score:
    """Passes with at least one call; the explanation is the trajectory's fingerprint."""
    explanation = orjson.dumps(fingerprint(trace), option=orjson.OPT_SORT_KEYS).decode()
    make = Score.passing if trace.tool_calls else Score.failing
    return make(NAME, NAME, explanation)


TOOLTRAIL_CHECKS = {NAME: replay_trajectory}
