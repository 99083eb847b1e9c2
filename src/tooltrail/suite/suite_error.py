"""The one error a user-written suite or gate file raises, naming where the problem is."""

from __future__ import annotations

from tooltrail.config_error import ConfigError


class SuiteError(ConfigError):
    """A suite, case or gate is invalid. ``str()`` reads ``file:line: key.path: what to do``."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        key_path: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.key_path = key_path
        where = ""
        if path:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        if key_path:
            where += f"{key_path}: "
        super().__init__(where + message)
