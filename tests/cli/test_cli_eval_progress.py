"""``tooltrail eval``'s progress bar: drawn on a terminal (a pseudo-terminal here) for a run
that takes longer than a second, with files, traces, spans and judge requests; never in a pipe,
never in CI."""

from __future__ import annotations

import os
import pty
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import REFUND_DUMP

from tooltrail.batch.outcomes import ChunkOutcome, GroupOutcome
from tooltrail.checks.score import Score
from tooltrail.cli.progress import judge_requests, progress_wanted
from tooltrail.results import CaseResult

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")

#: A check that takes its time (0.1 s a trace): the run outlasts the bar's one-second delay
#: whatever the machine's speed, without the test waiting on a clock of its own.
SLOW_PLUGIN = """
import time
from dataclasses import dataclass
from tooltrail import Score

@dataclass(frozen=True)
class Slow:
    def evaluate(self, ctx):
        time.sleep(0.1)
        return Score.passing("slow", "slow", "took its time.")

TOOLTRAIL_CHECKS = {"slow": Slow}
"""
SUITE = """\
name: slow
cases:
  - id: slow
    match: all
    evaluators: [slow]
"""
#: Files of the run: one task each (they are small), so the bar moves after each.
FILES = 6


def _workspace(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    (tmp_path / "slow_check.py").write_text(SLOW_PLUGIN, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    dumps = []
    for n in range(FILES):
        dump = tmp_path / f"runs{n}.otlp.jsonl"
        shutil.copy(REFUND_DUMP, dump)
        dumps.append(str(dump))
    args = [str(tmp_path / "suite.yaml"), *dumps, "--plugin", "slow_check", "--workers", "1"]
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    return args, env


def _eval_with_stderr_on_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """``tooltrail eval ARGS`` with stderr on a pseudo-terminal; what it drew there."""
    import fcntl
    import struct
    import termios

    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "tooltrail", "eval", *args],
        stdout=subprocess.DEVNULL,
        stderr=child_fd,
        stdin=subprocess.DEVNULL,
        env={**env, "TERM": "xterm"},
    )
    os.close(child_fd)
    drawn = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal (EIO on Linux)
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main_fd)
    assert process.wait(timeout=120) == 0, drawn.decode(errors="replace")
    return drawn.decode("utf-8", errors="replace")


def test_the_progress_bar_shows_on_a_terminal(tmp_path: Path) -> None:
    args, env = _workspace(tmp_path)
    drawn = _eval_with_stderr_on_a_terminal(args, env)
    assert "evaluating" in drawn
    assert re.search(r"\d+%\|", drawn), drawn  # a bar with an end: bytes out of the total
    # Each file is a task: the counts of those finished, four traces of 18 spans each.
    counts = re.findall(r"(\d+) files, (\d+) traces, (\d+) spans", drawn)
    assert counts, drawn
    assert all(files == str(FILES) for files, _, _ in counts)
    assert all(
        int(traces) % 4 == 0 and int(spans) == int(traces) * 18 // 4 for _, traces, spans in counts
    )


def test_the_progress_bar_never_shows_in_a_pipe(tmp_path: Path) -> None:
    args, env = _workspace(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "tooltrail", "eval", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "evaluating" not in done.stderr and "\r" not in done.stderr and "%|" not in done.stderr
    assert done.stderr.startswith("4 traces read")  # the copies' traces are merged


def test_no_progress_bar_in_ci_even_on_a_terminal(tmp_path: Path) -> None:
    args, env = _workspace(tmp_path)
    drawn = _eval_with_stderr_on_a_terminal(args, {**env, "CI": "true"})
    assert "evaluating" not in drawn and "%|" not in drawn


def test_progress_is_wanted_only_by_a_person_at_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("CI", raising=False)
    assert progress_wanted(False, Terminal())
    assert not progress_wanted(True, Terminal())  # --quiet
    assert not progress_wanted(False, open(os.devnull, "w"))  # noqa: SIM115 - a pipe or a file
    monkeypatch.setenv("CI", "1")
    assert not progress_wanted(False, Terminal())


def test_judge_requests_count_the_attempts_sent_not_the_cache() -> None:
    def judged(attempts: int, cached: bool = False) -> Score:
        score = Score.passing("llm_judge", "llm_judge", "ok.")
        score.judge = {"model": "m", "attempts": attempts, "cached": cached, "skipped": False}
        return score

    scores = [judged(2), judged(1), judged(1, cached=True), Score.passing("x", "x", "ok.")]
    group = GroupOutcome(key="t", trace_ids=("t",), position=(0, 0), results=[])  # type: ignore[arg-type]
    group.results.append(CaseResult(case_id="c", passed=True, scores=scores))
    outcome = ChunkOutcome(
        chunk_index=0, groups=[group], diagnostics=[], span_count=1, byte_count=1
    )
    assert judge_requests(outcome) == 3
