"""A signal at any moment of ``tooltrail serve --workers 2``'s start-up or shutdown leaves no
process behind: not the router, not a worker, not multiprocessing's resource tracker.

``serve`` runs in its own session, so every process it starts (and every process those start)
is found by session id in ``/proc``, even once an orphan has been handed to another parent.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from serve_helpers import post
from test_serve_shutdown import LISTENING, PB, agent_traces

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the process table from /proc"
)

#: Generous: a clean stop takes about a second; what is left after this is left for good.
GONE_WITHIN_S = 45.0
START_WITHIN_S = 90.0


def session_processes(sid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the live processes of session ``sid`` (zombies excluded)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        # fields: state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append((int(entry), command))
    return found


class Serve:
    """``tooltrail serve --workers 2`` in a session of its own; stderr goes to a file."""

    def __init__(self, tmp_path: Path) -> None:
        self.stderr = tmp_path / "stderr.txt"
        with self.stderr.open("w") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
                 "--workers", "2", "--grpc-port", "0", "--http-port", "0",
                 "--max-age", "600", "--grace", "0.2"],
                stdout=subprocess.DEVNULL,
                stderr=err,
                start_new_session=True,
            )  # fmt: skip
        self.sid = self.process.pid

    def processes(self) -> list[tuple[int, str]]:
        return session_processes(self.sid)

    def wait_for(self, what: Callable[[], object], label: str) -> object:
        deadline = time.monotonic() + START_WITHIN_S
        while time.monotonic() < deadline:
            found = what()
            if found:
                return found
            if self.process.poll() is not None:
                pytest.fail(f"serve ended before {label}: {self.stderr.read_text()}")
            time.sleep(0.01)
        pytest.fail(f"serve never reached {label}")

    def workers(self) -> int:
        return sum("multiprocessing.spawn" in command for _, command in self.processes())

    def port(self) -> int | None:
        found = LISTENING.search(self.stderr.read_text())
        return int(found.group(1)) if found else None

    def left_behind(self) -> list[tuple[int, str]]:
        """Wait for every process of the session to end; those still alive at the bound."""
        deadline = time.monotonic() + GONE_WITHIN_S
        while True:
            self.process.poll()  # reap the router itself
            alive = self.processes()
            if not alive:
                # It may have ended just after the poll (a zombie is not alive): reap it now,
                # so its return code is known.
                self.process.wait(timeout=GONE_WITHIN_S)
                return alive
            if time.monotonic() > deadline:
                return alive
            time.sleep(0.05)

    def kill_all(self) -> None:
        for pid, _ in self.processes():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(10)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    started = Serve(tmp_path)
    try:
        yield started
    finally:
        started.kill_all()


def _at_once(serve: Serve) -> None:
    return None


def _importing(serve: Serve) -> None:
    time.sleep(0.2)  # the moment under test: a signal while the process is still importing


def _first_worker_spawning(serve: Serve) -> None:
    serve.wait_for(serve.workers, "a worker process")


def _both_workers_starting(serve: Serve) -> None:
    serve.wait_for(lambda: serve.workers() >= 2, "two worker processes")


def _serving(serve: Serve) -> None:
    serve.wait_for(serve.port, "the start-up line")


MOMENTS = {
    "at once": _at_once,
    "after 0.2 s": _importing,
    "first worker spawning": _first_worker_spawning,
    "both workers starting": _both_workers_starting,
    "serving": _serving,
}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
@pytest.mark.parametrize("moment", list(MOMENTS))
def test_a_signal_during_start_up_leaves_no_process(serve: Serve, moment: str, signum: int) -> None:
    MOMENTS[moment](serve)
    os.kill(serve.process.pid, signum)
    assert serve.left_behind() == []


def test_a_signal_during_shutdown_leaves_no_process(serve: Serve) -> None:
    serve.wait_for(serve.port, "the start-up line")
    port = serve.port()
    assert port is not None
    body, _ = agent_traces(20, with_root=False)  # held until shutdown evaluates them
    assert post(port, body, PB)[0] == 200
    os.kill(serve.process.pid, signal.SIGTERM)
    time.sleep(0.05)  # the moment under test: a second signal in the middle of the shutdown
    os.kill(serve.process.pid, signal.SIGTERM)
    os.kill(serve.process.pid, signal.SIGINT)
    assert serve.left_behind() == []
    assert serve.process.returncode == 0
    assert '"traces_partial":20' in serve.stderr.read_text()


@pytest.mark.parametrize("moment", ["both workers starting", "serving"])
def test_workers_die_with_a_killed_router(serve: Serve, moment: str) -> None:
    MOMENTS[moment](serve)
    os.kill(serve.process.pid, signal.SIGKILL)
    assert serve.left_behind() == []


def test_a_signal_during_start_up_stops_cleanly(serve: Serve) -> None:
    _both_workers_starting(serve)
    os.kill(serve.process.pid, signal.SIGTERM)
    assert serve.left_behind() == []
    assert serve.process.returncode == 0
    # Almost always still starting; on a fast machine the workers may just have been ready.
    said = serve.stderr.read_text()
    assert "stopped by a signal during start-up" in said or "tooltrail serve: stopped;" in said
