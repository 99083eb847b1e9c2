"""A check cannot take a run down (issue 22, item 2): hostile plug-in checks in every path.

The plug-in module ``hostile_checks`` has a check that sleeps, one that calls ``sys.exit``,
one that raises ``KeyboardInterrupt`` and one that allocates without bound (its loop is
capped by this test, so the machine survives if nothing stops it), next to a check that
passes. Each path runs them under a 0.5 s time limit: ``tooltrail eval`` (one and two worker
processes), ``tooltrail serve`` over loopback (one and two workers), the live inline
evaluator on the real SDK, and the pytest plugin. Each run must end, and every trace must be
accounted for with the errors named.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import pytest
from fixtures import REFUND_DUMP

from tooltrail import EvalTrace, EvaluatorConfig, Score, TestCase, evaluate_cases
from tooltrail.checks import Registry, default_registry, threadstop, timelimit
from tooltrail.score import evaluation_time_limit

T = TypeVar("T")
TOOLTRAIL = [sys.executable, "-c", "from tooltrail.cli import main; main()"]
LISTENING = re.compile(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)")

#: The hostile checks. ``allocates`` takes 64 KiB at most every 0.5 ms and gives up at
#: 1 GiB: stopped by its time limit it holds some 50 MB; its last size and the exception that
#: ended it are appended to the file ``$HOSTILE_LOG`` (when set), read by the tests.
HOSTILE = r"""\
import os, sys, time
from tooltrail import Score

MARK = os.environ.get("HOSTILE_MARK")


def sleeps(trace, case, config):
    if MARK is not None:  # the trace ids the check saw: the test may now interrupt the run
        with open(MARK, "a") as handle:
            handle.write(trace.trace_id + "\n")
    if trace.trace_id.startswith(os.environ.get("HOSTILE_SLEEP_PREFIX", "")):
        time.sleep(float(os.environ.get("HOSTILE_SLEEP_S", "120")))
    return Score.passing("sleeps", "sleeps", "woke up")


def exits(trace, case, config):
    sys.exit(7)


def interrupts(trace, case, config):
    raise KeyboardInterrupt


def allocates(trace, case, config):
    held = []
    stopped_by = "nothing"
    try:
        while len(held) < 16384:
            held.append(b"x" * 65536)
            time.sleep(0.0005)
    except BaseException as exc:
        stopped_by = type(exc).__name__
        raise
    finally:
        log = os.environ.get("HOSTILE_LOG")
        if log:
            with open(log, "a") as handle:
                handle.write(f"{stopped_by} {len(held) * 65536}\n")
    return Score.passing("allocates", "allocates", "done")


def fine(trace, case, config):
    return Score.passing("fine", "fine", "fine")


TOOLTRAIL_CHECKS = {
    "sleeps": sleeps, "exits": exits, "interrupts": interrupts, "allocates": allocates,
    "fine": fine,
}
"""

SUITE = """\
name: hostile
check_timeout: 0.5
cases:
  - id: hostile
    match: {agent_name: refund_agent}
    evaluators:
      - name: sleeps
      - name: exits
      - name: interrupts
      - name: allocates
      - name: fine
