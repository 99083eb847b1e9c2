"""A real ``tooltrail serve`` ends with the file's verdict when a trace comes in pieces.

Two schedules a real OpenTelemetry SDK produces used to give a wrong verdict written as
complete: a trace spread over several processes, whose other process exports after the root's
process (its spans came after the verdict and were never scored), and an exporter's retry of a
``/v1/logs`` request (its calls were read twice). Here the receiver's last revision of each
trace (``revision``: the highest) must equal ``tooltrail eval`` on the file.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from external_truth import EXTERNAL
from fixtures import DATA
from serve_helpers import post, write_suite
from test_evaluation_events import LogsReceiver, attributes_of

from tooltrail.convert import read_traces
from tooltrail.otlp.decode.log_records import LogRecord
from tooltrail.scores import CASE_SCORE_NAME
from tooltrail.serve import ServeConfig, start_in_thread

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX child processes")

KAGENT = EXTERNAL / "kagent" / "v1.0.0-alpha9" / "adk_go_1turn.json"
WEATHER = DATA / "logs" / "openai_v2_weather.json"
JSON = {"Content-Type": "application/json"}
FILLER = "0123456789abcdef0123456789abcdef"
FULL = 12
LISTENING = re.compile(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)")

KAGENT_SUITE = """\
name: kagent
cases:
  - id: adk
    match: all
    required_tools: [k8s_get_resources]
    max_tool_calls: 2
"""
#: Fails when a retried logs request doubles the calls read from ``gen_ai.choice`` records.
WEATHER_SUITE = """\
name: weather
cases:
  - id: weather
    match: all
    required_tools: [get_weather]
    max_tool_calls: 2
    evaluators:
      - name: no_redundant_tool_calls
        threshold: 1.0
"""


class Serve:
    """``tooltrail serve`` in a child process, HTTP on a free loopback port."""

    def __init__(self, tmp_path: Path, suite: str, *args: str) -> None:
        self.results = tmp_path / "results.jsonl"
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
             "--suite", str(write_suite(tmp_path, suite)), "--no-grpc", "--http-port", "0",
             "--results", str(self.results), *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        assert self.process.stderr is not None
        line = self.process.stderr.readline()
        found = LISTENING.search(line)
        if found is None:
            self.process.kill()
            raise AssertionError(f"tooltrail serve did not start: {line}")
        self.port = int(found.group(1))

    def post(self, body: dict[str, Any], path: str = "/v1/traces") -> int:
        return post(self.port, json.dumps(body).encode(), JSON, path=path)[0]

    def lines(self) -> list[dict[str, Any]]:
        if not self.results.exists():
            return []
        return [json.loads(line) for line in self.results.read_text().splitlines()]

    def wait_for_lines(self, count: int, timeout: float = 60) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            lines = self.lines()
            if len(lines) >= count or time.monotonic() > deadline:
                return lines
            time.sleep(0.02)

    def settled(self, timeout: float = 60) -> dict[str, Any]:
        """The counters once everything taken was judged (every span and record released)."""
        deadline = time.monotonic() + timeout
        while True:
            stats = self.stats()
            taken = stats["spans_received"] + stats["log_records_received"]
            if stats["spans_released"] >= taken or time.monotonic() > deadline:
                return stats
            time.sleep(0.02)

    def stats(self) -> dict[str, Any]:
        status, _, body = post(self.port, b"", method="GET", path="/stats")
        assert status == 200
        return json.loads(body)  # type: ignore[no-any-return]

    def stop(self) -> str:
        self.process.terminate()
        _, stderr = self.process.communicate(timeout=60)
        return stderr


@pytest.fixture
def serve(tmp_path: Path):  # type: ignore[no-untyped-def]
    started: list[Serve] = []

    def start(suite: str, *args: str) -> Serve:
        server = Serve(tmp_path, suite, *args)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
            server.process.communicate()


def file_verdict(tmp_path: Path, suite: str, path: Path) -> dict[str, Any]:
    """``tooltrail eval``'s one case row on the file: passed and each score's outcome."""
    suite_file = tmp_path / "eval-suite.yaml"
    suite_file.write_text(suite)
    done = subprocess.run(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "eval", str(suite_file),
         str(path), "--format", "json", "-q", "--workers", "1"],
        capture_output=True,
        text=True,
        check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    [row] = json.loads(done.stdout)["cases"]
    return {"passed": row["passed"], "scores": {s["name"]: s["passed"] for s in row["scores"]}}


def line_verdict(line: dict[str, Any]) -> dict[str, Any]:
    [row] = line["results"]
    return {"passed": line["passed"], "scores": {s["name"]: s["passed"] for s in row["scores"]}}


def final(lines: list[dict[str, Any]], trace_id: str) -> dict[str, Any]:
    """The trace's line with the highest revision (the results-file contract)."""
    revised = [x for x in lines if x["trace_id"] == trace_id and isinstance(x["revision"], int)]
    return max(revised, key=lambda x: x["revision"])


