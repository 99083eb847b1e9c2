"""Item 1 of issue 14's load on the live path, shared by ``test_live_load.py`` and
``benchmarks/bench_live_load.py``.

``threads`` application threads each create ``traces`` agent traces of 13 spans: an agent
root, three tool spans, each with an HTTP child and a nested tool span that has its own HTTP
child. One root in ``LEAK_EVERY`` never ends. The pipeline is ``live.install`` with a suite
that requires the three tools, a results file, a sink recording span ids (optionally taking
``sink_delay_s`` per trace), and what the checks need to tell whether every trace arrived
exactly once and no complete trace was judged on a fragment.
"""

from __future__ import annotations

import json
import resource
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider

from tooltrail import live
from tooltrail.live import CompletedTrace, tool
from tooltrail.suite import TestSuite

SPANS_PER_TRACE = 13
LEAK_EVERY = 20
TOOLS = ("search_orders", "fetch_invoice", "send_summary")
AGENT = "load_agent"

SUITE = TestSuite.from_dict(
    {
        "name": "load",
        "cases": [
            {
                "id": "three-tools",
                "match": {"agent_name": AGENT},
                "required_tools": [*TOOLS, *(f"{name}_detail" for name in TOOLS)],
            }
        ],
    }
)


def packed(ids: set[int] | list[int]) -> bytes:
    """Span ids, sorted, eight bytes each: the harness's own memory stays small."""
    return struct.pack(f"{len(ids)}Q", *sorted(ids))


def unpacked(data: bytes) -> set[int]:
    return set(struct.unpack(f"{len(data) // 8}Q", data))


