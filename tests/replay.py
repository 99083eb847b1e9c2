"""The replay suite (issue 21): every fixture ``tooltrail eval`` reads, replayed into a real
``tooltrail serve`` over loopback and into a real ``TraceBuffer`` fed through the
OpenTelemetry SDK, on the schedules real exporters produce; each trace's final verdict and
calls must equal ``tooltrail eval``'s on the file.

Pieces (each used by ``tests/serve/test_replay.py`` and ``benchmarks/replay_matrix.py``):

- ``recordings()``: the fixtures of ``tests/data``, ``../shared/corpus`` and
  ``../shared/external/agentevals-otlp`` (when present), decoded once, with the verdict rows
  ``tooltrail eval``'s code path gives each trace of the file (``read_traces`` +
  ``cases_for`` + ``evaluate_cases``) under ``SUITE``.
- ``schedules``: how the decoded spans and log records go out (``Step`` lists). Time is
  scaled: ``Timing`` maps the SDK's seconds (grace 2 s, BatchSpanProcessor tick 5 s) onto a
  receiver run with a short ``--grace``.
- ``ServeTarget`` / ``LiveTarget``: the receivers; ``run_replays`` sends many replays at once
  (each with trace ids of its own) and ``judge`` compares the results file with the file's
  verdicts.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from fixtures import DATA, EXTERNAL, SHARED_CORPUS
from opentelemetry.sdk.trace.id_generator import IdGenerator

from tooltrail.checks.plugins import load_plugins
from tooltrail.convert import read_traces, to_eval_trace
from tooltrail.otlp import LogRecord, Span
from tooltrail.otlp.read.mixed import read_spans_and_logs
from tooltrail.pipeline.inline import verdict_of
from tooltrail.score import evaluate_cases
from tooltrail.suite import TestSuite

PLUGIN = "replay_checks"

#: One case for every trace: fails without calls (lost calls show in the verdict), fails on an
#: exactly repeated call (duplicated calls show), and the plug-in's fingerprint score holds the
#: calls themselves, so equal rows mean equal calls.
SUITE = """\
name: replay
cases:
  - id: replay
    match: all
    evaluators:
      - {name: replay_trajectory, threshold: 1.0}
      - {name: no_redundant_tool_calls, threshold: 1.0}
