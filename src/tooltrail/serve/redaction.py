"""Secrets kept out of what the receiver writes or sends on (``--dump``, ``--forward``).

The rules and their configuration are the live path's (``tooltrail.redact``, set by the
``TOOLTRAIL_REDACT_*`` variables), and so is the redaction of whole spans and log records
(``tooltrail.live.span_redaction``: tool spans' attributes and events, content log records' bodies),
re-exported here. Evaluation still reads the spans as they came; only what leaves the process
is redacted, explanations included (evaluation redacts them with the same rules).
"""

from __future__ import annotations

from tooltrail.live.config import LiveConfig
from tooltrail.live.span_redaction import (
    cleaned_attributes,
    redacted,
    redacted_record,
    redacted_tool_span,
)
from tooltrail.redact import Redaction

__all__ = [
    "cleaned_attributes",
    "redacted",
    "redacted_record",
    "redacted_tool_span",
    "redaction_from_env",
]


def redaction_from_env() -> Redaction:
    """The live path's redaction settings (``TOOLTRAIL_REDACT_*``, else the defaults)."""
    return LiveConfig.from_env().redaction()
