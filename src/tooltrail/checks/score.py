"""The verdict every check and scorer returns (``Score``, kept in ``tooltrail.results.score``
beside the model, so that rows and reports need no check), and the score of a misconfigured
check."""

from __future__ import annotations

from tooltrail.results.score import Score

__all__ = ["Score", "config_error"]


def config_error(name: str, metric: str, reason: str) -> Score:
    """A failing score that reports a misconfigured check instead of a verdict."""
    return Score.failing(name, metric, reason, error="ConfigError")
