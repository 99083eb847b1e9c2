"""The errors building a judge can raise; judging itself never raises (see ``runner``)."""

from __future__ import annotations

from tooltrail.config_error import ConfigError


class JudgeConfigError(ConfigError):
    """A judge's settings cannot work: an unknown provider or key, a missing SDK, a bad value."""


class JudgeCacheError(JudgeConfigError):
    """The verdict cache's file cannot be used; the message names it."""
