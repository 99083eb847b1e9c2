"""Secrets kept out of what the receiver writes or sends on (``--dump``, ``--forward``).

The rules are ``tooltrail.redact``'s, set by the ``TOOLTRAIL_REDACT_*`` variables as for every
runner (``tooltrail.settings``), and the redaction of whole spans and log records (tool spans'
attributes and events, content log records' bodies) is ``tooltrail.pipeline.span_redaction``,
re-exported here. Evaluation still reads the spans as they came; only what leaves the process
is redacted, explanations included (evaluation redacts them with the same rules).
"""

from __future__ import annotations

from tooltrail.pipeline.span_redaction import (
    cleaned_attributes,
    redacted,
    redacted_record,
    redacted_tool_span,
)
from tooltrail.settings import redaction_from_env

__all__ = [
    "cleaned_attributes",
    "redacted",
    "redacted_record",
    "redacted_tool_span",
    "redaction_from_env",
]
