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
import time
import urllib.request
from pathlib import Path

import pytest
from fixtures import REFUND_DUMP

TOOLTRAIL = [sys.executable, "-c", "from tooltrail.cli import main; main()"]
LISTENING = re.compile(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)")

#: The hostile checks. ``allocates`` takes 64 KiB at most every 0.5 ms and gives up at
#: 1 GiB: stopped by its time limit it holds some 50 MB; its last size and the exception that
#: ended it are appended to the file ``$HOSTILE_LOG`` (when set), read by the tests.
HOSTILE = r'''\
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
'''

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
    return [(kind, int(size)) for kind, size in (line.split() for line in log.read_text().split("\n") if line)]


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
    dumps = two_dumps(tmp_path)
    started = time.monotonic()
    pid, status, usage, out, err = spawn_and_wait(
        [*TOOLTRAIL, "eval", str(suite), *map(str, dumps), "--format", "json", "-q",
         "--workers", str(workers)],
        child_env(plugin, tmp_path),
        timeout=120,
    )  # fmt: skip
    assert os.waitstatus_to_exitcode(status) == 1, err
    report = json.loads(out)
    assert len(report["cases"]) == 8  # every trace of both files has its row
    for row in report["cases"]:
        assert verdicts(row["scores"]) == {name: (e, x) for name, (e, x) in EXPECTED.items()}
        assert row["passed"] is False
    # Each allocation was stopped at its limit, holding far less than the loop's 1 GiB.
    ends = allocations(tmp_path)
    assert len(ends) == 8, ends
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
        r"read \(\d+ spans\) and evaluated; no report written",
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
