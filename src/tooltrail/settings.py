"""``TOOLTRAIL_*`` environment values, and the redaction settings every runner shares.

A bad value logs a warning and keeps the default, as the OpenTelemetry SDK does; lists are a
JSON array or comma-separated text. The live pipeline (``live.config.LiveConfig``) reads its
variables with these parsers; the redaction variables (``REDACTION_ENVIRONMENT``) are read here
for every runner, so ``serve``, ``live`` and the reports hide the same things without one
taking its settings from another (``redaction_from_env``). Layer 0: nothing of tooltrail but
``redact``.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from tooltrail.redact import (
    DEFAULT_CREDENTIALS,
    DEFAULT_KEYS,
    DEFAULT_MARKER,
    DEFAULT_MAX_ARGS_BYTES,
    DEFAULT_MAX_VALUE_CHARS,
    Redaction,
    check_credential_names,
)

_log = logging.getLogger(__name__)


def parse_bool(raw: str) -> bool:
    value = raw.lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ValueError("expected true or false")


def parse_positive_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected a positive integer") from None
    if value <= 0:
        raise ValueError("expected a positive integer")
    return value


def parse_non_negative_int(raw: str) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ValueError("expected an integer >= 0") from None
    if value < 0:
        raise ValueError("expected an integer >= 0")
    return value


def parse_non_negative_float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("expected a number >= 0") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError("expected a number >= 0")
    return value


def parse_text_list(raw: str) -> tuple[str, ...]:
    if raw.startswith("["):
        try:
            items = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise ValueError("not a JSON array") from None
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ValueError("expected a JSON array of strings")
        return tuple(items)
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"expected an integer >= {minimum}") from None
        if value < minimum:
            raise ValueError(f"expected an integer >= {minimum}")
        return value

    return parse


def parse_pattern_list(raw: str) -> tuple[str, ...]:
    patterns = parse_text_list(raw)
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"bad regular expression {pattern!r}: {exc}") from None
    return patterns


def parse_credential_list(raw: str) -> tuple[str, ...]:
    """Names of credential shapes (``tooltrail.credentials.SHAPES``); an unknown one is an
    error that lists the known ones."""
    return check_credential_names(parse_text_list(raw))


def choice(*allowed: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        if raw not in allowed:
            raise ValueError(f"expected one of {', '.join(allowed)}")
        return raw

    return parse


def parse_text(raw: str) -> str:
    return raw


#: Environment variable -> (setting, parser).
Environment = Mapping[str, tuple[str, Callable[[str], Any]]]


def read_environment(
    table: Environment, environ: Mapping[str, str] | None = None, log: logging.Logger = _log
) -> dict[str, Any]:
    """The settings of ``table`` that ``environ`` (default ``os.environ``) sets, parsed; a bad
    value is left out with a warning on ``log``."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for name, (setting, parse) in table.items():
        raw = env.get(name)
        if raw is None or not raw.strip():
            continue
        try:
            values[setting] = parse(raw.strip())
        except ValueError as exc:
            log.warning("tooltrail: ignoring %s=%r: %s", name, raw, exc)
    return values


#: The redaction variables (documented in docs/live.md), by the setting each gives.
REDACTION_ENVIRONMENT: dict[str, tuple[str, Callable[[str], Any]]] = {
    "TOOLTRAIL_REDACT_KEYS": ("redact_keys", parse_text_list),
    "TOOLTRAIL_REDACT_DEFAULT_KEYS": ("redact_default_keys", parse_bool),
    "TOOLTRAIL_REDACT_KEY_PATTERNS": ("redact_key_patterns", parse_pattern_list),
    "TOOLTRAIL_REDACT_VALUE_PATTERNS": ("redact_value_patterns", parse_pattern_list),
    "TOOLTRAIL_REDACT_DEFAULT_CREDENTIALS": ("redact_default_credentials", parse_bool),
    "TOOLTRAIL_REDACT_CREDENTIALS_OFF": ("redact_credentials_off", parse_credential_list),
    "TOOLTRAIL_REDACT_MARKER": ("redact_marker", parse_text),
    "TOOLTRAIL_MAX_VALUE_CHARS": ("max_value_chars", int_at_least(16)),
    "TOOLTRAIL_MAX_ARGS_BYTES": ("max_args_bytes", int_at_least(64)),
}


def redaction_from(
    *,
    redact_keys: tuple[str, ...] = (),
    redact_default_keys: bool = True,
    redact_key_patterns: tuple[str, ...] = (),
    redact_value_patterns: tuple[str, ...] = (),
    redact_default_credentials: bool = True,
    redact_credentials_off: tuple[str, ...] = (),
    redact_marker: str = DEFAULT_MARKER,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    max_args_bytes: int = DEFAULT_MAX_ARGS_BYTES,
) -> Redaction:
    """The ``Redaction`` the redaction settings describe: the default keys unless
    ``redact_default_keys`` is off, plus ``redact_keys``; every credential shape unless
    ``redact_default_credentials`` is off, less those ``redact_credentials_off`` names."""
    keys = (DEFAULT_KEYS if redact_default_keys else ()) + tuple(redact_keys)
    off = set(check_credential_names(redact_credentials_off))
    shapes = DEFAULT_CREDENTIALS if redact_default_credentials else ()
    return Redaction(
        keys=keys,
        key_patterns=tuple(redact_key_patterns),
        value_patterns=tuple(redact_value_patterns),
        credentials=tuple(name for name in shapes if name not in off),
        marker=redact_marker,
        max_value_chars=max_value_chars,
        max_args_bytes=max_args_bytes,
    )


def redaction_from_env(environ: Mapping[str, str] | None = None) -> Redaction:
    """The redaction ``TOOLTRAIL_REDACT_*`` (and the value bounds) describe, else the
    defaults."""
    return redaction_from(**read_environment(REDACTION_ENVIRONMENT, environ))


#: The attribute that marks a trace as a test run (``tooltrail.sampling``: serve and live score
#: it fully, outside production sampling and spend windows). The pytest plugin sets it on the
#: root span of every run it captures; agents under test can set it as a resource attribute
#: (``OTEL_RESOURCE_ATTRIBUTES=tooltrail.test=true``).
TEST_MARK = "tooltrail.test"