"""

_NOT_FIXTURES = (".truth.json", ".md", ".txt", ".yaml", ".py")


def fixture_paths() -> list[Path]:
    """Every trace file of ``tests/data``, the shared corpus and the external corpus (when
    present), a file of the shared corpus equal to one of ``tests/data`` counted once."""
    seen: set[str] = set()
    paths: list[Path] = []
    for root in (DATA, SHARED_CORPUS, EXTERNAL):
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if not path.is_file() or path.name.endswith(_NOT_FIXTURES):
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if digest not in seen:
                seen.add(digest)
                paths.append(path)
    return paths


def fixture_name(path: Path) -> str:
    for root, label in ((DATA, "data"), (SHARED_CORPUS, "corpus"), (EXTERNAL, "external")):
        if path.is_relative_to(root):
            return f"{label}/{path.relative_to(root)}"
    return str(path)


def load_suite() -> TestSuite:
    """``SUITE`` with its plug-in check registered (as ``tooltrail eval --plugin`` does)."""
    load_plugins((PLUGIN,))
    return TestSuite.from_dict(yaml.safe_load(SUITE))


# -- the file's verdicts ------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """One trace's verdict: ``pass``/``fail``/``partial`` and its results rows (every score,
    explanations included: the fingerprint names the calls)."""

    verdict: str
    rows: tuple[str, ...]

    def fingerprint(self) -> dict[str, Any]:
        """The trajectory the plug-in check saw (calls, turns, reply hash)."""
        for row in self.rows:
            for score in json.loads(row)["scores"]:
                if score["name"] == "replay_trajectory":
                    return json.loads(score["explanation"])  # type: ignore[no-any-return]
        return {}

    @property
    def calls(self) -> int:
        return len(self.fingerprint().get("calls", []))


def difference(got: Outcome, want: Outcome) -> str:
    """What differs between a replay's verdict and the file's, in a few words."""
    text = f"{got.verdict} with {got.calls} calls, the file {want.verdict} with {want.calls}"
    mine, theirs = got.fingerprint(), want.fingerprint()
    what = [key for key in ("calls", "turns", "reply") if mine.get(key) != theirs.get(key)]
    if what:
        text += f"; differ: {', '.join(what)}"
    if mine.get("calls") != theirs.get("calls"):
        names = [c[0] for c in mine.get("calls", [])], [c[0] for c in theirs.get("calls", [])]
        if names[0] != names[1]:
            text += f" {names[0]} vs {names[1]}"
    return text


def rows_of(results: Iterable[dict[str, Any]]) -> tuple[str, ...]:
    """Results rows, comparable across runs (the trace id a row names left out)."""
    out = []
    for row in results:
        row = {k: v for k, v in row.items() if k != "trace_id"}
        out.append(json.dumps(row, sort_keys=True))
    return tuple(out)


def judge_eval_traces(traces: Iterable[Any], suite: TestSuite) -> dict[str, Outcome]:
    out: dict[str, Outcome] = {}
    for trace in traces:
        cases = suite.cases_for(trace)
        results = evaluate_cases(cases, trace) if cases else []
        rows = rows_of(r.to_dict() for r in results)
        out[trace.trace_id] = Outcome(verdict_of(trace.partial, results), rows)
    return out


def eval_file(path: Path, suite: TestSuite) -> dict[str, Outcome]:
    """What ``tooltrail eval`` says of each trace of ``path``."""
    return judge_eval_traces(read_traces([str(path)]), suite)


def eval_items(items: Sequence[Span | LogRecord], suite: TestSuite) -> dict[str, Outcome]:
    """What the converter says of each trace of these decoded items (the receivers' path)."""
    by_trace: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        by_trace[item.trace_id].append(item)
    traces = [to_eval_trace(v) for k, v in by_trace.items() if any(_is_span(i) for i in v)]
    return judge_eval_traces(traces, suite)


def _is_span(item: Any) -> bool:
    return isinstance(item, Span)


@dataclass
class Recording:
    """A fixture decoded once: its spans and log records, and the file's verdicts."""

    path: Path
    name: str
    spans: list[Span]
    logs: list[LogRecord]
    #: trace id -> ``tooltrail eval``'s verdict on the file.
    expected: dict[str, Outcome]
    #: trace id -> verdict of the file's spans alone (the live path takes no log records).
    expected_spans_only: dict[str, Outcome]
    #: Traces with a root span (no parent id): the others may be judged partial.
    rooted: set[str]


def load_recording(path: Path, suite: TestSuite) -> Recording | None:
    """``path`` decoded, or ``None`` when it holds no span ``tooltrail eval`` reads."""
    spans: list[Span] = []
    logs: list[LogRecord] = []
    for item in read_spans_and_logs([str(path)], diagnostics=[]):
        if isinstance(item, LogRecord):
            if item.trace_id:
                logs.append(item)
        elif isinstance(item, Span):
            spans.append(item)
    if not spans:
        return None
    expected = {k: v for k, v in eval_file(path, suite).items() if k in {s.trace_id for s in spans}}
    if not expected:
        return None
    return Recording(
        path=path,
        name=fixture_name(path),
        spans=spans,
        logs=logs,
        expected=expected,
        expected_spans_only=eval_items(spans, suite) if logs else expected,
        rooted={s.trace_id for s in spans if not s.parent_span_id},
    )


def recordings(suite: TestSuite, paths: Iterable[Path] | None = None) -> list[Recording]:
    out = []
    for path in fixture_paths() if paths is None else paths:
        recording = load_recording(path, suite)
        if recording is not None:
            out.append(recording)
    return out


def content_key(recording: Recording) -> str:
    """Equal for two files holding the same telemetry (a scenario's ``.otlp.jsonl`` and
    ``.otlp.pb``): the full matrix replays one of them."""
    digest = hashlib.sha256()
    for span in sorted(recording.spans, key=lambda s: (s.trace_id, s.span_id)):
        head = (span.trace_id, span.span_id, span.parent_span_id, span.name, span.end_ns)
        digest.update(json.dumps([head, dict(span.attributes)], default=str).encode())
    for record in recording.logs:
        digest.update(
            json.dumps([record.trace_id, record.span_id, record.body], default=str).encode()
        )
    return digest.hexdigest()


def distinct(recordings: Iterable[Recording]) -> list[Recording]:
    seen: set[str] = set()
    out = []
    for recording in recordings:
        key = content_key(recording)
        if key not in seen:
            seen.add(key)
            out.append(recording)
    return out


# -- schedules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Scaled time. Schedules are written in real seconds (BatchSpanProcessor ticks every
    ``tick`` = 5 s, offsets of 0 to 5 s) against a receiver waiting ``real_grace`` (2 s,
    serve's ``--grace`` when issue 21 was filed); a replay runs them ``scale`` times faster
    against a receiver whose ``--grace`` and ``--logs-grace`` are ``grace``. A piece more than
    ``real_grace`` after its trace's root is *beyond* the grace: the replay waits for the
    trace's verdict before sending it, so it is late whatever the load on the machine. Gaps
    within the grace are shortened to at most ``cap`` seconds, so a slow machine never pushes
    them past it."""

    grace: float = 1.0
    real_grace: float = 2.0
    tick: float = 5.0

    @property
    def scale(self) -> float:
        return self.grace / self.real_grace

    @property
    def cap(self) -> float:
        return 0.05 * self.grace


@dataclass
class Step:
    """One export request: spans or log records, at ``at`` real seconds after the replay's
    start, sent ``copies`` times back to back."""

    at: float
    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    copies: int = 1
    #: Filled by ``plan``: traces whose verdict must be written before this step goes.
    after_verdict: set[str] = field(default_factory=set)


def by_end(spans: Iterable[Span]) -> list[Span]:
    return sorted(spans, key=lambda s: (s.end_ns, s.start_ns, s.span_id))


def by_process(spans: Iterable[Span]) -> list[list[Span]]:
    """Spans grouped by resource (one group per process), in order of first appearance."""
    groups: dict[str, list[Span]] = {}
    for span in spans:
        key = json.dumps(dict(span.resource), sort_keys=True, default=str)
        groups.setdefault(key, []).append(span)
    return list(groups.values())


def whole(rec: Recording, rng: random.Random, timing: Timing) -> list[Step]:
    """(a) The whole file: one traces request, then its log records."""
    return [
        Step(0.0, spans=list(rec.spans)),
        *([Step(0.0, logs=list(rec.logs))] if rec.logs else []),
    ]


def span_by_span(rec: Recording, rng: random.Random, timing: Timing) -> list[Step]:
    """(b) One request per span in end-time order, each span's log records right after it."""
    records: dict[str, list[LogRecord]] = defaultdict(list)
    for record in rec.logs:
        records[record.span_id].append(record)
    steps = []
    for span in by_end(rec.spans):
        steps.append(Step(0.0, spans=[span]))
        if records.get(span.span_id):
            steps.append(Step(0.0, logs=records.pop(span.span_id)))
    rest = [r for group in records.values() for r in group]
    if rest:
        steps.append(Step(0.0, logs=rest))
    return steps


def process_batches(rec: Recording, rng: random.Random, timing: Timing) -> list[Step]:
    """(c) Each process (resource) exports on its own BatchSpanProcessor: its spans in end
    order, in batches of 1 to 512 (at most its span count), one batch per tick, its ticks at a
    random offset of 0 to 5 s. Log records go with the first tick of their process's logs
    processor, which ticks at the same offset."""
    steps = []
    for spans in by_process(rec.spans):
        offset = rng.uniform(0.0, timing.tick)
        ordered = by_end(spans)
        tick = 0
        while ordered:
            size = rng.randint(1, min(512, len(ordered)))
            steps.append(Step(offset + tick * timing.tick, spans=ordered[:size]))
            ordered = ordered[size:]
            tick += 1
    if rec.logs:
        steps.append(Step(rng.uniform(0.0, timing.tick), logs=list(rec.logs)))
    return sorted(steps, key=lambda s: s.at)


def logs_at(when: str) -> Callable[[Recording, random.Random, Timing], list[Step]]:
    """(d) The spans at once; their log records ``before`` them, ``within`` the grace after
    them (half of it), or ``beyond`` it (two BatchSpanProcessor ticks later)."""

    def schedule(rec: Recording, rng: random.Random, timing: Timing) -> list[Step]:
        at = {"before": -1.0, "within": timing.real_grace / 2, "beyond": 2 * timing.tick}[when]
        return sorted(
            [Step(0.0, spans=list(rec.spans)), Step(at, logs=list(rec.logs))], key=lambda s: s.at
        )

    return schedule


def interleaved(first: Recording, second: Recording, rng: random.Random) -> list[Step]:
    """(e) Two files' spans, each in end order, merged in small alternating requests (1 to 8
    spans); each file's log records right after the request holding its last span."""
    queues = [by_end(first.spans), by_end(second.spans)]
    logs = [first.logs, second.logs]
    steps = []
    turn = 0
    while any(queues):
        side = turn % 2 if queues[turn % 2] else (turn + 1) % 2
        size = rng.randint(1, 8)
        steps.append(Step(0.0, spans=queues[side][:size]))
        del queues[side][:size]
        if not queues[side] and logs[side]:
            steps.append(Step(0.0, logs=list(logs[side])))
        turn += 1
    return steps


def retried(rec: Recording, rng: random.Random, timing: Timing) -> list[Step]:
    """(f) Per-process requests at once, every one sent twice back to back (an exporter's
    retry after a client timeout), and each once more two ticks later (a retry after a
    longer outage: beyond the grace)."""
    first = [Step(0.0, spans=spans, copies=2) for spans in by_process(rec.spans)]
    if rec.logs:
        first.append(Step(0.0, logs=list(rec.logs), copies=2))
    again = [dataclasses.replace(s, at=2 * timing.tick, copies=1) for s in first]
    return first + again


def other_processes_late(delay: float) -> Callable[[Recording, random.Random, Timing], list[Step]]:
    """(c, fixed) The processes holding a root span export everything at once; every other
    process ``delay`` real seconds later (issue 21: the Go runtime 3 s after the harness).
    Log records go with their process."""

    def schedule(rec: Recording, rng: random.Random, timing: Timing) -> list[Step]:
        steps = []
        for spans in by_process(rec.spans):
            at = 0.0 if any(not s.parent_span_id for s in spans) else delay
            resource = spans[0].resource
            logs = [r for r in rec.logs if dict(r.resource) == dict(resource)]
            steps.append(Step(at, spans=spans))
            if logs:
                steps.append(Step(at, logs=logs))
        placed = {id(r) for step in steps for r in step.logs}
        rest = [r for r in rec.logs if id(r) not in placed]
        if rest:
            steps.append(Step(0.0, logs=rest))
        return sorted(steps, key=lambda s: s.at)

    return schedule


def logs_twice_first(rec: Recording, rng: random.Random, timing: Timing) -> list[Step]:
    """(f, fixed) The same logs request posted twice (a retry after a client timeout), then
    the spans (issue 21's second reproduction)."""
    return [Step(0.0, logs=list(rec.logs), copies=2), Step(0.0, spans=list(rec.spans))]


#: Schedule name -> builder (one recording; ``interleaved`` takes two and is apart).
SCHEDULES: dict[str, Callable[[Recording, random.Random, Timing], list[Step]]] = {
    "a-whole": whole,
    "b-span-by-span": span_by_span,
    "c-process-batches": process_batches,
    "d-logs-before": logs_at("before"),
    "d-logs-within": logs_at("within"),
    "d-logs-beyond": logs_at("beyond"),
    "f-retried": retried,
    "f-logs-twice-first": logs_twice_first,
    "c-other-process-1s": other_processes_late(1.0),
    "c-other-process-3s": other_processes_late(3.0),
}
LOG_SCHEDULES = ("d-logs-before", "d-logs-within", "d-logs-beyond", "f-logs-twice-first")
#: Schedules that differ from ``a-whole`` only for a trace spread over several processes.
PROCESS_SCHEDULES = ("c-other-process-1s", "c-other-process-3s")
INTERLEAVED = "e-interleaved"
#: The live path's schedules: it takes spans only, so the log schedules would repeat (a).
SPAN_SCHEDULES = (
    "a-whole",
    "b-span-by-span",
    "c-process-batches",
    *PROCESS_SCHEDULES,
    INTERLEAVED,
)


# -- one replay ---------------------------------------------------------------------------------


@dataclass
class Replay:
    """A schedule of one fixture (two for ``e-interleaved``), with trace ids of its own."""

    key: str
    schedule: str
    recordings: list[Recording]
    steps: list[Step]
    #: New trace id -> (recording, the file's trace id).
    traces: dict[str, tuple[Recording, str]]
    #: Whether, on a receiver without verdict revisions, the pieces that arrive before the
    #: verdict give another verdict than the file (then a difference is what issue 21 reports).
    late_matters: bool = False
    #: New trace id -> when the request holding its root span was sent (``time.time_ns``).
    root_sent: dict[str, int] = field(default_factory=dict)
    #: Exceptions raised while sending (a refused request, a timeout).
    errors: list[str] = field(default_factory=list)

    @property
    def fixture(self) -> str:
        return " + ".join(r.name for r in self.recordings)


def new_trace_id(key: str, old: str) -> str:
    return hashlib.sha256(f"{key}|{old}".encode()).hexdigest()[:32]


def _renamed(item: Any, ids: dict[str, str]) -> Any:
    return dataclasses.replace(item, trace_id=ids[item.trace_id]) if item.trace_id in ids else item


def build_replay(
    schedule: str, recs: Sequence[Recording], seed: int, timing: Timing, *, live: bool = False
) -> Replay:
    """The replay of ``recs`` on ``schedule``, seeded; ``live``: spans only."""
    key = f"{schedule}|{'|'.join(r.name for r in recs)}|{seed}|{'live' if live else 'serve'}"
    rng = random.Random(key)
    if live:
        recs = [dataclasses.replace(r, logs=[]) for r in recs]
    if schedule == INTERLEAVED:
        steps = interleaved(recs[0], recs[1], rng)
    else:
        steps = SCHEDULES[schedule](recs[0], rng, timing)
    ids: dict[str, str] = {}
    traces: dict[str, tuple[Recording, str]] = {}
    for rec in recs:
        for old in rec.expected:
            ids[old] = new_trace_id(key, old)
            traces[ids[old]] = (rec, old)
    steps = [
        dataclasses.replace(
            step,
            spans=[_renamed(s, ids) for s in step.spans],
            logs=[_renamed(r, ids) for r in step.logs],
        )
        for step in steps
    ]
    plan(steps, timing)
    for step in steps:  # a trace no case selects (one that only builds an agent) gets no verdict
        step.after_verdict = {t for t in step.after_verdict if _selected(traces[t], live)}
    replay = Replay(key=key, schedule=schedule, recordings=list(recs), steps=steps, traces=traces)
    replay.late_matters = late_matters(replay, live=live)
    return replay


def _selected(trace: tuple[Recording, str], live: bool) -> bool:
    """Whether a case selects the trace, as the file reads it: a receiver gives it a verdict."""
    rec, old = trace
    return bool((rec.expected_spans_only if live else rec.expected)[old].rows)


def plan(steps: list[Step], timing: Timing) -> None:
    """Mark each step that comes more than the grace after its traces' root was sent: it
    waits for their verdict."""
    root_at: dict[str, float] = {}
    for step in steps:
        for span in step.spans:
            if not span.parent_span_id:
                root_at.setdefault(span.trace_id, step.at)
        touched = {s.trace_id for s in step.spans} | {r.trace_id for r in step.logs}
        step.after_verdict = {
            t for t in touched if t in root_at and step.at - root_at[t] > timing.real_grace
        }


def delivered_before_verdict(replay: Replay) -> list[Any]:
    """The items a receiver without revisions judges: those sent before a step that waits
    for a verdict, and repeated log records as often as they are sent."""
    items: list[Any] = []
    for step in replay.steps:
        if step.after_verdict:
            break
        items.extend(step.spans)
        items.extend(step.logs * step.copies)
    return items


def late_matters(replay: Replay, *, live: bool) -> bool:
    """Whether a receiver that never revises a verdict would end with another one here."""
    if not any(s.after_verdict or (s.logs and s.copies > 1) for s in replay.steps):
        return False  # everything arrives before the verdict, nothing repeated unmerged
    judged = eval_items(delivered_before_verdict(replay), prediction_suite())
    for new_id, (rec, old) in replay.traces.items():
        want = (rec.expected_spans_only if live else rec.expected)[old]
        got = judged.get(new_id)
        if got is None or got.rows != want.rows:
            return True
    return False


@functools.cache
def prediction_suite() -> TestSuite:
    """``SUITE``, loaded once for every prediction."""
    return load_suite()


# -- receivers ----------------------------------------------------------------------------------


class Verdicts:
    """The lines of a results file, read as they are written: ``wait`` blocks until every
    named trace has one (the event a schedule's late piece waits for)."""

    def __init__(self) -> None:
        self._lines: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._changed = threading.Condition()

    def add(self, line: dict[str, Any]) -> None:
        with self._changed:
            self._lines[line["trace_id"]].append(line)
            self._changed.notify_all()

    def wait(self, trace_ids: Iterable[str], timeout: float) -> bool:
        wanted = set(trace_ids)
        with self._changed:
            return self._changed.wait_for(lambda: wanted <= self._lines.keys(), timeout)

    def lines(self) -> dict[str, list[dict[str, Any]]]:
        with self._changed:
            return {k: list(v) for k, v in self._lines.items()}


class FileTail(threading.Thread):
    """Follows a results file (appended by any process) into ``Verdicts``."""

    def __init__(self, path: Path, verdicts: Verdicts) -> None:
        super().__init__(name="replay-results-tail", daemon=True)
        self.path = path
        self.verdicts = verdicts
        self._halt = threading.Event()
        self._offset = 0
        self._partial = b""

    def run(self) -> None:
        while not self._halt.wait(0.02):
            self.read()

    def read(self) -> None:
        if not self.path.exists():
            return
        with open(self.path, "rb") as handle:
            handle.seek(self._offset)
            data = handle.read()
        self._offset += len(data)
        data = self._partial + data
        *complete, self._partial = data.split(b"\n")
        for raw in complete:
            if raw.strip():
                self.verdicts.add(json.loads(raw))

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.read()


TRANSPORTS = ("http-json", "http-protobuf", "grpc")


class ServeTarget:
    """A real ``tooltrail serve`` (``start_in_thread``) on loopback, fed over ``transport``
    with ``workers`` evaluating processes; ``results.jsonl`` in ``directory``."""

    live = False

    def __init__(self, transport: str, workers: int, timing: Timing, directory: Path) -> None:
        from tooltrail.serve import ServeConfig, start_in_thread

        self.transport = transport
        self.name = f"serve/{transport}/w{workers}"
        self.timing = timing
        directory.mkdir(parents=True, exist_ok=True)
        suite_path = directory / "suite.yaml"
        suite_path.write_text(SUITE, encoding="utf-8")
        self.results = directory / "results.jsonl"
        self.verdicts = Verdicts()
        self.throttled = 0
        config = ServeConfig(
            suite=suite_path,
            grpc_port=0 if transport == "grpc" else None,
            http_port=None if transport == "grpc" else 0,
            workers=workers,
            grace=timing.grace,
            logs_grace=timing.grace,
            results=self.results,
            explanations=True,
            plugins=(PLUGIN,),
        )
        self.receiver = start_in_thread(config)
        self.tail = FileTail(self.results, self.verdicts)
        self.tail.start()
        self._channel: Any = None
        if transport == "grpc":
            import grpc
            from opentelemetry.proto.collector.logs.v1 import logs_service_pb2_grpc
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

            self._channel = grpc.insecure_channel(f"127.0.0.1:{self.receiver.grpc_port}")
            self._traces_stub = trace_service_pb2_grpc.TraceServiceStub(self._channel)
            self._logs_stub = logs_service_pb2_grpc.LogsServiceStub(self._channel)

    def send(self, step: Step) -> None:
        from tooltrail.otlp import encode_request

        if step.spans:
            self._send("traces", encode_request(step.spans))
        if step.logs:
            self._send("logs", logs_request(step.logs))

    def _send(self, signal: str, request: Any) -> None:
        for _ in range(100):
            if self._send_once(signal, request):
                return
            self.throttled += 1
            time.sleep(0.1)
        raise RuntimeError(f"{self.name}: {signal} request refused 100 times")

    def _send_once(self, signal: str, request: Any) -> bool:
        """False when the receiver asked to retry later (503 / RESOURCE_EXHAUSTED)."""
        if self.transport == "grpc":
            import grpc

            stub = self._traces_stub if signal == "traces" else self._logs_stub
            try:
                stub.Export(request, timeout=30)
            except grpc.RpcError as exc:
                if exc.code() in (grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.UNAVAILABLE):
                    return False
                raise
            return True
        from serve_helpers import post

        from tooltrail.otlp import json_line, logs_json_line

        if self.transport == "http-json":
            body = (json_line if signal == "traces" else logs_json_line)(request)
            headers = {"Content-Type": "application/json"}
        else:
            body = request.SerializeToString()
            headers = {"Content-Type": "application/x-protobuf"}
        port = self.receiver.http_port
        assert port is not None
        status, _, answer = post(port, body, headers, path=f"/v1/{signal}")
        if status == 503:
            return False
        if status != 200:
            raise RuntimeError(f"{self.name}: /v1/{signal} answered {status}: {answer[:200]!r}")
        return True

    def stop(self) -> dict[str, Any]:
        """Stop the receiver (what it still holds is judged, partial) and read every line."""
        stats = self.receiver.stop()
        if self._channel is not None:
            self._channel.close()
        self.tail.stop()
        return stats


def logs_request(records: list[LogRecord]) -> Any:
    """Log records as one logs request, a ``ResourceLogs`` per resource (per process)."""
    from tooltrail.otlp import encode_logs_request

    request = None
    groups: dict[str, list[LogRecord]] = {}
    for record in records:
        key = json.dumps(dict(record.resource), sort_keys=True, default=str)
        groups.setdefault(key, []).append(record)
    for group in groups.values():
        part = encode_logs_request(
            group, resource=group[0].resource, scope_name=group[0].scope_name
        )
        if request is None:
            request = part
        else:
            request.resource_logs.extend(part.resource_logs)
    return request


class _RecordedIds(IdGenerator):
    """An SDK id generator handing out the recorded ids of the span being started (set per
    thread just before ``start_span``), so the SDK's spans keep the file's trace and ids."""

    def __init__(self) -> None:
        self.next = threading.local()

    def generate_span_id(self) -> int:
        return int(self.next.span_id)

    def generate_trace_id(self) -> int:
        return int(self.next.trace_id)

    def is_trace_id_random(self) -> bool:
        return False


class LiveTarget:
    """The in-process path: a real ``TraceBuffer`` + ``InlineEvaluator`` (results file) on
    real SDK ``TracerProvider``s, one per process (resource) of a replay. Each step's spans
    are started and ended through the SDK in time order; log records have no way in (the
    live path reads spans only), so a live replay is compared with the file's spans alone."""

    live = True

    def __init__(self, timing: Timing, directory: Path) -> None:
        from tooltrail.pipeline.buffer import TraceBuffer
        from tooltrail.pipeline.inline import InlineEvaluator

        self.name = "live"
        self.timing = timing
        directory.mkdir(parents=True, exist_ok=True)
        self.results = directory / "live-results.jsonl"
        self.verdicts = Verdicts()
        self.throttled = 0
        self.evaluator = InlineEvaluator(
            load_suite(), results_path=self.results, explanations=True, on_result=self._judged
        )
        self.buffer = TraceBuffer(self.evaluator, grace_s=timing.grace)
        self.ids = _RecordedIds()
        self._providers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _judged(self, trace: Any, results: Any) -> None:
        # The results file is flushed at shutdown; this only wakes replays waiting for a
        # verdict. The lines judged are those of the file.
        self.verdicts.add({"trace_id": trace.trace_id})

    def _provider(self, resource: Any) -> Any:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        key = json.dumps(dict(resource), sort_keys=True, default=str)
        with self._lock:
            provider = self._providers.get(key)
            if provider is None:
                provider = TracerProvider(
                    resource=Resource(dict(resource)), id_generator=self.ids, shutdown_on_exit=False
                )
                provider.add_span_processor(self.buffer)
                self._providers[key] = provider
            return provider

    def send(self, step: Step) -> None:
        from opentelemetry import trace as trace_api
        from opentelemetry.context import Context
        from opentelemetry.trace import (
            NonRecordingSpan,
            SpanContext,
            SpanKind,
            Status,
            StatusCode,
            TraceFlags,
        )

        kinds = {1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT,
                 4: SpanKind.PRODUCER, 5: SpanKind.CONSUMER}  # fmt: skip
        statuses = {1: StatusCode.OK, 2: StatusCode.ERROR}
        started: dict[int, Any] = {}
        events = [(s.start_ns, 0, i) for i, s in enumerate(step.spans)]
        events += [(s.end_ns, 1, i) for i, s in enumerate(step.spans)]
        for _, is_end, index in sorted(events):
            span = step.spans[index]
            if is_end:
                live = started.pop(index)
                for event in span.events:
                    live.add_event(event.name, _sdk_attributes(event.attributes), event.time_ns)
                if span.status_code in statuses:
                    live.set_status(Status(statuses[span.status_code], span.status_message or None))
                live.end(end_time=max(span.end_ns, span.start_ns))
                continue
            context = Context()
            if span.parent_span_id:
                parent = SpanContext(
                    int(span.trace_id, 16),
                    int(span.parent_span_id, 16),
                    is_remote=False,
                    trace_flags=TraceFlags(TraceFlags.SAMPLED),
                )
                context = trace_api.set_span_in_context(NonRecordingSpan(parent))
            self.ids.next.trace_id = int(span.trace_id, 16)
            self.ids.next.span_id = int(span.span_id, 16)
            tracer = self._provider(span.resource).get_tracer(span.scope_name or "replay")
            started[index] = tracer.start_span(
                span.name,
                context=context,
                kind=kinds.get(span.kind, SpanKind.INTERNAL),
                attributes=_sdk_attributes(span.attributes),
                start_time=span.start_ns,
            )

    def stop(self) -> dict[str, Any]:
        self.buffer.shutdown()
        with open(self.results, "rb") as handle:
            lines = [json.loads(line) for line in handle if line.strip()]
        self.verdicts = Verdicts()
        for line in lines:
            self.verdicts.add(line)
        return dataclasses.asdict(self.buffer.stats())


def _sdk_attributes(attributes: Any) -> dict[str, Any]:
    """Decoded attribute values as the SDK takes them: lists as tuples; maps and nested
    lists, which OTLP allows and the Python SDK's attributes do not, as their JSON text (what
    Python instrumentations record)."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, dict) or (
            isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value)
        ):
            value = json.dumps(value)
        elif isinstance(value, list):
            value = tuple(value)
        out[key] = value
    return out


# -- running and judging ------------------------------------------------------------------------


def run_one(target: Any, replay: Replay, timing: Timing, verdict_timeout: float) -> None:
    last = None
    for step in replay.steps:
        if step.after_verdict:
            if not target.verdicts.wait(step.after_verdict, verdict_timeout):
                replay.errors.append(f"no verdict within {verdict_timeout} s")
        elif last is not None and step.at > last:
            time.sleep(min((step.at - last) * timing.scale, timing.cap))
        last = step.at
        now = time.time_ns()
        for span in step.spans:
            if not span.parent_span_id:
                replay.root_sent.setdefault(span.trace_id, now)
        for _ in range(step.copies):
            target.send(step)


def run_replays(
    target: Any, replays: Sequence[Replay], *, threads: int = 16, verdict_timeout: float = 60.0
) -> dict[str, Any]:
    """Every replay into ``target`` at once (``threads`` at a time), then the receiver
    stopped: what it still holds is judged at shutdown. Returns its final stats."""

    def one(replay: Replay) -> None:
        try:
            run_one(target, replay, target.timing, verdict_timeout)
        except Exception as exc:  # noqa: BLE001 - reported with the replay
            replay.errors.append(f"{type(exc).__name__}: {exc}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, replays))
    rooted = [t for r in replays for t, (rec, old) in r.traces.items() if old in rec.rooted]
    target.verdicts.wait(rooted, verdict_timeout)
    return target.stop()


@dataclass(frozen=True)
class Problem:
    """One way a replay failed the requirement."""

    kind: str  # difference, lost, duplicate, early, error
    replay: str
    target: str
    schedule: str
    fixture: str
    trace_id: str
    detail: str

    def __str__(self) -> str:
        where = f"{self.target} {self.schedule} {self.fixture} {self.trace_id}"
        return f"{self.kind}: {where}: {self.detail}"


def revision_of(line: dict[str, Any]) -> int | None:
    """A results line's revision: missing means 0 (before revisions existed); ``None`` for a
    line that judges nothing (``dropped``, ``late_unjudged``)."""
    if line.get("reason") in ("dropped", "late_unjudged"):
        return None
    revision = line.get("revision", 0)
    return revision if isinstance(revision, int) else None


def revised(target: Any, replays: Iterable[Replay]) -> int:
    """How many of the replays' traces ended on a revision (a final ``revision`` above 0)."""
    lines = target.verdicts.lines()
    count = 0
    for replay in replays:
        for trace_id in replay.traces:
            revisions = [revision_of(line) or 0 for line in lines.get(trace_id, [])]
            count += bool(revisions) and max(revisions) > 0
    return count


def judge(target: Any, replay: Replay) -> list[Problem]:
    """The replay's traces against the file's verdicts: lost, judged twice without a
    revision mark, judged before their root, or ending with another verdict or calls."""
    lines = target.verdicts.lines()
    problems = []

    def problem(kind: str, trace_id: str, detail: str) -> None:
        rec, old = replay.traces[trace_id]
        problems.append(
            Problem(
                kind=kind,
                replay=replay.key,
                target=target.name,
                schedule=replay.schedule,
                fixture=rec.name,
                trace_id=old,
                detail=detail,
            )
        )

    for error in replay.errors:
        problems.append(
            Problem(
                kind="error",
                replay=replay.key,
                target=target.name,
                schedule=replay.schedule,
                fixture=replay.fixture,
                trace_id="",
                detail=error,
            )
        )
    for trace_id, (rec, old) in replay.traces.items():
        want = (rec.expected_spans_only if target.live else rec.expected)[old]
        judged: list[tuple[int, dict[str, Any]]] = []
        for line in lines.get(trace_id, []):
            revision = revision_of(line)
            if revision is not None:
                judged.append((revision, line))
        if not want.rows:  # no case selects it (a trace that only builds an agent): no verdict
            if judged:
                problem("difference", trace_id, "a verdict for a trace no case selects")
            continue
        if not judged:
            problem("lost", trace_id, f"no verdict ({len(lines.get(trace_id, []))} other lines)")
            continue
        revisions = [r for r, _ in judged]
        if len(set(revisions)) != len(revisions):
            problem("duplicate", trace_id, f"revisions {sorted(revisions)}")
        first = min(judged, key=lambda p: (p[0], p[1]["time_unix_nano"]))[1]
        sent = replay.root_sent.get(trace_id)
        if sent is not None and first["time_unix_nano"] < sent:
            early_ms = (sent - first["time_unix_nano"]) / 1e6
            problem("early", trace_id, f"judged {early_ms:.0f} ms before its root was sent")
        final = max(judged, key=lambda p: p[0])[1]
        got = Outcome(final["verdict"], rows_of(final["results"]))
        rootless = old not in rec.rooted
        verdict_ok = got.verdict == want.verdict or (rootless and got.verdict == "partial")
        if got.rows != want.rows or not verdict_ok:
            problem("difference", trace_id, f"{final.get('reason')}: {difference(got, want)}")
    return problems


# -- the matrix ---------------------------------------------------------------------------------

SERVE_TARGETS = tuple((t, w) for t in TRANSPORTS for w in (1, 2))


def schedules_for(live: bool) -> tuple[str, ...]:
    return SPAN_SCHEDULES if live else (*SCHEDULES, INTERLEAVED)


def build_replays(
    recs: Sequence[Recording],
    timing: Timing,
    *,
    live: bool,
    seed: int = 21,
    sample: int | None = None,
) -> list[Replay]:
    """Every schedule of every recording (log schedules: recordings with log records;
    ``e-interleaved``: each with a seeded partner), or a seeded ``sample`` of recordings per
    schedule."""
    rng = random.Random(seed)
    replays = []
    for schedule in schedules_for(live):
        if schedule in LOG_SCHEDULES:
            pool = [r for r in recs if r.logs]
        elif schedule in PROCESS_SCHEDULES:
            pool = [r for r in recs if len(by_process(r.spans)) > 1]
        else:
            pool = list(recs)
        chosen = pool if sample is None or sample >= len(pool) else rng.sample(pool, sample)
        for rec in chosen:
            group = [rec]
            if schedule == INTERLEAVED:
                group.append(rng.choice([r for r in recs if r is not rec]))
            replays.append(build_replay(schedule, group, seed, timing, live=live))
    return replays


def make_target(name: str, timing: Timing, directory: Path) -> Any:
    """``live`` or ``serve/<transport>/w<workers>``."""
    if name == "live":
        return LiveTarget(timing, directory)
    _, transport, workers = name.split("/")
    return ServeTarget(transport, int(workers[1:]), timing, directory)


TARGETS = ("live", *(f"serve/{t}/w{w}" for t, w in SERVE_TARGETS))
