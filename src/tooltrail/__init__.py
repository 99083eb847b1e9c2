"""tooltrail: check what an AI agent actually did, from its OpenTelemetry traces."""

from __future__ import annotations

__version__ = "0.1.0"

from tooltrail.model import EvalSpan, EvalTrace, ToolCall, parse_args

__all__ = [
    "EvalSpan",
    "EvalTrace",
    "ToolCall",
    "parse_args",
    "__version__",
]
