"""``install``: tooltrail's live pipeline on a tracer provider in one call.

    from tooltrail import live
    live.install(suite="policies.yaml", out="traces.otlp.jsonl")

The provider's processors (say ``BatchSpanProcessor(OTLPSpanExporter())``) are moved behind
a ``ToolArgsProcessor``, so everything they export is tagged and redacted. When a file, a
suite or sinks are asked for, a ``TraceBuffer`` joins them behind the same processor. Settings
not passed come from ``TOOLTRAIL_*`` variables (``LiveConfig``).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from tooltrail.checks.plugins import load_plugins
from tooltrail.live.config import LiveConfig
from tooltrail.live.processor import ToolArgsProcessor
from tooltrail.pipeline.buffer import BufferStats, TraceBuffer, TraceSink, sinks_of
from tooltrail.pipeline.console import logger_verdicts
from tooltrail.pipeline.inline import InlineEvaluator, ResultCallback
from tooltrail.pipeline.sdk import take_processors
from tooltrail.pipeline.sinks import ExporterSink, OtlpFileSink
from tooltrail.pipeline.spend_window import SpendWindow, require_price
from tooltrail.score import evaluation_time_limit

_log = logging.getLogger(__name__)
_lock = threading.Lock()


@dataclass
class Installation:
    """What ``install`` set up, to inspect it or flush and stop it."""

    provider: TracerProvider
    processor: ToolArgsProcessor
    config: LiveConfig
    buffer: TraceBuffer | None = None
    evaluator: InlineEvaluator | None = None
    file_sink: OtlpFileSink | None = None
    sinks: list[TraceSink] = field(default_factory=list)
    #: The judge's spend window (``TOOLTRAIL_JUDGE_BUDGET_PER``), else ``None``.
    spend: SpendWindow | None = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Deliver every held span to every processor and sink."""
        return self.processor.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Flush and stop tooltrail's pipeline (and the processors it wraps)."""
        self.processor.shutdown()

    def stats(self) -> BufferStats | None:
        """The trace buffer's counters (``None`` without a buffer)."""
        return self.buffer.stats() if self.buffer is not None else None

    def judge_stats(self) -> dict[str, Any]:
        """The judge queue's counters and the judge's totals (``judge_queue_*``, ``judge_*``;
        empty without a suite that asks a judge)."""
        return self.evaluator.judge_stats() if self.evaluator is not None else {}

    def production_stats(self) -> dict[str, Any]:
        """Per sampled check its judged and sampled-out traces (``sampling``), the test runs
        (``traces_test``, ``traces_test_skipped``) and the spend window (``judge_window_*``);
        empty without a suite."""
        if self.evaluator is None:
            return {}
        stats = self.evaluator.sampling_stats()
        if self.spend is not None:
            stats.update(self.spend.stats())
        return stats


