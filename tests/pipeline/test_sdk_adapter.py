"""``pipeline.sdk``, the one place tooltrail reaches inside opentelemetry-sdk: its probe, and the
same answers, tags and traces whether spans are read through the SDK's fields or through the
public API. CI runs this file against the newest SDK and against the oldest supported one;
every test id names the SDK version it ran against (``[sdk-1.45.2]``)."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from test_live_buffer import Collect
from test_live_helpers import corpus_spans, provider_with, replay

from tooltrail.live import ToolArgsProcessor, TraceBuffer
from tooltrail.live.spancopy import CopiedSpan, copy_span
from tooltrail.pipeline import sdk

SDK_VERSION = importlib.metadata.version("opentelemetry-sdk")
#: Corpus runs with tool spans, arguments, events and nesting from four dialects.
SCENARIOS = [
    ("strands", "f_tool_error_retry"),
    ("pydantic-ai", "i_complex_args"),
    ("traceloop", "h_nested_agent_tool"),
    ("google-adk", "a_refund_ok"),
]
LOOKUP = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": "lookup",
    "gen_ai.tool.call.arguments": '{"order": "A-1", "api_key": "sk-123456789012345678901234"}',
}
REMOTE_PARENT = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(1))


@pytest.fixture(autouse=True, params=[SDK_VERSION], ids=lambda version: f"sdk-{version}")
def sdk_version(request: pytest.FixtureRequest) -> str:
    """Puts the installed SDK's version into every test id of this file."""
    return str(request.param)


def test_the_probe_accepts_the_supported_sdk_and_names_its_version() -> None:
    assert sdk.SDK_VERSION == SDK_VERSION
    assert sdk.release_of(SDK_VERSION) >= sdk.OLDEST_SDK  # type: ignore[operator]
    assert sdk.LAYOUT_KNOWN is True
    assert sdk.READERS is sdk.FIELDS


# -- the fields and the public API give the same answers ----------------------------------------


def _answers(readers: sdk.SpanReaders, span: Any) -> tuple[Any, ...]:
    name, attributes = readers.name_and_attributes(span)
    return (
        name,
        dict(attributes),
        dict(readers.attributes(span)),
        tuple(readers.events(span)),
        readers.trace_id(span),
        readers.trace_link(span),
    )


class CompareReaders(SpanProcessor):
    """Compares both readers on every live span (at start) and ended span (at end)."""

    def __init__(self) -> None:
        self.compared: Counter[str] = Counter()
        self.differences: list[tuple[str, Any, Any]] = []

    def _compare(self, when: str, span: Any) -> None:
        fields, public = _answers(sdk.FIELDS, span), _answers(sdk.PUBLIC, span)
        self.compared[when] += 1
        if fields != public:
            self.differences.append((when, fields, public))

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        self._compare("start", span)

    def on_end(self, span: ReadableSpan) -> None:
        self._compare("end", span)


def test_the_fields_and_the_public_api_agree_on_started_and_ended_sdk_spans() -> None:
    compare = CompareReaders()
    provider = provider_with(compare)
    for folder, scenario in SCENARIOS:
        replay(provider, corpus_spans(folder, scenario), attributes_at_start=False)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span(
        "server", context=trace.set_span_in_context(NonRecordingSpan(REMOTE_PARENT))
    ) as server:
        server.add_event("received", {"bytes": 12})
        with tracer.start_as_current_span("child", attributes={"n": 1}):
            pass
    provider.shutdown()
    assert compare.differences == []
    assert compare.compared["start"] == compare.compared["end"] > 40


def test_the_readers_agree_on_spans_built_by_the_constructor_and_on_copies() -> None:
    context, parent = SpanContext(7, 8, False), SpanContext(7, 9, True)
    built = ReadableSpan(
        name="execute_tool lookup",
        context=context,
        parent=parent,
        resource=Resource.get_empty(),
        attributes=BoundedAttributes(attributes={"gen_ai.tool.name": "lookup", "n": 3}),
        events=(Event("e", {"k": "v"}, timestamp=5),),
    )
    rootless = ReadableSpan(name="root", context=SpanContext(7, 10, False))
    copied = copy_span(built, {"tool_name": "lookup"}, [Event("f", {}, timestamp=6)])
    for span in (built, rootless, copied):
        assert _answers(sdk.FIELDS, span) == _answers(sdk.PUBLIC, span)
    assert sdk.FIELDS.trace_link(built) == (7, True)  # a remote parent: a local root
    assert sdk.FIELDS.trace_link(rootless) == (7, True)
    assert sdk.FIELDS.trace_id(ReadableSpan(name="no context")) is None
    assert sdk.FIELDS.trace_link(ReadableSpan(name="no context")) is None


def _properties(span: ReadableSpan) -> dict[str, Any]:
    return {
        "json": json.loads(span.to_json()),
        "attributes": dict(span.attributes or {}),
        "events": span.events,
        "links": span.links,
        "resource": span.resource,
        "scope": span.instrumentation_scope,
        "dropped": (span.dropped_attributes, span.dropped_events, span.dropped_links),
    }