def service_of(group: dict[str, Any]) -> str:
    for attribute in group["resource"].get("attributes", []):
        if attribute["key"] == "service.name":
            return str(attribute["value"]["stringValue"])
    return ""


@pytest.mark.skipif(not KAGENT.exists(), reason="the external corpus is not here")
@pytest.mark.parametrize("workers", [1, 2])
def test_a_process_exporting_after_the_verdict_revises_it(
    serve, tmp_path: Path, workers: int
) -> None:
    """The kagent Go ADK trace: the root (``POST /agents/``) is the controller's; the Go
    runtime's spans, with both tool calls, export on their own tick after the verdict."""
    doc = json.loads(KAGENT.read_text())
    [root] = [
        s["traceId"]
        for g in doc["resourceSpans"]
        for scope in g["scopeSpans"]
        for s in scope["spans"]
        if not s.get("parentSpanId")
    ]
    by_service: dict[str, list[dict[str, Any]]] = {}
    for group in doc["resourceSpans"]:
        by_service.setdefault(service_of(group), []).append(group)
    assert set(by_service) == {"kagent-controller", "adk-go-test"}
    server = serve(KAGENT_SUITE, "--grace", "0.3", "--logs-grace", "0.3", "--workers", str(workers))

    assert server.post({"resourceSpans": by_service["kagent-controller"]}) == 200
    [first] = server.wait_for_lines(1)  # the root's process alone: judged
    assert (first["revision"], first["reason"], first["passed"]) == (0, "complete", False)
    assert server.post({"resourceSpans": by_service["adk-go-test"]}) == 200
    assert server.post({"resourceLogs": doc["resourceLogs"]}, "/v1/logs") == 200
    server.wait_for_lines(2)
    stats = server.settled()  # the logs may come in the same late piece or revise once more
    stderr = server.stop()
    lines = server.lines()
    assert all(x["trace_id"] == root for x in lines), lines
    last = final(lines, root)
    assert last["revision"] >= 1 and last["reason"] == "late" and not last["partial"]
    assert line_verdict(last) == file_verdict(tmp_path, KAGENT_SUITE, KAGENT), stderr
    [trace] = read_traces([str(KAGENT)])
    assert last["changed"]["calls"][1] == len(trace.tool_calls) == 2
    assert stats["traces_revised"] == last["revision"] and stats["verdicts_changed"] >= 1
    assert stats["late_spans_unjudged"] == stats["log_records_unjudged"] == 0
    assert [x["revision"] for x in lines] == list(range(len(lines)))  # each marked, in order
    # Kept for the revision: the trace points into the request bodies its spans came in
    # (the controller's, the runtime's: JSON, held as received), not a copy of its spans.
    assert stats["revision_bodies_held"] == 2 and stats["revision_body_bytes_held"] > 0
    assert stats["revision_bodies_refused"] == 0


def weather_logs() -> dict[str, Any]:
    return {"resourceLogs": json.loads(WEATHER.read_text())["resourceLogs"]}


def weather_spans() -> dict[str, Any]:
    return {"resourceSpans": json.loads(WEATHER.read_text())["resourceSpans"]}


def test_a_logs_request_sent_twice_is_read_once(serve, tmp_path: Path) -> None:
    """An exporter's retry after a timeout re-sends a logs request serve already took."""
    server = serve(WEATHER_SUITE, "--grace", "0.2", "--logs-grace", "0.2")
    assert server.post(weather_logs(), "/v1/logs") == 200
    assert server.post(weather_logs(), "/v1/logs") == 200
    assert server.post(weather_spans()) == 200
    server.wait_for_lines(1)
    stats = server.settled()
    server.stop()
    [line] = server.lines()
    assert line_verdict(line) == file_verdict(tmp_path, WEATHER_SUITE, WEATHER)
    assert line["passed"] and line["revision"] == 0
    kept = stats["log_records_received"] // 2
    assert stats["log_records_duplicate"] == kept > 0


