"""``read_traces``: OTLP files -> ``EvalTrace`` per trace or conversation, memory kept small.

Transcript files (chat logs of runs, ``convert.transcripts``) among the inputs are recognised
by their content and read as the spans of their runs, in their place among the files.

Spans of one trace arrive children first and may be spread over many records and files, so
a trace is known to be complete only after its last span. Two ways to know when that is:

- one pass (small inputs, stdin, ``group="conversation"``): keep ``TraceFacts`` of every
  trace (a parent link per span, compact facts of tool, agent, model and root spans; about a
  third of what the decoded spans take) and emit all traces when the input is exhausted;
- two passes (regular files of ``TWO_PASS_BYTES`` or more, ``group="trace"``): the first pass
  counts each trace's spans reading only their ids (``otlp.read.census``), and its log records
  (``otlp.read.mixed.trace_counts``); the second emits each trace right after its last span or
  log record. Memory is then bounded by the traces open at one point of the input plus one
  counter per trace.

Either way traces come out in the order their last span (or log record) appears in the input,
so both ways give the same output. Each step (reading up to the next trace and converting it)
runs with the cyclic garbage collector paused (see ``tooltrail.gc_pause``); the caller's code
between two traces runs with the collector as the caller left it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any, Literal

from tooltrail.convert import transcripts
from tooltrail.convert.collect import TraceCollector, conversations
from tooltrail.convert.decoded import Decoded, is_log_record
from tooltrail.convert.engine import Decoding, Needs, decoding_for, engine
from tooltrail.convert.facts import as_trace_facts
from tooltrail.gc_pause import gc_paused
from tooltrail.model import EvalTrace
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.span import Diagnostic

Group = Literal["trace", "conversation"]
GROUPS: tuple[str, ...] = ("trace", "conversation")

#: Inputs at least this big (bytes on disk, all regular files) are read in two passes.
TWO_PASS_BYTES = 64 << 20


def check_group(group: str) -> None:
    """A ``ValueError`` naming the choices unless ``group`` is one of ``GROUPS``."""
    if group not in GROUPS:
        raise ValueError(f"group must be one of {', '.join(GROUPS)}, not {group!r}")


def read_traces(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    group: Group = "trace",
    limits: Limits | None = None,
    diagnostics: list[Diagnostic] | None = None,
    two_pass: bool | None = None,
    usage: bool = False,
    content: bool = False,
) -> Iterator[EvalTrace]:
    """``EvalTrace`` per trace (or per conversation) of OTLP files, directories, globs, ``-``.

    Records that cannot be read are skipped with a ``Diagnostic`` appended to
    ``diagnostics``; so is the excess of a trace over ``limits.max_spans_per_trace`` (that
    trace is then marked ``partial``). ``two_pass`` forces (True) or forbids (False) reading
    files twice to emit traces early; by default big inputs are (see the module docstring).
    ``usage`` also notes what each trace used, for the budget checks: ``metadata["llm_calls"]``,
    ``"token_usage"`` and ``"turn_latency_ms"`` (off by default: it costs conversion time).
    ``content`` also reads what was said and returned: each ``ToolCall.result`` and
    ``EvalTrace.turns`` (each turn's input and reply); off by default for the same reason.
    """
    check_group(group)
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if two_pass is None:
        two_pass = _large(items)
    if two_pass and group == "trace" and not any(os.fspath(p) == "-" for p in items):
        return _paused(_two_passes(items, limits, diagnostics, usage, content))
    return _paused(_one_pass(items, group, limits, diagnostics, usage, content))


def _paused(steps: Iterator[EvalTrace]) -> Iterator[EvalTrace]:
    """The traces of ``steps``, each one made with the cyclic garbage collector paused."""
    while True:
        with gc_paused():
            trace = next(steps, None)
        if trace is None:
            return
        yield trace


def _spans(
    items: list[Any], limits: Limits | None, diagnostics: list[Diagnostic] | None, content: bool
) -> Iterator[Decoded]:
    """The spans of ``items``, with the log records that may carry their content among them."""
    from tooltrail.otlp import expand_paths
    from tooltrail.otlp.read.mixed import read_files_spans_and_logs  # imported when used

    # Spans no dialect reader looks at (see ``dialects.INTEREST``) come as bare heads, and
    # (with the compiled core) the spans it reads the facts of in parts: ``decoding_for``.
    decoding = decoding_for(Needs(content=content))
    limits = limits or DEFAULT_LIMITS
    files = list(expand_paths(items, diagnostics))
    if not any(transcripts.is_transcript_file(path, limits) for path, _ in files):
        return read_files_spans_and_logs(
            files,
            limits=limits,
            diagnostics=diagnostics,
            interest=decoding.interest,
            decoders=engine().decoders(decoding),
        )
    return _with_transcripts(files, limits, diagnostics, decoding)


def _with_transcripts(
    files: list[tuple[str, bool]],
    limits: Limits,
    diagnostics: list[Diagnostic] | None,
    decoding: Decoding,
) -> Iterator[Decoded]:
    """The spans of ``files`` in file order, transcripts' runs read as spans
    (``convert.transcripts``) and every other file as OTLP."""
    from tooltrail.otlp.read.mixed import read_files_spans_and_logs

    decoders = engine().decoders(decoding)
    for path, named in files:
        if transcripts.is_transcript_file(path, limits):
            for _, spans in transcripts.transcript_spans(path, limits, diagnostics):
                yield from spans
        else:
            yield from read_files_spans_and_logs(
                [(path, named)],
                limits=limits,
                diagnostics=diagnostics,
                interest=decoding.interest,
                decoders=decoders,
            )


def _one_pass(
    items: list[Any],
    group: Group,
    limits: Limits | None,
    diagnostics: list[Diagnostic] | None,
    usage: bool,
    content: bool = False,
) -> Iterator[EvalTrace]:
    collector = TraceCollector(limits, diagnostics, usage=usage, content=content)
    last: dict[str, int] = {}
    for position, span in enumerate(_spans(items, limits, diagnostics, content)):
        if is_log_record(span):
            collector.add_log(span)
        else:
            collector.add(span)
        last[span.trace_id] = position  # (a trace ends with its last span or log record)
    traces = collector.take_all()
    traces.sort(key=lambda t: last[t.trace_id])
    if group == "trace":
        for trace in traces:
            yield collector.build([trace])
        return
    for members in sorted(conversations(traces), key=lambda m: max(last[t.trace_id] for t in m)):
        yield collector.build(members)


def _two_passes(
    items: list[Any],
    limits: Limits | None,
    diagnostics: list[Diagnostic] | None,
    usage: bool,
    content: bool = False,
) -> Iterator[EvalTrace]:
    from tooltrail.otlp.read.mixed import trace_counts

    # pass 1: how many spans and log records each trace has (ids only for spans)
    remaining = trace_counts(items) if limits is None else trace_counts(items, limits=limits)
    collector = TraceCollector(limits, diagnostics, usage=usage, content=content)
    for span in _spans(items, limits, diagnostics, content):
        trace_id = span.trace_id
        if is_log_record(span):
            collector.add_log(span)
        else:
            collector.add(span)
        left = remaining.get(trace_id, 0) - collector.spans_in(span)
        remaining[trace_id] = left
        if left == 0:
            facts = collector.open.pop(trace_id, None)
            if facts is None:  # only log records that carry nothing: no trace to emit
                continue
            if facts.span_count:
                yield collector.build([facts])
            else:
                collector.without_spans(as_trace_facts(facts))
    for facts in collector.take_all():  # counted but never read (the files changed, ...)
        yield collector.build([facts])


def _large(items: list[Any]) -> bool:
    from tooltrail.otlp import expand_paths

    total = 0
    for path, _ in expand_paths(items):
        if path == "-":
            return False
        try:
            total += os.path.getsize(path)
        except OSError:
            continue
    return total >= TWO_PASS_BYTES
