"""tooltrail inside the agent process: tag tool spans, hold complete traces, evaluate inline.

    from tooltrail import live
    live.install(suite="policies.yaml", out="traces.otlp.jsonl")

The pieces compose like the OpenTelemetry SDK's own (each stage takes the next)::

    provider.add_span_processor(
        ToolArgsProcessor(                      # tool_name/tool_args, redaction, size caps
            BatchSpanProcessor(OTLPSpanExporter()),
            TraceBuffer(                        # whole traces, off the application's threads
                OtlpFileSink("traces.otlp.jsonl"),
                InlineEvaluator("policies.yaml", on_result=print_verdicts),
            ),
        )
    )

Only this package touches the OpenTelemetry SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.lazy import lazy_exports

#: Public name -> the module that defines it: imported on first use (PEP 562), so that
#: ``import tooltrail.live`` costs the agent's start-up nothing until a piece is used.
_EXPORTS: dict[str, str] = {
    "BufferStats": "tooltrail.pipeline.buffer",
    "CallbackSink": "tooltrail.pipeline.buffer",
    "canonical_json": "tooltrail.live.redact",
    "CompletedTrace": "tooltrail.pipeline.buffer",
    "DEFAULT_KEYS": "tooltrail.live.redact",
    "ENVIRONMENT": "tooltrail.live.config",
    "ExporterSink": "tooltrail.pipeline.sinks",
    "InlineEvaluator": "tooltrail.pipeline.inline",
    "install": "tooltrail.live.install",
    "install_from_environment": "tooltrail.live.install",
    "Installation": "tooltrail.live.install",
    "LiveConfig": "tooltrail.live.config",
    "OtlpFileSink": "tooltrail.pipeline.sinks",
    "Redaction": "tooltrail.live.redact",
    "tool": "tooltrail.live.decorator",
    "TOOL_ARGS": "tooltrail.live.processor",
    "TOOL_ARGS_TRUNCATED": "tooltrail.live.processor",
    "TOOL_NAME": "tooltrail.live.processor",
    "ToolArgsProcessor": "tooltrail.live.processor",
    "ToolCallSpan": "tooltrail.live.decorator",
    "TraceBuffer": "tooltrail.pipeline.buffer",
    "TraceSink": "tooltrail.pipeline.buffer",
}

if TYPE_CHECKING:
    from tooltrail.live.config import ENVIRONMENT, LiveConfig
    from tooltrail.live.decorator import ToolCallSpan, tool
    from tooltrail.live.install import Installation, install, install_from_environment
    from tooltrail.live.processor import (
        TOOL_ARGS,
        TOOL_ARGS_TRUNCATED,
        TOOL_NAME,
        ToolArgsProcessor,
    )
    from tooltrail.live.redact import DEFAULT_KEYS, Redaction, canonical_json
    from tooltrail.pipeline.buffer import (
        BufferStats,
        CallbackSink,
        CompletedTrace,
        TraceBuffer,
        TraceSink,
    )
    from tooltrail.pipeline.inline import InlineEvaluator
    from tooltrail.pipeline.sinks import ExporterSink, OtlpFileSink


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "DEFAULT_KEYS",
    "ENVIRONMENT",
    "TOOL_ARGS",
    "TOOL_ARGS_TRUNCATED",
    "TOOL_NAME",
    "BufferStats",
    "CallbackSink",
    "CompletedTrace",
    "ExporterSink",
    "InlineEvaluator",
    "Installation",
    "LiveConfig",
    "OtlpFileSink",
    "Redaction",
    "ToolArgsProcessor",
    "ToolCallSpan",
    "TraceBuffer",
    "TraceSink",
    "canonical_json",
    "install",
    "install_from_environment",
    "tool",
]
