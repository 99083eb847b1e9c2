"""The live path's name for the redaction rules, which live in ``tooltrail.redact`` (layer 0)
so that evaluation, evaluation events and reports apply the same rules (the credential shapes
hidden inside values are ``tooltrail.credentials``). Their settings
(``TOOLTRAIL_REDACT_*``) are read by ``tooltrail.settings``; whole spans and log records are
redacted by ``tooltrail.pipeline.span_redaction``."""

from __future__ import annotations

from tooltrail.redact import (
    DEFAULT_CREDENTIALS,
    DEFAULT_KEYS,
    DEFAULT_MARKER,
    DEFAULT_MAX_ARGS_BYTES,
    DEFAULT_MAX_VALUE_CHARS,
    Redaction,
    canonical_json,
    clean_attribute,
    normalize_key,
    tool_args_text,
    truncation_marker,
)

__all__ = [
    "DEFAULT_CREDENTIALS",
    "DEFAULT_KEYS",
    "DEFAULT_MARKER",
    "DEFAULT_MAX_ARGS_BYTES",
    "DEFAULT_MAX_VALUE_CHARS",
    "Redaction",
    "canonical_json",
    "clean_attribute",
    "normalize_key",
    "tool_args_text",
    "truncation_marker",
]
