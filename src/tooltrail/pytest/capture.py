"""Collect the spans a test emits, in memory, from a test-scoped provider and the global one.

The OpenTelemetry global tracer provider can be set only once per process, so tests cannot
each install their own. Instead one :class:`CaptureRouter` processor is attached to the global
SDK provider (installed first when the process has none) and routes every ended span to the
capture that is active at that moment: the innermost ``capture_scope`` of the current context
(a run or a turn of ``trail.run_turns``), else the test that is running. A span started inside a
scope keeps going to that scope even when it ends on another thread.

This is the plugin's only module that touches the OpenTelemetry SDK.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider

from tooltrail.settings import TEST_MARK


class SpanCapture:
    """Ended SDK spans, in end order, collected for one test, run or turn (thread-safe)."""

    def __init__(self) -> None:
        self._spans: list[ReadableSpan] = []
        self._lock = threading.Lock()

    def add(self, span: ReadableSpan) -> None:
        with self._lock:
            self._spans.append(span)

    def spans(self) -> list[ReadableSpan]:
        """A snapshot of the spans collected so far."""
        with self._lock:
            return list(self._spans)

    def clear(self) -> None:
        with self._lock:
            self._spans.clear()

    def __len__(self) -> int:
        return len(self._spans)


_scope: ContextVar[SpanCapture | None] = ContextVar("tooltrail_capture_scope", default=None)


@contextmanager
def capture_scope(capture: SpanCapture) -> Iterator[SpanCapture]:
    """Route spans started in this context (and their descendants) to ``capture``."""
    token = _scope.set(capture)
    try:
        yield capture
    finally:
        _scope.reset(token)


class CaptureRouter(SpanProcessor):
    """Sends each ended span to the capture of its scope, else to ``fallback()``.

    The scope is decided when the span starts (the context's scope, else its parent span's),
    so a span ended on a worker thread still reaches the run that started it.
    """

    def __init__(self, fallback: Callable[[], SpanCapture | None]) -> None:
        self._fallback = fallback
        self._by_span: dict[int, SpanCapture] = {}
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: context_api.Context | None = None) -> None:
        capture = _scope.get()
        if capture is None and span.parent is not None:
            capture = self._by_span.get(span.parent.span_id)
        if capture is not None:
            with self._lock:
                self._by_span[span.context.span_id] = capture
            if span.parent is None:  # a test's run: test traffic wherever its spans go
                span.set_attribute(TEST_MARK, True)

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            capture = self._by_span.pop(span.context.span_id, None)  # type: ignore[union-attr]
        if capture is None:
            capture = self._fallback()
        if capture is not None:
            capture.add(span)

    def shutdown(self) -> None:
        with self._lock:
            self._by_span.clear()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _ActiveTests:
    """The captures of the tests running now; the newest receives unscoped global spans."""

    def __init__(self) -> None:
        self._stack: list[SpanCapture] = []
        self._lock = threading.Lock()

    def push(self, capture: SpanCapture) -> None:
        with self._lock:
            self._stack.append(capture)

    def remove(self, capture: SpanCapture) -> None:
        with self._lock:
            if capture in self._stack:
                self._stack.remove(capture)

    def top(self) -> SpanCapture | None:
        stack = self._stack
        return stack[-1] if stack else None


ACTIVE_TESTS = _ActiveTests()
_GLOBAL_ROUTER = CaptureRouter(ACTIVE_TESTS.top)
_global_lock = threading.Lock()
_attached_to: set[int] = set()
_warned_about: set[int] = set()

GlobalHookup = Literal["installed", "attached", "unsupported"]


def connect_global_provider() -> GlobalHookup:
    """Make spans of the global tracer provider reach the active test's capture.

    - no global provider yet: install an SDK ``TracerProvider`` (no exporters) as the global one;
    - an SDK ``TracerProvider`` is already global: add the router to it (its own processors and
      exporters keep working);
    - any other provider: its spans cannot be observed; warn (once per provider) and return
      ``"unsupported"``.

    Idempotent: the router is added to a provider at most once.
    """
    with _global_lock:
        provider = trace_api.get_tracer_provider()
        hookup: GlobalHookup = "attached"
        if isinstance(provider, trace_api.ProxyTracerProvider):
            trace_api.set_tracer_provider(TracerProvider())
            provider = trace_api.get_tracer_provider()
            hookup = "installed"
        if isinstance(provider, TracerProvider):
            if id(provider) not in _attached_to:
                provider.add_span_processor(_GLOBAL_ROUTER)
                _attached_to.add(id(provider))
            return hookup
        if id(provider) in _warned_about:
            return "unsupported"
        _warned_about.add(id(provider))
    warnings.warn(
        f"tooltrail: the global tracer provider is a {type(provider).__name__}, not an "
        "OpenTelemetry SDK TracerProvider, so spans sent through it are not captured; "
        "give the code under test trail.provider instead",
        stacklevel=2,
    )
    return "unsupported"


def scoped_provider(capture: SpanCapture) -> TracerProvider:
    """A fresh SDK provider whose spans go to ``capture`` (or to the scope they start in)."""
    provider = TracerProvider()
    provider.add_span_processor(CaptureRouter(lambda: capture))
    return provider
