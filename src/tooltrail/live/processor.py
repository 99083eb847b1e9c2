"""``ToolArgsProcessor``: tags tool-call spans with ``tool_name``/``tool_args`` and hides secrets.

It wraps the processors a user already has (``ToolArgsProcessor(BatchSpanProcessor(exporter))``)
so they only ever see tagged, redacted spans. Whatever the instrumentation's dialect, a tool
span leaves with ``tool_name``, ``tool_args`` (canonical JSON: sorted keys, compact) and its
argument-bearing attributes and events redacted and capped. When a wrapped processor looks at
spans as they start, what is known then is written onto the live span in ``on_start``; at
``on_end`` (attributes frozen) a copy is passed on only when something changed after that.
Other spans pass through untouched, after a first look built from the dialect readers' tables.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from itertools import islice
from typing import Any

import orjson
from opentelemetry.context import Context
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor

from tooltrail.live.deferral import DeferredEnds, delivers_later
from tooltrail.live.redact import Redaction, clean_attribute, tool_args_text
from tooltrail.live.spancopy import copy_span
from tooltrail.pipeline import sdk
from tooltrail.pipeline.buffer import TraceBuffer
from tooltrail.pipeline.calls import (
    MARKER_KEYS,
    SpanView,
    may_be_tool_call,
    name_may_be_tool_call,
    read_tool_call,
)
from tooltrail.pipeline.throttle import ThrottledWarning

_log = logging.getLogger(__name__)

TOOL_NAME = "tool_name"
TOOL_ARGS = "tool_args"
#: Set (true) when ``tool_args`` was cut by the size cap and is no longer JSON.
TOOL_ARGS_TRUNCATED = "tool_args_truncated"
_OWN_KEYS = frozenset({TOOL_NAME, TOOL_ARGS, TOOL_ARGS_TRUNCATED})
_CANONICAL = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
_MISSING = object()
#: Spans tagged at start whose end is still awaited; beyond this the oldest are forgotten
#: (their end then takes the slower, copying path: nothing is lost).
_MAX_PENDING = 1 << 16
#: Span names whose half of the first look is remembered; a name past them is tested each
#: time (span names are few in a healthy application, but nothing promises it).
_MAX_NAMES = 4096


class ToolArgsProcessor(SpanProcessor):
    """A span processor that tags and redacts tool-call spans, then calls ``processors`` in order.

    ``redaction``: which keys and values to hide and the size caps (default ``Redaction()``).
    ``read_call``: ``span -> call | None`` (default: the shared dialect readers).
    ``tag_on_start``: see the attribute of that name.
    ``defer``: finish tool spans' ends on a worker thread (see ``deferred``); default: when
    every wrapped processor delivers later anyway. ``max_deferred``: tool spans queued at once;
    beyond it a span is finished on the application's thread (counted in ``deferred.inline``).
    Never raises into the application: a failure is logged at most once a minute and the span
    is passed on as it is. Spans are read through ``pipeline.sdk.READERS`` as they are when the
    processor is built.
    """

    def __init__(
        self,
        *processors: SpanProcessor,
        redaction: Redaction | None = None,
        read_call: Any = None,
        tag_on_start: bool | None = None,
        defer: bool | None = None,
        max_deferred: int = 8192,
    ) -> None:
        self.processors: tuple[SpanProcessor, ...] = tuple(processors)
        #: The processors whose ``on_start`` does something, and the SDK's ``_on_ending`` hooks
        #: that do (most are empty).
        self._starters = tuple(p for p in processors if sdk.hook_acts(p, "on_start"))
        self._ending_hooks = sdk.ending_hooks(processors)
        #: How spans are read (``pipeline.sdk``): the SDK's fields, or the public API.
        self._spans = sdk.READERS
        self._read_name_and_attributes = self._spans.name_and_attributes
        self._read_attributes = self._spans.attributes
        self.redaction = redaction if redaction is not None else Redaction()
        # The core's first look screens tool spans' strings. Imported here, not with this
        # module: the engine's imports cost 45 ms, which an agent that only tags spans pays
        # once it builds a processor (one that evaluates traces loads the engine anyway).
        from tooltrail.convert.engine import use_compiled_redaction

        use_compiled_redaction()
        self._read = read_call if read_call is not None else read_tool_call
        #: Tag tool spans when they start (so wrapped processors' ``on_start`` sees the tags),
        #: not only at the end. Default: when a wrapped processor looks at spans at start
        #: (tooltrail's ``TraceBuffer`` does not look at attributes), since writing onto a live
        #: span costs more than copying an ended one.
        self.tag_on_start = (
            any(not isinstance(p, TraceBuffer) for p in self._starters)
            if tag_on_start is None
            else tag_on_start
        )
        #: span id -> attribute values right after on_start tagged it.
        self._tagged: dict[int, tuple[Any, ...]] = {}
        #: span name -> ``name_may_be_tool_call(name)``: every span of the application is looked
        #: at, and one look-up costs a third of the name's two tests (13 against 54 ns).
        self._names: dict[str, bool] = {}
        self._warn = ThrottledWarning(_log)
        self.errors = 0
        if not self.tag_on_start and len(self._starters) == 1:
            starter = self._starters[0]
            if isinstance(starter, TraceBuffer):
                # Nothing of ours to do as a span starts, and a buffer's ``on_start`` only
                # queues the span and cannot raise: the SDK calls it straight (an attribute
                # of the instance is found before the class's method), one frame fewer on
                # every span's start (121 -> 76 ns).
                self.on_start = starter.on_start  # type: ignore[method-assign]
        if defer is None:
            defer = bool(processors) and all(delivers_later(p) for p in processors)
        #: The queue of tool spans whose end is finished off the application's threads, or
        #: ``None`` when ends are finished synchronously.
        self.deferred: DeferredEnds | None = (
            DeferredEnds(self._finish_end, max_deferred) if defer else None
        )

    # -- span lifecycle -------------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.tag_on_start:
            self._tag_if_tool(span)
        for processor in self._starters:
            try:
                processor.on_start(span, parent_context=parent_context)
            except Exception:  # noqa: BLE001
                self._failed(f"run {type(processor).__name__}.on_start")

    def _tag_if_tool(self, span: Span) -> None:
        try:
            read = self._read_name_and_attributes  # every span passes here: see ``pipeline.sdk``
            name, raw = read(span)
            named = self._names.get(name)
            if named is None:
                named = self._learn_name(name)
            if named or not MARKER_KEYS.isdisjoint(raw):
                call = self._read(SpanView(span, raw))
                if call is not None:
                    self._tag_started(span, raw, call)
        except Exception:  # noqa: BLE001 - never break the host application
            self._failed("tag a started span")

    def _learn_name(self, name: str) -> bool:
        named = name_may_be_tool_call(name)
        if len(self._names) < _MAX_NAMES:
            self._names[name] = named
        return named

    def _on_ending(self, span: Span) -> None:
        """The SDK's hook between a span's end time and ``on_end`` (see
        ``pipeline.sdk.ending_hooks``), passed on to the wrapped processors that use it."""
        for processor, hook in self._ending_hooks:
            try:
                hook(span)
            except Exception:  # noqa: BLE001
                self._failed(f"run {type(processor).__name__}._on_ending")

    def on_end(self, span: ReadableSpan) -> None:
        try:
            read = self._read_name_and_attributes
            name, raw = read(span)
            named = self._names.get(name)
            if named is None:
                named = self._learn_name(name)
            if named or not MARKER_KEYS.isdisjoint(raw):
                self._tool_end(span, raw)
                return
        except Exception:  # noqa: BLE001
            self._failed("tag an ended span")
        # ``_pass_on`` written out: most spans are not tools, and every one passes here
        for processor in self.processors:
            try:
                processor.on_end(span)
            except Exception:  # noqa: BLE001
                self._failed(f"run {type(processor).__name__}.on_end")

    def _tool_end(self, span: ReadableSpan, raw: Mapping[str, Any]) -> None:
        """A span the first look kept: queued for the worker (``deferred``), or tagged here."""
        out = span
        try:
            deferred = self.deferred
            if deferred is not None and deferred.put(span):
                return
            out = self._tagged_end(span, raw)
        except Exception:  # noqa: BLE001
            self._failed("tag an ended span")
        self._pass_on(out)

    def _finish_end(self, span: ReadableSpan) -> None:
        """The rest of a tool span's ``on_end``: tag, redact, copy, pass on (worker thread)."""
        out = span
        try:
            out = self._tagged_end(span, self._read_attributes(span))
        except Exception:  # noqa: BLE001
            self._failed("tag an ended span")
        self._pass_on(out)

    def _pass_on(self, span: ReadableSpan) -> None:
        for processor in self.processors:
            try:
                processor.on_end(span)
            except Exception:  # noqa: BLE001
                self._failed(f"run {type(processor).__name__}.on_end")

    def shutdown(self) -> None:
        if self.deferred is not None:
            self.deferred.close()
        for processor in self.processors:
            try:
                processor.shutdown()
            except Exception:  # noqa: BLE001
                self._failed(f"shut down {type(processor).__name__}")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        if self.deferred is not None and not self.deferred.finish_queued(deadline):
            return False
        flushed = True
        for processor in self.processors:
            left_ms = int((deadline - time.monotonic()) * 1000)
            if left_ms <= 0:
                return False
            try:
                flushed = processor.force_flush(left_ms) is not False and flushed
            except Exception:  # noqa: BLE001
                self._failed(f"flush {type(processor).__name__}")
                flushed = False
        return flushed

    # -- tagging ----------------------------------------------------------------------------

    def tagged(self, span: ReadableSpan) -> ReadableSpan:
        """``span`` as it should leave: itself for non-tool spans or when nothing changed since
        the start, else a copy with ``tool_name``/``tool_args`` and redacted attributes/events."""
        name, raw = self._read_name_and_attributes(span)
        if not may_be_tool_call(name, raw):
            return span
        return self._tagged_end(span, raw)

    def _tagged_end(self, span: ReadableSpan, raw: Mapping[str, Any]) -> ReadableSpan:
        if self._tagged:
            snapshot = self._tagged.pop(span.context.span_id, None)
            if snapshot is not None and snapshot == _fingerprint(self._spans.events(span), raw):
                return span
        call = self._read(SpanView(span, raw))
        if call is None:
            return span
        attributes = dict(raw)
        changed = False
        for key, value in self._updates(attributes, call).items():
            if attributes.get(key, _MISSING) != value:
                attributes[key] = value
                changed = True
        # the span's own sequence of events (``span.events`` builds a tuple of it: 0.6 us)
        original_events = self._spans.events(span)
        events = self._clean_events(original_events) if len(original_events) else None
        if not changed and events is None:
            return span
        return copy_span(
            span, attributes, original_events if events is None else events, self._spans
        )

    def _tag_started(self, span: Span, raw: Mapping[str, Any], call: Any) -> None:
        span.set_attributes(self._updates(dict(raw), call))
        if len(self._tagged) >= _MAX_PENDING:
            try:
                del self._tagged[next(iter(self._tagged))]
            except (RuntimeError, StopIteration, KeyError):  # raced with another thread
                pass
        self._tagged[span.context.span_id] = _fingerprint(
            self._spans.events(span), self._read_attributes(span)
        )

    def _updates(self, attributes: Mapping[str, Any], call: Any) -> dict[str, Any]:
        """What a tool span's attributes must become: ``tool_name``, ``tool_args`` and the
        redacted values. Common case first: the arguments' canonical JSON and every plain
        string attribute screened together show nothing to hide (one call into the core's
        first look when it is installed: ``Redaction.strings_need_no_cleaning``)."""
        rules = self.redaction
        args_text = None
        plain = True
        if call.args is not None:
            try:
                args_text = orjson.dumps(call.args, option=_CANONICAL).decode()
            except TypeError:  # integers beyond 64 bits: the full path
                plain = False
            else:
                plain = "null" not in args_text and len(args_text) <= rules.max_args_bytes
        if plain and rules.strings_need_no_cleaning(attributes, _OWN_KEYS, args_text):
            if args_text is None:
                return {TOOL_NAME: call.name}
            return {TOOL_NAME: call.name, TOOL_ARGS: args_text}
        updates = self._redacted(attributes)
        updates.update(self._tool_attributes(call))
        return updates

    def _redacted(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """The attributes (other than tooltrail's own) whose values redaction or caps change,
        with their new values. Plain strings are screened together in one pass first."""
        rules = self.redaction
        texts: list[tuple[str, str]] = []
        updates: dict[str, Any] = {}
        for key, value in attributes.items():
            kind = type(value)
            if kind is str:
                if key not in _OWN_KEYS:
                    texts.append((key, value))
            elif kind is not int and kind is not float and kind is not bool:
                cleaned, hidden = clean_attribute(rules, value)
                if hidden:
                    updates[key] = cleaned
        if texts and not rules.texts_need_no_cleaning([text for _, text in texts]):
            for key, text in texts:
                cleaned, hidden = clean_attribute(rules, text)
                if hidden:
                    updates[key] = cleaned
        return updates

    def _tool_attributes(self, call: Any) -> dict[str, Any]:
        attributes: dict[str, Any] = {TOOL_NAME: call.name}
        if call.args is not None:
            text, truncated = tool_args_text(self.redaction, call.args)
            attributes[TOOL_ARGS] = text
            if truncated:
                attributes[TOOL_ARGS_TRUNCATED] = True
        return attributes

    def _clean_events(self, events: Sequence[Event]) -> list[Event] | None:
        """The events with argument-bearing attributes redacted, or ``None`` if none changed."""
        out: list[Event] | None = None
        for i, event in enumerate(events):
            attributes = event.attributes or {}
            cleaned_attributes: dict[str, Any] | None = None
            for key, value in attributes.items():
                cleaned, hidden = clean_attribute(self.redaction, value)
                if hidden:
                    if cleaned_attributes is None:
                        cleaned_attributes = dict(attributes)
                    cleaned_attributes[key] = cleaned
            if cleaned_attributes is not None and out is None:
                out = list(islice(events, i))  # the SDK's ``BoundedList`` has no slices
            if out is not None:
                if cleaned_attributes is None:
                    out.append(event)
                else:
                    out.append(Event(event.name, cleaned_attributes, event.timestamp))
        return out

    def _failed(self, what: str) -> None:
        self.errors += 1
        self._warn.warn(what, "tooltrail: could not %s; the span was passed on as it was", what)


def _fingerprint(events: Sequence[Any], raw: Mapping[str, Any]) -> tuple[Any, ...]:
    """What must be unchanged at the end for the start's tagging to still hold: the attribute
    items (values compare by identity first) and the number of events."""
    return (len(events), *raw.items())