def test_a_copy_of_the_fields_equals_a_copy_through_the_constructor() -> None:
    provider = TracerProvider()
    tracer = provider.get_tracer("t", "1.0")
    parent = tracer.start_span("agent")
    span = tracer.start_span(
        "execute_tool lookup",
        context=trace.set_span_in_context(parent),
        attributes={"gen_ai.tool.name": "lookup", "key": "secret"},
    )
    span.add_event("called", {"args": "{}"})
    span.end()
    attributes, events = (
        {"gen_ai.tool.name": "lookup", "tool_name": "lookup"},
        [Event("called", {"args": "[redacted]"}, timestamp=1)],
    )
    fast = copy_span(span, attributes, events, sdk.FIELDS)
    slow = copy_span(span, attributes, events, sdk.PUBLIC)
    assert type(fast) is type(slow) is CopiedSpan
    assert vars(fast).keys() == vars(slow).keys()
    assert _properties(fast) == _properties(slow)
    assert sdk.PUBLIC.copy(span, CopiedSpan, attributes, events) is None
    provider.shutdown()


# -- a layout the probe does not know -----------------------------------------------------------


class DictAttributesSpan(ReadableSpan):
    """A span class keeping its attributes in a plain dict: no ``BoundedAttributes._dict``."""

    def __init__(self, *args: Any, attributes: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, attributes=dict(attributes or {}), **kwargs)


class RenamedSpan(ReadableSpan):
    """A span class whose public ``name`` is not its ``_name`` field."""

    @property
    def name(self) -> str:
        return f"renamed {self._name}"


def test_the_probe_refuses_a_span_class_laid_out_otherwise() -> None:
    assert sdk.layout_known(ReadableSpan) is True
    assert sdk.layout_known(DictAttributesSpan) is False
    assert sdk.layout_known(RenamedSpan) is False


def test_the_probe_refuses_an_sdk_older_than_the_oldest_supported() -> None:
    assert sdk.layout_known(version="1.38.0") is False
    assert sdk.layout_known(version="unknown") is True  # then the layout decides


def test_a_span_the_fields_cannot_be_read_of_is_read_through_the_public_api() -> None:
    span = DictAttributesSpan(name="n", context=SpanContext(7, 8, False), attributes={"a": 1})
    assert sdk.FIELDS.name_and_attributes(span) == ("n", {"a": 1})
    assert sdk.FIELDS.attributes(span) == {"a": 1}

    class Decoded:
        """Not an SDK span (say, an OTLP span a receiver decoded)."""

    assert sdk.readers_for(Decoded) is sdk.PUBLIC
    assert sdk.readers_for(ReadableSpan) is sdk.READERS


_OLD_SDK_RUN = textwrap.dedent(
    """
    import json, os, sys
    import opentelemetry.sdk.version
    opentelemetry.sdk.version.__version__ = "1.38.0"  # an SDK the probe does not accept
    from tooltrail.pipeline import sdk
    assert sdk.LAYOUT_KNOWN is False and sdk.READERS is sdk.PUBLIC
    sys.path[:0] = sys.argv[1].split(os.pathsep)
    from test_sdk_adapter import run_pipeline
    print(json.dumps(run_pipeline(sys.argv[2] == "start", sys.argv[3] == "deferred")))
    """
)


# -- the whole pipeline: the same tags and traces either way ------------------------------------


class Starter(SpanProcessor):
    """A wrapped processor that looks at spans as they start (so tags go on at start)."""

    def __init__(self) -> None:
        self.started = 0

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        self.started += 1


def _span_summary(span: ReadableSpan) -> str:
    return json.dumps(
        [
            span.name,
            type(span).__name__,
            dict(span.attributes or {}),
            [(e.name, dict(e.attributes or {})) for e in span.events],
            span.parent is None or span.parent.is_remote,
            [span.dropped_attributes, span.dropped_events, span.dropped_links],
        ],
        sort_keys=True,
        default=list,
    )


def run_pipeline(tag_at_start: bool, deferred: bool) -> list[Any]:
    """The corpus runs and a trace under a remote parent through a real ``TracerProvider``,
    ``ToolArgsProcessor`` and ``TraceBuffer``: what the buffer's sink got, trace by trace."""
    sink = Collect()
    buffer = TraceBuffer(sink, grace_s=0)
    wrapped: list[SpanProcessor] = [Starter()] if tag_at_start else []
    processor = ToolArgsProcessor(*wrapped, buffer, defer=deferred)
    assert processor.tag_on_start is tag_at_start
    assert (processor.deferred is not None) is deferred
    provider = provider_with(processor)
    for folder, scenario in SCENARIOS:
        replay(provider, corpus_spans(folder, scenario), attributes_at_start=not tag_at_start)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span(
        "server", context=trace.set_span_in_context(NonRecordingSpan(REMOTE_PARENT))
    ):
        with tracer.start_as_current_span("execute_tool lookup", attributes=LOOKUP) as tool:
            tool.add_event("gen_ai.tool.message", {"content": "card 4111 1111 1111 1111"})
    with tracer.start_as_current_span("invoke_agent", attributes={"gen_ai.agent.name": "a"}):
        for n in range(3):
            with tracer.start_as_current_span("execute_tool lookup", attributes=LOOKUP) as tool:
                tool.set_attribute("gen_ai.tool.call.id", f"call_{n}")
    provider.shutdown()
    assert processor.errors == 0
    traces = [[t.partial, t.reason, sorted(_span_summary(s) for s in t.spans)] for t in sink.traces]
    return sorted(traces, key=json.dumps)