"""

#: What each trace's row says, check by check: (error, start of the explanation).
EXPECTED = {
    "sleeps": ("CheckTimeout", "Check 'sleeps' ran past its time limit of 0.5 s"),
    "exits": ("SystemExit", "Scorer 'exits' failed: SystemExit: 7"),
    "interrupts": ("KeyboardInterrupt", "Scorer 'interrupts' failed: KeyboardInterrupt"),
    "allocates": ("CheckTimeout", "Check 'allocates' ran past its time limit of 0.5 s"),
    "fine": (None, "fine"),
}
#: Peak memory a run may reach: far below the 1 GiB the allocating check would take if
#: nothing stopped it (a Python process with tooltrail loaded is about 100 MB).
MEMORY_CAP = 600 << 20


def verdicts(scores: list[dict]) -> dict[str, tuple[str | None, str]]:
    found = {}
    for score in scores:
        expected = EXPECTED[score["name"]][1]
        explanation = score.get("explanation", "")
        found[score["name"]] = (
            score["error"],
            expected if explanation.startswith(expected) else explanation,
        )
    return found


@pytest.fixture
def plugin(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "hostile_checks.py").write_text(HOSTILE)
    (folder / "scripted_agent.py").write_text(AGENT_MODULE)
    return folder


def child_env(plugin: Path, tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    inherited = [env["PYTHONPATH"]] if env.get("PYTHONPATH") else []
    env["PYTHONPATH"] = os.pathsep.join([str(plugin), *inherited])
    env["TOOLTRAIL_PLUGINS"] = "hostile_checks"
    env["HOSTILE_LOG"] = str(tmp_path / "allocations.log")
    env.update(extra)
    return env


def allocations(tmp_path: Path) -> list[tuple[str, int]]:
    """How each run of ``allocates`` ended: the exception, the bytes it held then."""
    log = tmp_path / "allocations.log"
    if not log.exists():
        return []
    ends = [line.split() for line in log.read_text().splitlines()]
    return [(kind, int(size)) for kind, size in ends]


def two_dumps(tmp_path: Path) -> list[Path]:
    """The refund dump, and a copy whose trace ids start with ``f``: eight traces in two
    files, so two workers get a chunk each."""
    first = tmp_path / "a.otlp.jsonl"
    first.write_bytes(REFUND_DUMP.read_bytes())
    second = tmp_path / "b.otlp.jsonl"
    text = re.sub(r'"traceId":"[0-9a-f]', '"traceId":"f', REFUND_DUMP.read_text())
    second.write_text(text)
    return [first, second]


# -- tooltrail eval ------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_eval_ends_with_every_trace_scored_and_each_hostile_check_named(
    tmp_path: Path, plugin: Path, workers: int
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    dumps = two_dumps(tmp_path)[:workers]  # two workers: a file each
    traces = 4 * workers
    started = time.monotonic()
    pid, status, usage, out, err = spawn_and_wait(
        [*TOOLTRAIL, "eval", str(suite), *map(str, dumps), "--format", "json", "-q",
         "--workers", str(workers)],
        child_env(plugin, tmp_path),
        timeout=120,
    )  # fmt: skip
    assert os.waitstatus_to_exitcode(status) == 1, err
    report = json.loads(out)
    assert len(report["cases"]) == traces  # every trace has its row
    for row in report["cases"]:
        assert verdicts(row["scores"]) == {name: (e, x) for name, (e, x) in EXPECTED.items()}
        assert row["passed"] is False
    # Each allocation was stopped at its limit, holding far less than the loop's 1 GiB.
    ends = allocations(tmp_path)
    assert len(ends) == traces, ends
    assert all(kind == "CheckStopped" and size < 256 << 20 for kind, size in ends), ends
    assert usage.ru_maxrss * 1024 < MEMORY_CAP
    # Two limits per trace: well under the two minutes a sleeping check would hold one.
    assert time.monotonic() - started < 100


def spawn_and_wait(
    args: list[str], env: dict[str, str], *, timeout: float
) -> tuple[int, int, object, str, str]:
    """Run ``args`` to its end; (pid, wait status, its own resource usage, stdout, stderr).
    ``os.wait4`` gives this child's peak memory alone."""
    out_path = Path(env["HOSTILE_LOG"]).with_suffix(".out")
    err_path = Path(env["HOSTILE_LOG"]).with_suffix(".err")
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env)
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            process.kill()
            os.wait4(process.pid, 0)
            raise AssertionError(f"{args[3:5]} did not end within {timeout} s")
        time.sleep(0.05)
    process.returncode = os.waitstatus_to_exitcode(status)
    return pid, status, usage, out_path.read_text(), err_path.read_text()


# -- tooltrail eval and SIGINT -------------------------------------------------------------