def install(
    config: LiveConfig | None = None,
    *,
    provider: TracerProvider | None = None,
    exporter: SpanExporter | None = None,
    sinks: Iterable[Any] = (),
    on_result: ResultCallback | Iterable[ResultCallback] | None = None,
    suite: Any = None,
    wrap_existing: bool = True,
    verdict_exporter: SpanExporter | None = None,
    evaluation_span_exporter: SpanExporter | None = None,
    spend_window: SpendWindow | None = None,
    **settings: Any,
) -> Installation | None:
    """Put tooltrail in front of ``provider``'s processors; ``None`` when disabled.

    ``provider``: default the global SDK provider; if none is set, a new one (resource from
    ``OTEL_*`` variables) becomes global. ``exporter``: also export tagged spans with it.
    ``sinks``: more trace sinks (objects or ``fn(CompletedTrace)``). ``on_result``: callbacks
    for inline results. ``suite``: a ``TestSuite`` or a path. ``settings``: any ``LiveConfig``
    field (``out=``, ``results=``, ``grace_ms=``...), over the environment. With a suite,
    plug-in checks are loaded first (``tooltrail.checks.plugins``: installed entry points and
    ``TOOLTRAIL_PLUGINS``); one that cannot be loaded raises ``PluginError``.
    ``verdict_exporter``: with a suite, every trace is also exported through it once judged,
    its verdict on its root span (``tooltrail.verdict``: ``pipeline.verdicts``), for a
    collector's tail sampling. ``evaluation_span_exporter``: where the evaluation spans go
    (``TOOLTRAIL_EVALUATION_SPANS``; default an OTLP exporter the ``OTEL_EXPORTER_OTLP_*``
    variables configure). ``spend_window``: the judge's spend window, instead of the one
    ``TOOLTRAIL_JUDGE_BUDGET_USD`` and ``TOOLTRAIL_JUDGE_BUDGET_PER`` make (one shared with other
    processes, ``pipeline.spend_window.SpendState.shared``, or on a clock of its own).
    """
    if suite is not None and not isinstance(suite, (str, os.PathLike)):
        suite_object, settings["suite"] = suite, None
    else:
        suite_object, settings["suite"] = None, suite
    config = LiveConfig.from_env(**settings) if config is None else config
    if not config.enabled:
        _log.info("tooltrail: live pipeline disabled (TOOLTRAIL_ENABLED=false)")
        return None
    if suite_object is not None or config.suite is not None:
        load_plugins()  # installed plug-ins and TOOLTRAIL_PLUGINS, before the suite's check
    with _lock:
        provider = provider if provider is not None else _global_provider()
        existing = _existing(provider)
        if existing is not None:
            _log.warning("tooltrail: already installed on this tracer provider; keeping it")
            return existing
        trace_sinks: list[TraceSink] = list(sinks_of(sinks))
        file_sink = evaluator = None
        if config.out:
            file_sink = OtlpFileSink(
                config.out,
                format=config.out_format or _format_of(config.out),
                compression=config.out_compression,
                max_bytes=config.out_max_bytes,
            )
            trace_sinks.insert(0, file_sink)
        chosen_suite = suite_object if suite_object is not None else config.suite
        spend = spend_window
        if chosen_suite is not None:
            if isinstance(chosen_suite, (str, os.PathLike)):
                from tooltrail.suite import TestSuite

                chosen_suite = TestSuite.load(Path(chosen_suite))
            per, budget = config.judge_budget_per, config.judge_budget_usd
            if spend is None and per is not None and budget is not None:
                spend = SpendWindow(budget, per=per)
            if spend is not None:
                require_price(chosen_suite, config.judge_overrides())
            evaluator = InlineEvaluator(
                chosen_suite,
                on_result=on_result,
                results_path=config.results,
                redaction=config.redaction(),
                revision_window_s=config.revision_window_ms / 1000,
                max_revisions=config.max_revisions,
                max_kept_spans=config.revision_max_spans,
                judge_overrides=config.judge_overrides(),
                judge_queue=config.judge_queue,
                # Queued traces' spans are let go by the buffer: the queue bounds them instead.
                judge_queue_spans=config.max_buffered_spans,
                traffic=config.traffic(),
                spend=spend,
                forward_to=[ExporterSink(verdict_exporter)] if verdict_exporter else (),
            )
            origins = None
            if config.evaluation_events or config.evaluation_spans:
                from tooltrail.origins import Origins

                origins = Origins(
                    evaluator.suite, judge_model=config.judge_model, traffic=config.traffic()
                )
            if config.evaluation_events:
                from tooltrail.pipeline.evaluation_events import EvaluationEventEmitter

                evaluator.add_callback(EvaluationEventEmitter(origins=origins))
            if config.evaluation_spans:
                from tooltrail.pipeline.evaluation_spans import (
                    EvaluationSpanEmitter,
                    otlp_span_exporter,
                )
                from tooltrail.scores import EventOptions

                evaluator.add_callback(
                    EvaluationSpanEmitter(
                        evaluation_span_exporter or otlp_span_exporter(),
                        options=EventOptions(suite=evaluator.suite.name, origins=origins),
                    )
                )
            # A line per verdict on the ``tooltrail.verdicts`` logger, printed only when the
            # application gave it a handler (``pipeline.console``).
            evaluator.add_callback(logger_verdicts(redaction=config.redaction()))
            trace_sinks.append(evaluator)
        buffer = (
            TraceBuffer(
                *trace_sinks,
                grace_s=config.grace_ms / 1000,
                max_age_s=config.max_age_ms / 1000,
                max_traces=config.max_traces,
                max_spans=config.max_spans_per_trace,
                max_buffered_spans=config.max_buffered_spans,
                # plus the time limits of a trace's checks (``checks.timelimit``): the
                # evaluator is not reported stuck before they are up
                sink_timeout_s=config.sink_timeout_ms / 1000
                + (evaluation_time_limit(evaluator.suite.cases) if evaluator else 0.0),
                shutdown_timeout_s=config.shutdown_timeout_ms / 1000,
            )
            if trace_sinks
            else None
        )
        downstream: list[SpanProcessor] = _take_processors(provider) if wrap_existing else []
        if exporter is not None:
            downstream.append(BatchSpanProcessor(exporter))
        if buffer is not None:
            downstream.append(buffer)
        processor = ToolArgsProcessor(*downstream, redaction=config.redaction())
        provider.add_span_processor(processor)
        installation = Installation(
            provider, processor, config, buffer, evaluator, file_sink, trace_sinks, spend
        )
        _installed[id(provider)] = installation
        if config.handle_sigterm and buffer is not None:
            exit_on_sigterm()
        return installation


