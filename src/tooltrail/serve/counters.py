"""What the receiver has done since it started, for ``/stats`` and the shutdown summary."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields


@dataclass(slots=True)
class ReceiverCounters:
    """Monotonic counts. Increment through ``add`` (thread-safe); read through ``snapshot``."""

    requests: int = 0
    #: Requests refused before any span was taken: 400, 413, 415, 503 and their gRPC twins.
    requests_refused: int = 0
    #: Requests refused because the buffer was full (503 / RESOURCE_EXHAUSTED).
    requests_throttled: int = 0
    spans_received: int = 0
    #: Spans of accepted requests that were not taken (bad ids and the like): partial_success.
    spans_rejected: int = 0
    traces_evaluated: int = 0
    #: Traces flushed before they were known complete (age, size or shutdown).
    traces_partial: int = 0
    #: Pieces (spans, log records) that came after their trace was judged: merged with it and
    #: judged again (a revision), or, past the revision window or limit, counted as unjudged.
    late_pieces: int = 0
    #: Revision lines written (a verdict judged again with late data), and those whose verdict
    #: differs from the one it supersedes.
    traces_revised: int = 0
    verdicts_changed: int = 0
    #: Late spans and log records that could no longer revise a verdict (window passed,
    #: revision limit, or let go to stay within the memory cap): each trace named in one
    #: ``late_unjudged`` results line.
    late_spans_unjudged: int = 0
    log_records_unjudged: int = 0
    #: Copies an exporter's retry sent again: left out (spans by span id, log records by
    #: ``serve.logs_intake.record_key``).
    spans_duplicate: int = 0
    log_records_duplicate: int = 0
    #: Traces that no policy of the suite selected (still counted as evaluated).
    traces_unmatched: int = 0
    cases_passed: int = 0
    cases_failed: int = 0
    #: Evaluation events the exporter confirmed, and those it could not build or send.
    scores_sent: int = 0
    scores_failed: int = 0
    #: Traces the buffer gave up unevaluated (one ``dropped`` results line each): its own
    #: memory bound (a request far over ``max_buffered_spans``) or shutdown's time limit. Set
    #: from the buffer's count by ``TracePipeline.stats``, not added to here.
    traces_dropped: int = 0
    #: Traces without a root evaluated early (partial, ``evicted``) to admit a request.
    traces_evicted_rootless: int = 0
    #: Errors inside conversion or evaluation of one trace; the trace is still counted.
    evaluation_errors: int = 0
    #: Traces marked as test runs (``tooltrail.sampling``), and of them those not evaluated
    #: (``--test-traffic skip``): outside sampling and the judge's spend window.
    traces_test: int = 0
    traces_test_skipped: int = 0

    #: Log records with a trace id and content (replies, tool calls), held with their trace.
    log_records_received: int = 0
    #: Log records left out of taken logs requests (bad ids, wrong types): partial_success.
    log_records_rejected: int = 0
    #: Log records taken but not kept: no trace id, or nothing a trajectory reads (prompts,
    #: plain logs, evaluation results).
    log_records_without_trace: int = 0
    log_records_not_content: int = 0
    #: Log records that came after their trace was judged: merged with it and judged again
    #: (``traces_revised``), or counted in ``log_records_unjudged``.
    log_records_late: int = 0
    #: Log records whose trace never arrived (max_age, buffer bound or shutdown): not scored.
    log_records_orphaned: int = 0
    #: Log records of an evaluated trace that name no span of it (``to_eval_trace``'s report).
    log_records_unjoined: int = 0

    #: Requests without the bearer token (401 / UNAUTHENTICATED), also counted refused.
    requests_unauthenticated: int = 0
    #: Requests whose body did not arrive within ``body_timeout`` (408), also counted refused.
    requests_timed_out: int = 0
    #: Requests whose client went away before its body was complete (nothing answered).
    requests_aborted: int = 0
    #: Connections open now, HTTP and gRPC (a gauge).
    connections_open: int = 0
    #: Connections closed for taking too long to send a request, its headers, or (gRPC) a
    #: first byte.
    connections_timed_out: int = 0
    #: Connections closed to make room for a new one (``max_connections``), HTTP and gRPC.
    connections_evicted: int = 0
    #: New HTTP connections refused because every open one was serving a request.
    connections_refused: int = 0

    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                setattr(self, name, getattr(self, name) + delta)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}