@pytest.mark.parametrize(("workers", "to_group"), [(1, True), (2, True), (2, False)])
def test_sigint_during_eval_exits_130_naming_the_interrupt_and_the_partial_counts(
    tmp_path: Path, plugin: Path, workers: int, to_group: bool
) -> None:
    """The second file's traces sleep (a long limit): the first file's chunk is done when
    SIGINT comes. Sent to the whole process group, as Ctrl-C is, or to ``eval`` alone (which
    then interrupts its workers)."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: slow\ncheck_timeout: 60\ncases:\n  - id: slow\n    match: all\n"
        "    evaluators:\n      - name: sleeps\n"
    )
    mark = tmp_path / "sleeping"
    env = child_env(plugin, tmp_path, HOSTILE_SLEEP_PREFIX="f", HOSTILE_MARK=str(mark))
    dumps = two_dumps(tmp_path)
    process = subprocess.Popen(
        [*TOOLTRAIL, "eval", str(suite), *map(str, dumps), "-q", "--workers", str(workers)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not sleeping(mark) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert sleeping(mark), "no check of the second file started within 60 s"
        time.sleep(0.3)
        if to_group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            os.kill(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, err
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert re.fullmatch(
        r"tooltrail eval: interrupted \(SIGINT\) after (\d+) finished chunks: (\d+) traces "
        r"read \(\d+ spans\) and evaluated; no complete report",
        lines[-1],
    ), err
    if workers == 1:
        assert lines[-1].startswith("tooltrail eval: interrupted (SIGINT) after 1 finished "
                                    "chunks: 4 traces")  # fmt: skip
    assert out == ""


def sleeping(mark: Path) -> bool:
    """Whether a check has started sleeping: on a trace of the second file (with one worker,
    the first file's chunk is then done)."""
    return mark.exists() and "\nf" in "\n" + mark.read_text()


AGENT_MODULE = """\
from tooltrail.live import ToolCallSpan


def refund_agent(tracer, run):
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"}
    with tracer.start_as_current_span("invoke_agent refund_agent", attributes=attributes) as root:
        with ToolCallSpan("lookup_order", {"order_id": "ORD-7731"}, tracer=tracer):
            pass
        with ToolCallSpan("issue_refund", {"order_id": "ORD-7731", "amount": 49.99},
                          tracer=tracer):
            pass
        return f"{root.get_span_context().trace_id:032x}"
"""


# -- tooltrail serve -----------------------------------------------------------------------

SEND_RUNS = """\
import sys
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from scripted_agent import refund_agent

provider = TracerProvider()
provider.add_span_processor(
    SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{sys.argv[1]}/v1/traces"))
)
tracer = provider.get_tracer("refund-agent")
for run in range(int(sys.argv[2])):
    print(refund_agent(tracer, run))
provider.shutdown()
"""
STOPPED = re.compile(r"tooltrail serve: stopped; (\{.*\})")


@pytest.mark.parametrize("workers", [1, 2])
def test_serve_writes_a_results_line_for_every_trace_and_counts_it(
    tmp_path: Path, plugin: Path, workers: int
) -> None:
    """Before: the sleeping check held the evaluator, so no trace got a results line and
    every counter stayed 0."""
    env = child_env(plugin, tmp_path)
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    results = tmp_path / "results.jsonl"
    process = subprocess.Popen(
        [*TOOLTRAIL, "serve", "--suite", str(suite), "--no-grpc", "--http-port", "0",
         "--grace", "0.1", "--results", str(results), "--explanations",
         "--workers", str(workers)],
        stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = LISTENING.search(line)
        assert found is not None, line
        port = found.group(1)
        sent = subprocess.run(
            [sys.executable, "-c", SEND_RUNS, port, "3"],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert sent.returncode == 0, sent.stderr
        trace_ids = set(sent.stdout.split())
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and len(lines_of(results)) < 3:
            time.sleep(0.1)
        while True:  # with workers, the receiving process gathers their counters now and then
            stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/stats").read())
            if stats["traces_evaluated"] >= 3 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=60)
    assert process.returncode == 0, rest
    rows = lines_of(results)
    assert {row["trace_id"] for row in rows} == trace_ids
    assert len(rows) == 3
    for row in rows:
        assert row["verdict"] == "fail"
        (result,) = row["results"]
        assert verdicts(result["scores"]) == dict(EXPECTED)
    assert stats["traces_evaluated"] == 3
    assert stats["cases_failed"] == 3
    assert stats["traces_dropped"] == 0
    summary = STOPPED.search(rest)
    assert summary is not None, rest
    assert json.loads(summary.group(1))["traces_evaluated"] == 3


def lines_of(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


# -- live inline, on the real SDK ----------------------------------------------------------

LIVE_AGENT = """\
import json, sys, threading, time
from opentelemetry.sdk.trace import TracerProvider
from tooltrail import live
from tooltrail.checks import timelimit
from scripted_agent import refund_agent

rows = {}

def on_result(trace, results):
    rows[trace.trace_id] = [s.to_dict() for r in results for s in r.scores]

provider = TracerProvider()
live.install(provider=provider, suite=sys.argv[1], on_result=on_result, grace_ms=0,
             handle_sigterm=False)
tracer = provider.get_tracer("refund-agent")
runs = [refund_agent(tracer, run) for run in range(3)]
provider.force_flush(60_000)
provider.shutdown()
# The given-up allocations end at their next bytecode, the sleeping checks stay parked: wait
# for that (a fixed sleep was too short on a loaded machine), within a generous bound.
deadline = time.monotonic() + 60
while timelimit.stats().abandoned_alive > 3 and time.monotonic() < deadline:
    time.sleep(0.01)
stats = timelimit.stats()
print(json.dumps({
    "rows": [rows.get(trace_id) for trace_id in runs],
    "timed_out": stats.timed_out,
    "abandoned_alive": stats.abandoned_alive,
    "threads": threading.active_count(),
}))
"""


def test_live_inline_scores_every_trace_and_stops_the_allocating_check(
    tmp_path: Path, plugin: Path
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    env = child_env(plugin, tmp_path)
    _, status, usage, out, err = spawn_and_wait(
        [sys.executable, "-c", LIVE_AGENT, str(suite)], env, timeout=120
    )
    assert os.waitstatus_to_exitcode(status) == 0, err
    found = json.loads(out)
    assert len(found["rows"]) == 3
    for scores in found["rows"]:
        assert scores is not None
        assert verdicts(scores) == dict(EXPECTED)
    assert found["timed_out"] == 6  # the sleep and the allocation of each trace
    # The sleeping checks are still parked; the allocating ones were stopped and ended.
    assert found["abandoned_alive"] == 3
    ends = allocations(tmp_path)
    assert [kind for kind, _ in ends] == ["CheckStopped"] * 3
    assert all(size < 256 << 20 for _, size in ends), ends
    assert usage.ru_maxrss * 1024 < MEMORY_CAP


# -- the pytest plugin ---------------------------------------------------------------------

PYTEST_FILE = """\
from tooltrail.suite.case import EvaluatorConfig, TestCase
from scripted_agent import refund_agent

CASE = TestCase(
    id="hostile",
    evaluators=[
        EvaluatorConfig(name) for name in ("sleeps", "exits", "interrupts", "allocates", "fine")
    ],
    check_timeout=0.5,
)


def test_every_check_is_scored(trail):
    refund_agent(trail.tracer, 0)
    scores = trail.check(CASE)
    assert {s.name: s.error for s in scores} == {
        "sleeps": "CheckTimeout", "exits": "SystemExit", "interrupts": "KeyboardInterrupt",
        "allocates": "CheckTimeout", "fine": None,
    }


def test_assert_passes_fails_naming_the_time_limit(trail):
    refund_agent(trail.tracer, 1)
    trail.assert_passes(CASE)


def test_after_them(trail):
    refund_agent(trail.tracer, 2)
    assert [s.name for s in trail.check(CASE) if s.passed] == ["fine"]
"""


def test_pytest_plugin_runs_every_test_to_its_verdict(tmp_path: Path, plugin: Path) -> None:
    """Before: ``sys.exit`` in a check ended the pytest session; a sleeping check hung it."""
    tests = tmp_path / "agent_tests"
    tests.mkdir()
    (tests / "test_hostile.py").write_text(PYTEST_FILE)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        capture_output=True, text=True, timeout=300, cwd=tests,
        env=child_env(plugin, tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 2 passed" in done.stdout, done.stdout
    assert "Check 'sleeps' ran past its time limit of 0.5 s" in done.stdout


# -- the time limit itself, in this process ------------------------------------------------


def case_of(*names: str, limit: float = 0.5) -> TestCase:
    return TestCase(
        id="limited", evaluators=[EvaluatorConfig(name) for name in names], check_timeout=limit
    )


def off_main(fn: Callable[[], T]) -> T:
    """``fn()`` on a thread of its own: checks then go to a worker thread (on the main
    thread they run under SIGALRM instead, ``checks.checkalarm``)."""
    found: list[T] = []
    thread = threading.Thread(target=lambda: found.append(fn()))
    thread.start()
    thread.join(120)
    assert found, "did not return"
    return found[0]


def held_until(release: threading.Event) -> Registry:
    """A registry whose check ``waits`` blocks until ``release`` is set (at most 60 s)."""
    registry = Registry.with_builtins()

    def waits(trace, case, config):
        release.wait(60)
        return Score.passing("waits", "waits", "released")

    registry.register("waits", waits)
    return registry


def test_past_the_bound_of_running_given_up_checks_none_starts_until_one_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    release = threading.Event()
    registry = held_until(release)
    trace = EvalTrace(trace_id="t")
    try:
        (first,) = off_main(lambda: evaluate_cases([case_of("waits")], trace, registry=registry))
        assert [s.error for s in first.scores] == ["CheckTimeout"]
        before = timelimit.stats()  # the given-up check is still waiting: at the bound now
        monkeypatch.setattr(timelimit, "MAX_ABANDONED", before.abandoned_alive)
        started = time.monotonic()
        bounded = replace(case_of("waits", limit=30), required_tools=["lookup_order"])
        (second,) = off_main(lambda: evaluate_cases([bounded], trace, registry=registry))
        # Not started: no wait for its 30 s limit (a bound a loaded machine cannot reach).
        assert time.monotonic() - started < 15
        required, score = second.scores
        assert required.name == "required_tool:lookup_order"  # tooltrail's own check still ran
        assert required.error is None
        assert score.error == "CheckNotRun"
        assert score.explanation == (
            f"Check 'waits' was not run: {before.abandoned_alive} checks given up at their time "
            "limit are still running."
        )
        assert timelimit.stats().not_run == before.not_run + 1
    finally:
        release.set()
    deadline = time.monotonic() + 30
    while timelimit.stats().abandoned_alive >= timelimit.MAX_ABANDONED:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    (third,) = off_main(lambda: evaluate_cases([case_of("waits")], trace, registry=registry))
    assert [s.explanation for s in third.scores] == ["released"]


def test_without_the_async_exception_a_given_up_check_is_left_running_and_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fallback of an interpreter without ``PyThreadState_SetAsyncExc``: the run goes on
    at the limit all the same; the busy check runs on, counted, until it ends by itself."""
    monkeypatch.setattr(threadstop, "_SET_ASYNC_EXC", None)
    assert threadstop.raise_in(threading.get_ident(), RuntimeError) is False
    stop = threading.Event()
    ended = threading.Event()
    registry = Registry.with_builtins()

    def spins(trace, case, config):
        try:
            while not stop.is_set():  # a busy loop: an async exception would end it
                pass
        finally:
            ended.set()
        return Score.passing("spins", "spins", "stopped")

    registry.register("spins", spins)
    (row,) = off_main(
        lambda: evaluate_cases(
            [case_of("spins", limit=0.2)], EvalTrace(trace_id="t"), registry=registry
        )
    )
    assert [s.error for s in row.scores] == ["CheckTimeout"]
    assert not ended.wait(0.3)
    assert timelimit.stats().abandoned_alive >= 1
    stop.set()
    assert ended.wait(30)


REAL_INTERRUPT = """\
import os, signal, sys, threading, time
if sys.argv[1] == "alarm-taken":  # SIGALRM is someone else's: checks go to a worker thread
    signal.signal(signal.SIGALRM, lambda signum, frame: None)
from tooltrail import EvalTrace, EvaluatorConfig, TestCase, evaluate_cases
from tooltrail.checks import Registry

registry = Registry.with_builtins()
registry.register("sleeps", lambda trace, case, config: time.sleep(60))
case = TestCase(id="c", evaluators=[EvaluatorConfig("sleeps")], check_timeout=30)
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
started = time.monotonic()
try:
    evaluate_cases([case], EvalTrace(trace_id="t"), registry=registry)
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - started:.0f} s")
    sys.exit(0)
print("not interrupted")
"""


@pytest.mark.parametrize("where", ["main-thread", "alarm-taken"])
def test_a_real_sigint_of_the_process_still_interrupts_an_evaluation(where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", REAL_INTERRUPT, where], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    # SIGINT came 0.5 s in: interrupted then, not at the check's 30 s limit (nor its 60 s sleep),
    # with room for a loaded machine.
    found = re.fullmatch(r"interrupted after (\d+) s\n", done.stdout)
    assert found is not None and int(found.group(1)) < 15, done.stdout


def test_serve_and_live_do_not_call_the_evaluator_stuck_before_the_time_limits_are_up(
    tmp_path: Path,
) -> None:
    """Two plug-in checks of 20 s: a trace may take 40 s to evaluate, so the buffer must wait
    longer than that before it skips the evaluator (its traces were then neither scored
    nor counted)."""
    from opentelemetry.sdk.trace import TracerProvider

    from tooltrail import live
    from tooltrail.serve.config import ServeConfig
    from tooltrail.serve.stages import TracePipeline
    from tooltrail.suite import TestSuite

    default_registry().register("ct_judge_one", lambda t, c, k: [], replace=True)
    default_registry().register("ct_judge_two", lambda t, c, k: [], replace=True)
    suite = TestSuite(
        name="judges",
        cases=[
            TestCase(
                id="judged",
                evaluators=[
                    EvaluatorConfig(name)
                    for name in ("ct_judge_one", "ct_judge_two", "tool_call_precision")
                ],
            )
        ],
        check_timeout=20,
    )
    assert evaluation_time_limit(suite.cases) == 40
    pipeline = TracePipeline(ServeConfig(suite=str(tmp_path / "unused.yaml")), suite)
    try:
        assert pipeline.buffer.sink_timeout_s > 40
    finally:
        pipeline.shutdown()
    installation = live.install(provider=TracerProvider(), suite=suite, handle_sigterm=False)
    try:
        assert installation.buffer is not None
        assert installation.buffer.sink_timeout_s > 40
    finally:
        installation.shutdown()


def _evaluate_in_child(limit: float) -> list[str | None]:
    registry = Registry.with_builtins()
    registry.register("quick", lambda trace, case, config: Score.passing("quick", "quick", "ok"))
    (row,) = evaluate_cases(
        [case_of("quick", limit=limit)], EvalTrace(trace_id="t"), registry=registry
    )
    return [s.error for s in row.scores]


def test_a_forked_worker_process_gets_workers_of_its_own() -> None:
    """The parent's idle worker thread does not exist in a forked child (a batch pool
    worker): handing a check to it would wait out the limit."""
    assert _evaluate_in_child(30) == [None]  # leaves an idle worker in this process
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(1) as pool:
        started = time.monotonic()
        assert pool.apply(_evaluate_in_child, (30,)) == [None]
        assert time.monotonic() - started < 20


def test_on_the_main_thread_a_timer_stops_checks_without_leaving_a_thread() -> None:
    """The batch pass and pytest evaluate on the main thread: there SIGALRM stops a sleeping
    check and an allocating one, and no thread is left behind."""
    registry = Registry.with_builtins()
    held: list[bytes] = []
    ended: list[str] = []

    def allocates(trace, case, config):
        try:
            while len(held) < 16384:
                held.append(b"x" * 65536)
                time.sleep(0.0005)
        except BaseException as exc:
            ended.append(f"{type(exc).__name__} {len(held) < 16384}")
            held.clear()
            raise
        return Score.passing("allocates", "allocates", "done")

    def raises(trace, case, config):
        raise KeyboardInterrupt

    registry.register("sleeps", lambda trace, case, config: time.sleep(60))
    registry.register("allocates", allocates)
    registry.register("raises", raises)
    workers = {t for t in threading.enumerate() if t.name == "tooltrail-check"}
    before = timelimit.stats()
    started = time.monotonic()
    (row,) = evaluate_cases(
        [case_of("sleeps", "allocates", "raises", limit=0.3)],
        EvalTrace(trace_id="t"),
        registry=registry,
    )
    assert time.monotonic() - started < 30
    assert [s.error for s in row.scores] == ["CheckTimeout", "CheckTimeout", "KeyboardInterrupt"]
    assert ended == ["CheckStopped True"]
    assert {t for t in threading.enumerate() if t.name == "tooltrail-check"} <= workers
    after = timelimit.stats()
    assert after.timed_out == before.timed_out + 2
    assert after.abandoned_alive <= before.abandoned_alive


# -- where the limit is set ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("check_timeout: 0\n", "suite.yaml:2: check_timeout: must be more than 0 seconds, got 0"),
        (
            "check_timeout: soon\n",
            "suite.yaml:2: check_timeout: expected a number (0 or more), got a string ('soon')",
        ),
        (
            "cases:\n  - id: c\n    required_tools: [a]\n    check_timeout: -1\n",
            "suite.yaml:5: cases[0].check_timeout: must be a finite number, 0 or more, got -1",
        ),
    ],
)
def test_a_bad_check_timeout_is_an_error_naming_its_line(
    tmp_path: Path, text: str, message: str
) -> None:
    from tooltrail.suite import SuiteError, TestSuite

    cases = "" if "cases:" in text else "cases:\n  - id: c\n    required_tools: [a]\n"
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: s\n{text}{cases}")
    with pytest.raises(SuiteError) as raised:
        TestSuite.load(path)
    assert str(raised.value).endswith(message), str(raised.value)
    with pytest.raises(SuiteError, match="check_timeout must be a number of seconds"):
        TestCase(id="c", required_tools=["a"], check_timeout=0)


def test_the_suite_limit_applies_to_cases_without_their_own_and_the_option_wins(
    tmp_path: Path, plugin: Path
) -> None:
    from tooltrail.suite import TestSuite

    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\ncheck_timeout: 60\ncases:\n"
        "  - id: own\n    match: all\n    check_timeout: 0.3\n    evaluators: [sleeps]\n"
        "  - id: inherited\n    match: all\n    evaluators: [sleeps]\n"
    )
    suite = TestSuite.load(path)
    assert [case.check_timeout for case in suite.cases] == [0.3, 60]
    assert [case.check_timeout for case in suite.with_check_timeout(0.4).cases] == [0.4, 0.4]
    done = subprocess.run(
        [*TOOLTRAIL, "eval", str(path), str(REFUND_DUMP), "--format", "json", "-q",
         "--workers", "1", "--check-timeout", "0.4"],
        capture_output=True, text=True, timeout=120, env=child_env(plugin, tmp_path),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    explanations = {
        score["explanation"] for row in json.loads(done.stdout)["cases"] for score in row["scores"]
    }
    assert explanations == {
        "Check 'sleeps' ran past its time limit of 0.4 s and was given up (check_timeout)."
    }