def test_a_span_request_sent_twice_changes_nothing(serve, tmp_path: Path) -> None:
    """A retried traces request: its spans are read once (span id), before and after the
    verdict."""
    server = serve(WEATHER_SUITE, "--grace", "0.2", "--logs-grace", "0.2")
    assert server.post(weather_logs(), "/v1/logs") == 200
    assert server.post(weather_spans()) == 200
    assert server.post(weather_spans()) == 200
    [line] = server.wait_for_lines(1)
    assert server.post(weather_spans()) == 200  # after the verdict: a late piece, all copies
    assert server.post(weather_logs(), "/v1/logs") == 200
    stats = server.settled()
    server.stop()
    assert server.lines() == [line]  # no revision: nothing new came
    assert line_verdict(line) == file_verdict(tmp_path, WEATHER_SUITE, WEATHER)
    assert stats["traces_revised"] == 0 and stats["spans_duplicate"] == 3
    assert stats["late_spans_unjudged"] == 0


def test_a_logs_request_retried_after_503_is_read_once(serve, tmp_path: Path) -> None:
    """Refused while the buffer is full (503: nothing taken), retried until taken, then
    retried once more as after a timeout: the verdict is the file's."""
    server = serve(
        WEATHER_SUITE, "--grace", "4", "--logs-grace", "0", "--max-buffered-spans", str(FULL),
        "--max-age", "120",
    )  # fmt: skip
    filler = {"resourceSpans": [copy.deepcopy(weather_spans()["resourceSpans"][0])]}
    spans = filler["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[:] = [dict(spans[0], spanId=f"{n + 1:016x}") for n in range(FULL)]
    for span in spans:
        span["traceId"], span["parentSpanId"] = FILLER, "00000000000000aa"
    assert server.post(filler) == 200  # a trace without root fills the buffer
    statuses = [server.post(weather_logs(), "/v1/logs")]
    deadline = time.monotonic() + 60
    while statuses[-1] != 200 and time.monotonic() < deadline:
        time.sleep(0.1)  # the SDK's exporter backs off and retries the same body
        statuses.append(server.post(weather_logs(), "/v1/logs"))
    assert statuses[0] == 503 and statuses[-1] == 200
    assert server.post(weather_logs(), "/v1/logs") == 200  # a retry after a timeout
    assert server.post(weather_spans()) == 200
    stats = server.settled()
    server.stop()
    [line] = [x for x in server.lines() if x["trace_id"] != FILLER]
    assert line_verdict(line) == file_verdict(tmp_path, WEATHER_SUITE, WEATHER)
    assert line["passed"] and line["revision"] == 0
    assert stats["log_records_duplicate"] == stats["log_records_received"] // 2 > 0


def test_the_key_of_a_log_record_is_what_a_retry_keeps() -> None:
    """Equal records share it; a changed body, attribute, time, span or event does not."""
    from tooltrail.serve.logs_intake import record_key

    record = LogRecord(
        trace_id="ab" * 16, span_id="cd" * 8, time_ns=5, event_name="gen_ai.choice",
        attributes={"gen_ai.system": "openai"}, body={"message": {"content": "hi"}},
    )  # fmt: skip
    assert record_key(record) == record_key(copy.deepcopy(record))
    for change in (
        {"time_ns": 6},
        {"span_id": "ef" * 8},
        {"body": {"message": {"content": "ho"}}},
        {"attributes": {"gen_ai.system": "other"}},
        {"event_name": "gen_ai.assistant.message"},
    ):
        other = dataclasses.replace(record, **change)  # type: ignore[arg-type]
        assert record_key(other) != record_key(record), change


def test_revised_scores_go_to_the_scores_endpoint_marked(tmp_path: Path) -> None:
    """The logs come after the verdict: the revision's events say which revision they are and
    which they supersede; the first verdict's events say neither."""
    from tooltrail.scores import REVISION, SUPERSEDES_REVISION

    logs = LogsReceiver()
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(tmp_path, WEATHER_SUITE), grpc_port=None, http_port=0,
            grace=0.1, results=tmp_path / "results.jsonl", scores_endpoint=logs.endpoint,
            scores_protocol="grpc",
        )
    )  # fmt: skip
    try:
        port = receiver.http_port
        assert post(port, json.dumps(weather_spans()).encode(), JSON)[0] == 200
        deadline = time.monotonic() + 30
        while receiver.receiver.stats()["traces_evaluated"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        body = json.dumps(weather_logs()).encode()
        assert post(port, body, JSON, path="/v1/logs")[0] == 200
        while receiver.receiver.stats()["traces_revised"] < 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        receiver.stop()
        logs.stop()
    verdicts = [
        attributes_of(record)
        for _, _, record in logs.records()
        if attributes_of(record)["gen_ai.evaluation.name"] == CASE_SCORE_NAME
    ]
    first, revised = verdicts
    assert REVISION not in first and first["gen_ai.evaluation.score.label"] == "fail"
    assert (revised[REVISION], revised[SUPERSEDES_REVISION]) == (1, 0)
    assert revised["gen_ai.evaluation.score.label"] == "pass"