class SpanIdRecorder:
    """A sink keeping only packed ids (so it does not itself hold the spans), optionally slow."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.pieces: list[tuple[int, bool, str, bytes]] = []

    def export_trace(self, trace: CompletedTrace) -> None:
        ids = packed([span.context.span_id for span in trace.spans])
        self.pieces.append((trace.trace_id, trace.partial, trace.reason, ids))
        if self.delay_s:
            time.sleep(self.delay_s)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def shutdown(self) -> None:
        return None


@dataclass
class LoadRun:
    """What one run produced, for the checks."""

    #: trace id -> spans created in it (packed) and whether its root ended.
    created: dict[int, tuple[bytes, bool]]
    recorder: SpanIdRecorder
    results: list[dict[str, Any]]
    stats: Any
    load_s: float
    shutdown_s: float
    #: The process's peak resident memory when shutdown returned (before the checks).
    peak_rss_mb: float
    extra: dict[str, Any] = field(default_factory=dict)


def one_trace(tracer: trace_api.Tracer, index: int, leak: bool) -> tuple[int, set[int]]:
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT}
    root = tracer.start_span(f"invoke_agent {AGENT}", attributes=attributes)
    ids = {root.get_span_context().span_id}
    with trace_api.use_span(root, end_on_exit=not leak):
        for name in TOOLS:
            with tool(name, {"order_id": f"ORD-{index}", "page": 1}, tracer=tracer) as outer:
                ids.add(outer.span.get_span_context().span_id)
                ids.add(_http(tracer, "https://api.example.com/orders"))
                with tool(f"{name}_detail", {"id": index}, tracer=tracer) as inner:
                    ids.add(inner.span.get_span_context().span_id)
                    ids.add(_http(tracer, "https://api.example.com/detail"))
    return root.get_span_context().trace_id, ids


def _http(tracer: trace_api.Tracer, url: str) -> int:
    attributes = {"http.request.method": "GET", "url.full": url, "http.response.status_code": 200}
    with tracer.start_as_current_span("GET", attributes=attributes) as span:
        return span.get_span_context().span_id


def run_load(
    tmp: Path,
    *,
    threads: int,
    traces: int,
    sink_delay_s: float = 0.0,
    sinks_before: tuple[Any, ...] = (),
    sample_s: float | None = None,
    **settings: Any,
) -> LoadRun:
    """Run the load through ``live.install`` on a fresh provider; shut down; read results.

    ``sinks_before``: sinks placed before the recorder. ``sample_s``: sample
    ``stats().spans_held`` this often during the load (``extra["spans_held"]``).
    """
    provider = TracerProvider()
    recorder = SpanIdRecorder(sink_delay_s)
    results_path = tmp / "results.jsonl"
    installation = live.install(
        provider=provider,
        suite=SUITE,
        results=str(results_path),
        sinks=[*sinks_before, recorder],
        evaluation_events=False,
        **settings,
    )
    assert installation is not None
    tracer = provider.get_tracer("load")
    created: dict[int, tuple[bytes, bool]] = {}
    lock = threading.Lock()

    def work(worker: int) -> None:
        mine = {}
        for i in range(traces):
            leak = i % LEAK_EVERY == LEAK_EVERY - 1
            trace_id, ids = one_trace(tracer, worker * traces + i, leak)
            mine[trace_id] = (packed(ids), not leak)
        with lock:
            created.update(mine)

    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while sample_s is not None and not done.wait(sample_s):
            samples.append(installation.stats().spans_held)  # type: ignore[union-attr]

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.monotonic()
    workers = [threading.Thread(target=work, args=(w,)) for w in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    load_s = time.monotonic() - started
    done.set()
    sampler.join()
    stopping = time.monotonic()
    installation.shutdown()
    shutdown_s = time.monotonic() - stopping
    peak_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results = [_brief(json.loads(line)) for line in results_path.read_bytes().splitlines()]
    run = LoadRun(
        created=created,
        recorder=recorder,
        results=results,
        stats=installation.stats(),
        load_s=load_s,
        shutdown_s=shutdown_s,
        peak_rss_mb=peak_rss_mb,
    )
    run.extra["spans_held"] = samples
    return run


def _brief(line: dict[str, Any]) -> dict[str, Any]:
    keys = ("trace_id", "partial", "reason", "verdict", "passed")
    return {key: line.get(key) for key in keys}


def problems(run: LoadRun) -> list[str]:
    """Every way the run broke the buffer's promises, as readable lines (empty: all held).

    Each trace arrives exactly once: whole and complete, or given up (``dropped``) and then
    counted and named in the results, or, for a trace whose root never ended, in partial
    pieces holding each span once. One result line per trace; no FAIL on a trace that was
    complete in the process.
    """
    out: list[str] = []
    seen: Counter[int] = Counter()
    pieces: dict[int, list[tuple[bool, str, bytes]]] = {}
    for trace_id, partial, reason, ids in run.recorder.pieces:
        seen.update(unpacked(ids))
        pieces.setdefault(trace_id, []).append((partial, reason, ids))
    duplicates = sum(1 for count in seen.values() if count > 1)
    if duplicates:
        out.append(f"{duplicates} spans delivered more than once")
    lines: dict[str, list[dict[str, Any]]] = {}
    for line in run.results:
        lines.setdefault(line["trace_id"], []).append(line)
    stats = run.stats
    dropped_traces = set()
    for trace_id, (packed_ids, complete) in run.created.items():
        ids = unpacked(packed_ids)
        hex_id = f"{trace_id:032x}"
        got = pieces.get(trace_id, [])
        trace_lines = lines.get(hex_id, [])
        # A trace whose root never ended reaches the sinks without it, so the suite's
        # ``match`` on the agent's name may select none of its pieces: no line then.
        if len(trace_lines) != 1 and (complete or trace_lines):
            shape = [(partial, reason, len(piece) // 8) for partial, reason, piece in got]
            out.append(
                f"trace {hex_id}: {len(trace_lines)} result lines (delivered as {shape}; "
                f"sinks stuck {stats.sinks_stuck}, traces a stuck sink missed "
                f"{stats.sink_skipped})"
            )
            continue
        if not trace_lines:
            continue
        line = trace_lines[0]
        if line["reason"] == "dropped":
            dropped_traces.add(trace_id)
            if not line["partial"] or line["verdict"] != "partial":
                out.append(f"trace {hex_id}: given up but not labelled partial")
            continue
        delivered = {span_id for _, _, piece in got for span_id in unpacked(piece)}
        if complete:
            if len(got) != 1 or got[0][0] or delivered != ids:
                shape = [(partial, reason, len(piece) // 8) for partial, reason, piece in got]
                out.append(f"trace {hex_id}: complete in the process, delivered as {shape}")
            if line["partial"] or line["verdict"] != "pass":
                out.append(f"trace {hex_id}: complete in the process, verdict {line['verdict']}")
        else:
            if line["verdict"] != "partial":
                out.append(f"trace {hex_id}: root never ended, verdict {line['verdict']}")
            if not delivered <= ids:
                out.append(f"trace {hex_id}: spans of another trace delivered with it")
    if stats.traces_dropped != len(dropped_traces):
        out.append(
            f"stats count {stats.traces_dropped} traces given up, results name "
            f"{len(dropped_traces)}"
        )
    strangers = set(lines) - {f"{trace_id:032x}" for trace_id in run.created}
    if strangers:
        out.append(f"{len(strangers)} traces in the results that were never created")
    return out