def _counting(readers: sdk.SpanReaders, calls: Counter[str]) -> sdk.SpanReaders:
    """``readers`` with every function counting its calls in ``calls``."""

    def count(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any) -> Any:
            calls[name] += 1
            return function(*args)

        return counted

    return dataclasses.replace(
        readers,
        **{
            f.name: count(f.name, getattr(readers, f.name))
            for f in dataclasses.fields(readers)
            if f.name != "kind"
        },
    )


MODES = [(True, False), (False, False), (False, True)]
MODE_IDS = ["tags-at-start", "tags-at-end", "deferred-ends"]


@pytest.mark.parametrize(("tag_at_start", "deferred"), MODES, ids=MODE_IDS)
def test_the_public_api_path_gives_the_same_traces_as_the_fields(
    monkeypatch: pytest.MonkeyPatch, tag_at_start: bool, deferred: bool
) -> None:
    fast = run_pipeline(tag_at_start, deferred)
    calls: Counter[str] = Counter()
    monkeypatch.setattr(sdk, "READERS", _counting(sdk.PUBLIC, calls))
    slow = run_pipeline(tag_at_start, deferred)
    assert slow == fast
    replayed = sum(len(corpus_spans(folder, scenario)) for folder, scenario in SCENARIOS)
    assert len(fast) == replayed + 2  # a replayed span is a trace of its own
    assert sorted(len(t[2]) for t in fast)[-2:] == [2, 4]
    assert sum('"tool_name"' in span for t in fast for span in t[2]) >= 10
    assert sum('"CopiedSpan"' in span for t in fast for span in t[2]) >= 5
    # every reader the pipeline uses was the public API's
    assert calls["name_and_attributes"] and calls["trace_id"] and calls["trace_link"]
    assert calls["copy"]


@pytest.mark.parametrize(("tag_at_start", "deferred"), MODES, ids=MODE_IDS)
def test_an_sdk_the_probe_refuses_gets_the_public_api_and_the_same_traces(
    tag_at_start: bool, deferred: bool, tmp_path: Any
) -> None:
    """A fresh interpreter whose SDK reports an unsupported version: the probe refuses it at
    import, says so once, and the pipeline gives what the fields give here."""
    tests = os.pathsep.join(p for p in sys.path if p.startswith(str(Path(__file__).parents[1])))
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            _OLD_SDK_RUN,
            tests,
            "start" if tag_at_start else "end",
            "deferred" if deferred else "inline",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "opentelemetry-sdk 1.38.0 keeps spans in a way tooltrail does not know" in run.stderr
    assert json.loads(run.stdout) == json.loads(json.dumps(run_pipeline(tag_at_start, deferred)))


# -- processors ----------------------------------------------------------------------------------


def test_the_processors_of_a_provider_are_taken_and_none_without_its_internals() -> None:
    first, second = SpanProcessor(), SpanProcessor()
    provider = provider_with(first, second)
    assert sdk.take_processors(provider) == [first, second]
    assert sdk.take_processors(provider) == []
    assert sdk.take_processors(object()) is None


class Ending(SpanProcessor):
    """Notes the spans the SDK's ``_on_ending`` hook saw."""

    def __init__(self) -> None:
        self.ending: list[str] = []

    def _on_ending(self, span: Any) -> None:
        self.ending.append(span.name)


class NoHooks:
    """A duck-typed processor (not a ``SpanProcessor``) without ``_on_ending``."""

    def on_start(self, span: Any, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: Any) -> None:
        pass

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_only_hooks_that_do_something_are_called() -> None:
    plain, ending, bare = SpanProcessor(), Ending(), NoHooks()
    assert sdk.hook_acts(plain, "on_start") is False
    assert sdk.hook_acts(ending, "_on_ending") is True
    assert sdk.ending_hooks([plain, ending, bare]) == ((ending, ending._on_ending),)


@pytest.mark.skipif(
    not hasattr(SpanProcessor, "_on_ending"), reason="this SDK has no _on_ending hook"
)
def test_the_sdks_ending_hook_reaches_the_wrapped_processors() -> None:
    ending = Ending()
    processor = ToolArgsProcessor(ending, NoHooks())  # type: ignore[arg-type]
    provider = provider_with(processor)
    provider.get_tracer("t").start_span("s").end()
    assert ending.ending == ["s"]
    assert processor.errors == 0
