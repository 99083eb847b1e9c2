"""A case's reference trajectory: the calls of a good run, to match new runs against.

Given inline (``calls``) or recorded (``file`` and ``trace_id``: a trace in an OTLP file,
whose calls ``checks.reference`` reads when a check first needs them). ``trajectory_match``
compares a run with it (docs/core.md, "Reference trajectories").
"""

from __future__ import annotations

from dataclasses import dataclass

from tooltrail.model import ToolCall
from tooltrail.suite.suite_error import SuiteError


@dataclass(frozen=True, slots=True)
class Reference:
    """The reference of a case: ``calls`` (inline, or read from a recording), or ``file`` (an
    absolute path once a suite file is loaded) and ``trace_id`` of a recorded trace.

    A reference call whose ``args`` is ``None`` (not given inline, not captured in the
    recording) matches any arguments of its tool.
    """

    calls: tuple[ToolCall, ...] | None = None
    file: str | None = None
    trace_id: str | None = None

    def __post_init__(self) -> None:
        recorded = self.file is not None or self.trace_id is not None
        if self.calls is None and not (self.file and self.trace_id):
            raise SuiteError("a reference needs `calls`, or a `file` and a `trace_id`")
        if self.calls is not None and recorded and not (self.file and self.trace_id):
            raise SuiteError("a recorded reference needs both `file` and `trace_id`")

    @property
    def label(self) -> str:
        """Where the reference comes from, for messages: ``file#trace_id`` or ``inline``."""
        if self.file is not None:
            return f"{self.file}#{self.trace_id}"
        return "inline"