_installed: dict[int, Installation] = {}


def _existing(provider: TracerProvider) -> Installation | None:
    installation = _installed.get(id(provider))
    if installation is not None and installation.provider is provider:
        return installation
    return None


def _global_provider() -> TracerProvider:
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        return current
    provider = TracerProvider(resource=Resource.create())
    trace.set_tracer_provider(provider)
    installed = trace.get_tracer_provider()
    if not isinstance(installed, TracerProvider):  # another provider won a race
        raise RuntimeError("the global tracer provider is not an OpenTelemetry SDK TracerProvider")
    return installed


def _take_processors(provider: TracerProvider) -> list[SpanProcessor]:
    """Remove and return the provider's processors, so they run behind tooltrail's
    (``pipeline.sdk.take_processors``). Where that cannot be done, the existing processors
    stay where they are (they then see spans before tooltrail tags and redacts them)."""
    taken = take_processors(provider)
    if taken is None:
        _log.warning("tooltrail: cannot wrap this provider's processors; they see untagged spans")
        return []
    return taken


def exit_on_sigterm() -> bool:
    """Make SIGTERM exit through ``sys.exit`` (status 143), so ``atexit`` runs: the tracer
    provider's shutdown then evaluates the held traces and exports their events. Only when
    SIGTERM still has its default action (the application's own handler wins) and from the
    main thread (where Python runs handlers). True when installed."""
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return False
        signal.signal(signal.SIGTERM, _exit_for_signal)
    except (ValueError, OSError, AttributeError):  # no SIGTERM, or not settable here
        return False
    return True


def _exit_for_signal(signum: int, frame: object) -> None:
    sys.exit(128 + signum)


def _format_of(path: str) -> str:
    return "proto" if path.endswith((".pb", ".proto", ".binpb")) else "json"


def install_from_environment() -> None:
    """The ``opentelemetry_post_instrument`` entry point: ``opentelemetry-instrument`` calls it
    after configuring the SDK. Installs only when ``TOOLTRAIL_ENABLED`` is true; never raises."""
    if os.environ.get("TOOLTRAIL_ENABLED", "").strip().lower() not in ("1", "true", "yes", "on"):
        return
    try:
        install()
    except Exception as exc:  # noqa: BLE001 - never break the host application
        _log.warning("tooltrail: could not install the live pipeline: %s", exc)
