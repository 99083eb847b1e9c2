"""Live settings, with their defaults in one place and ``TOOLTRAIL_*`` environment variables.

``LiveConfig.from_env()`` reads every variable of ``ENVIRONMENT`` (documented in docs/live.md)
with the parsers of ``tooltrail.settings``; a bad value logs a warning and keeps the default, as
the OpenTelemetry SDK does. The redaction variables are ``settings.REDACTION_ENVIRONMENT``,
which every runner reads (``settings.redaction_from_env``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooltrail.pipeline import buffer as _buffer
from tooltrail.pipeline import revisions as _revisions
from tooltrail.pipeline.judge_queue import DEFAULT_JUDGE_QUEUE
from tooltrail.redact import (
    DEFAULT_MARKER,
    DEFAULT_MAX_ARGS_BYTES,
    DEFAULT_MAX_VALUE_CHARS,
    Redaction,
)
from tooltrail.sampling import TestTraffic
from tooltrail.settings import (
    REDACTION_ENVIRONMENT,
    choice,
    parse_bool,
    parse_non_negative_float,
    parse_non_negative_int,
    parse_positive_int,
    parse_text,
    parse_text_list,
    read_environment,
    redaction_from,
)

_log = logging.getLogger(__name__)

#: The live pipeline's bound on spans held (about 2.7 KB each for a tool span in CPython): the
#: buffer's own default is larger, for ``tooltrail serve``, which admits requests by its own.
LIVE_MAX_BUFFERED_SPANS = 65_536


@dataclass(frozen=True)
class LiveConfig:
    """What ``tooltrail.live.install`` sets up. Field docs name their environment variable."""

    #: TOOLTRAIL_ENABLED: ``false`` makes ``install`` do nothing (the entry point needs ``true``).
    enabled: bool = True
    #: TOOLTRAIL_OUT: OTLP file written with every complete trace (``.pb``: protobuf).
    out: str | None = None
    #: TOOLTRAIL_OUT_FORMAT: ``json`` or ``proto``; default from the file name.
    out_format: str | None = None
    #: TOOLTRAIL_OUT_COMPRESSION: ``zstd`` or ``gzip``.
    out_compression: str | None = None
    #: TOOLTRAIL_OUT_MAX_BYTES: rotate the file at this size.
    out_max_bytes: int | None = None
    #: TOOLTRAIL_SUITE: suite file of policies evaluated on each complete trace.
    suite: str | None = None
    #: TOOLTRAIL_RESULTS: JSON-lines file of inline evaluation results.
    results: str | None = None
    #: TOOLTRAIL_EVALUATION_EVENTS: send results as ``gen_ai.evaluation.result`` OTLP log events.
    evaluation_events: bool = False
    #: TOOLTRAIL_REDACT_KEYS: argument keys hidden in addition to the defaults.
    redact_keys: tuple[str, ...] = ()
    #: TOOLTRAIL_REDACT_DEFAULT_KEYS: ``false`` drops the default keys (password, card_number...).
    redact_default_keys: bool = True
    #: TOOLTRAIL_REDACT_KEY_PATTERNS: regular expressions searched in key names.
    redact_key_patterns: tuple[str, ...] = ()
    #: TOOLTRAIL_REDACT_VALUE_PATTERNS: regular expressions replaced inside string values.
    redact_value_patterns: tuple[str, ...] = ()
    #: TOOLTRAIL_REDACT_DEFAULT_CREDENTIALS: ``false`` drops the credential shapes (bearer
    #: tokens, API keys, JWTs, private keys, card numbers...) hidden inside any value.
    redact_default_credentials: bool = True
    #: TOOLTRAIL_REDACT_CREDENTIALS_OFF: names of credential shapes left out (``jwt,card_number``).
    redact_credentials_off: tuple[str, ...] = ()
    #: TOOLTRAIL_REDACT_MARKER: what hidden values become.
    redact_marker: str = DEFAULT_MARKER
    #: TOOLTRAIL_MAX_VALUE_CHARS: longer strings inside arguments are cut.
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS
    #: TOOLTRAIL_MAX_ARGS_BYTES: longer ``tool_args`` are cut (and no longer JSON).
    max_args_bytes: int = DEFAULT_MAX_ARGS_BYTES
    #: TOOLTRAIL_GRACE_MS: wait for late children after a trace's root ended.
    grace_ms: int = int(_buffer.DEFAULT_GRACE_S * 1000)
    #: TOOLTRAIL_MAX_AGE_MS: a trace held longer is handed on partial.
    max_age_ms: int = int(_buffer.DEFAULT_MAX_AGE_S * 1000)
    #: TOOLTRAIL_MAX_TRACES: traces held at once.
    max_traces: int = _buffer.DEFAULT_MAX_TRACES
    #: TOOLTRAIL_MAX_SPANS_PER_TRACE: spans held per trace.
    max_spans_per_trace: int = _buffer.DEFAULT_MAX_SPANS
    #: TOOLTRAIL_MAX_BUFFERED_SPANS: spans held at once, all traces together; past it whole
    #: traces are given up (counted, named in the results).
    max_buffered_spans: int = LIVE_MAX_BUFFERED_SPANS
    #: TOOLTRAIL_SINK_TIMEOUT_MS: a sink call running longer is reported stuck and skipped.
    sink_timeout_ms: int = int(_buffer.DEFAULT_SINK_TIMEOUT_S * 1000)
    #: TOOLTRAIL_SHUTDOWN_TIMEOUT_MS: the longest shutdown waits for the sinks.
    shutdown_timeout_ms: int = int(_buffer.DEFAULT_SHUTDOWN_TIMEOUT_S * 1000)
    #: TOOLTRAIL_REVISION_WINDOW_MS: spans of a judged trace ending this long after its first
    #: verdict (a background task) are merged with it and judged again; 0: never.
    revision_window_ms: int = int(_revisions.DEFAULT_REVISION_WINDOW_S * 1000)
    #: TOOLTRAIL_MAX_REVISIONS: times a trace is judged again within the window.
    max_revisions: int = _revisions.DEFAULT_MAX_REVISIONS
    #: TOOLTRAIL_REVISION_MAX_SPANS: spans kept of judged traces for revisions, all together.
    revision_max_spans: int = _revisions.LIVE_MAX_KEPT_SPANS
    #: TOOLTRAIL_JUDGE_MODEL: the judge model of the suite's judge checks (over its ``judge:``).
    judge_model: str | None = None
    #: TOOLTRAIL_JUDGE_CACHE: ``false`` asks the judge model every time (no verdict cache).
    judge_cache: bool | None = None
    #: TOOLTRAIL_JUDGE_CACHE_PATH: the judge's verdict cache file (SQLite).
    judge_cache_path: str | None = None
    #: TOOLTRAIL_JUDGE_CONCURRENCY: judge requests in flight, and threads judging traces.
    judge_concurrency: int | None = None
    #: TOOLTRAIL_JUDGE_BUDGET_USD: US dollars of judge calls past which no judge is called.
    judge_budget_usd: float | None = None
    #: TOOLTRAIL_JUDGE_QUEUE: traces waiting for a judge; past it their judge scores are errors.
    judge_queue: int = DEFAULT_JUDGE_QUEUE
    #: TOOLTRAIL_JUDGE_BUDGET_PER: ``hour`` or ``day``: the judge budget is then so many dollars
    #: per hour or day (``pipeline.spend_window``), not once for the process.
    judge_budget_per: str | None = None
    #: TOOLTRAIL_TEST_TRAFFIC: ``score`` a trace marked as a test run fully (outside sampling
    #: and the spend window), or ``skip`` it (``tooltrail.sampling``).
    test_traffic: str = "score"
    #: TOOLTRAIL_TEST_ENVIRONMENTS: ``deployment.environment`` values whose traces are test runs.
    test_environments: tuple[str, ...] = ()
    #: TOOLTRAIL_EVALUATION_SPANS: with evaluation events, also one ``gen_ai.evaluation.internal``
    #: span per evaluated trace, linked to it (``pipeline.evaluation_spans``).
    evaluation_spans: bool = False
    #: TOOLTRAIL_HANDLE_SIGTERM: on SIGTERM (when the application set no handler of its own),
    #: exit through ``atexit``, so held traces are evaluated and their events exported.
    handle_sigterm: bool = True

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> LiveConfig:
        """Defaults, then the ``TOOLTRAIL_*`` variables, then ``overrides`` (``None`` = unset)."""
        values = read_environment(ENVIRONMENT, environ, _log)
        unknown = set(overrides) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"unknown tooltrail live setting(s): {', '.join(sorted(unknown))}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def redaction(self) -> Redaction:
        """The ``Redaction`` these settings describe (``settings.redaction_from``)."""
        return redaction_from(
            **{setting: getattr(self, setting) for setting, _ in REDACTION_ENVIRONMENT.values()}
        )

    def judge_overrides(self) -> dict[str, Any]:
        """The judge settings given here, as ``tooltrail.score.run_judge_settings`` takes
        them (``None``: the suite's ``judge:`` block decides)."""
        return {
            "model": self.judge_model,
            "cache": self.judge_cache,
            "cache_path": self.judge_cache_path,
            "concurrency": self.judge_concurrency,
            # Per window, the budget is the window's (``pipeline.spend_window``).
            "budget_usd": self.judge_budget_usd if self.judge_budget_per is None else None,
        }

    def traffic(self) -> TestTraffic:
        """The test traffic rule of these settings (``tooltrail.sampling``)."""
        return TestTraffic(
            environments=tuple(self.test_environments),
            mode=self.test_traffic,  # type: ignore[arg-type]  # one of TEST_MODES (its parser)
        )


#: Environment variable -> (LiveConfig field, parser).
ENVIRONMENT: dict[str, tuple[str, Any]] = {
    "TOOLTRAIL_ENABLED": ("enabled", parse_bool),
    "TOOLTRAIL_OUT": ("out", parse_text),
    "TOOLTRAIL_OUT_FORMAT": ("out_format", choice("json", "proto")),
    "TOOLTRAIL_OUT_COMPRESSION": ("out_compression", choice("zstd", "gzip")),
    "TOOLTRAIL_OUT_MAX_BYTES": ("out_max_bytes", parse_positive_int),
    "TOOLTRAIL_SUITE": ("suite", parse_text),
    "TOOLTRAIL_RESULTS": ("results", parse_text),
    "TOOLTRAIL_EVALUATION_EVENTS": ("evaluation_events", parse_bool),
    **REDACTION_ENVIRONMENT,
    "TOOLTRAIL_GRACE_MS": ("grace_ms", parse_non_negative_int),
    "TOOLTRAIL_MAX_AGE_MS": ("max_age_ms", parse_positive_int),
    "TOOLTRAIL_MAX_TRACES": ("max_traces", parse_positive_int),
    "TOOLTRAIL_MAX_SPANS_PER_TRACE": ("max_spans_per_trace", parse_positive_int),
    "TOOLTRAIL_MAX_BUFFERED_SPANS": ("max_buffered_spans", parse_positive_int),
    "TOOLTRAIL_SINK_TIMEOUT_MS": ("sink_timeout_ms", parse_positive_int),
    "TOOLTRAIL_SHUTDOWN_TIMEOUT_MS": ("shutdown_timeout_ms", parse_positive_int),
    "TOOLTRAIL_REVISION_WINDOW_MS": ("revision_window_ms", parse_non_negative_int),
    "TOOLTRAIL_MAX_REVISIONS": ("max_revisions", parse_non_negative_int),
    "TOOLTRAIL_REVISION_MAX_SPANS": ("revision_max_spans", parse_non_negative_int),
    "TOOLTRAIL_HANDLE_SIGTERM": ("handle_sigterm", parse_bool),
    "TOOLTRAIL_JUDGE_MODEL": ("judge_model", parse_text),
    "TOOLTRAIL_JUDGE_CACHE": ("judge_cache", parse_bool),
    "TOOLTRAIL_JUDGE_CACHE_PATH": ("judge_cache_path", parse_text),
    "TOOLTRAIL_JUDGE_CONCURRENCY": ("judge_concurrency", parse_positive_int),
    "TOOLTRAIL_JUDGE_BUDGET_USD": ("judge_budget_usd", parse_non_negative_float),
    "TOOLTRAIL_JUDGE_QUEUE": ("judge_queue", parse_positive_int),
    "TOOLTRAIL_JUDGE_BUDGET_PER": ("judge_budget_per", choice("hour", "day")),
    "TOOLTRAIL_TEST_TRAFFIC": ("test_traffic", choice("score", "skip")),
    "TOOLTRAIL_TEST_ENVIRONMENTS": ("test_environments", parse_text_list),
    "TOOLTRAIL_EVALUATION_SPANS": ("evaluation_spans", parse_bool),
}
