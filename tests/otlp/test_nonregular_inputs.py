"""FIFOs, sockets and devices among the inputs (issue 22, item 7): skipped with a diagnostic
naming the file, never opened. Opening a FIFO with no writer blocks for ever, so every run
that could block is a child process with a timeout (killed with its workers on expiry)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import recorded_refund_case, suite_yaml
from test_batch_support import SEED_RUNS, jsonl, record

from tooltrail.otlp import Diagnostic, expand_paths

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

TOOLTRAIL = str(Path(sys.executable).with_name("tooltrail"))
#: Generous: a run takes a second or two; one that opens the FIFO never ends.
TIMEOUT_S = 120
SUITE = suite_yaml(
    recorded_refund_case(
        "match", "required_tools", evaluators=[{"name": "tool_call_precision", "threshold": 1.0}]
    ),
    name="refund-agent",
)
FIFO_SKIPPED = "not a regular file (a FIFO; pipe it to standard input as -): skipped unread"


@pytest.fixture()
def dumps(tmp_path: Path) -> Path:
    """A directory of one real dump and a FIFO named like one (sorted after it)."""
    folder = tmp_path / "dumps"
    folder.mkdir()
    (folder / "a.jsonl").write_bytes(jsonl(record(SEED_RUNS[:1])))
    os.mkfifo(folder / "b.jsonl")
    return folder


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``tooltrail ARGS`` in its own session, killed with its workers past ``TIMEOUT_S``."""
    child = subprocess.Popen(
        [TOOLTRAIL, *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = child.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        pytest.fail(f"tooltrail {' '.join(map(str, args))} still running after {TIMEOUT_S} s")
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


def test_listing_a_directory_leaves_out_fifos_and_sockets_naming_them(dumps: Path) -> None:
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(dumps / "c.otlp"))
        skipped: list[Diagnostic] = []
        found = list(expand_paths([str(dumps)], [], unreadable=skipped))
    assert found == [(str(dumps / "a.jsonl"), False)]
    assert [(d.path, d.message) for d in skipped] == [
        (str(dumps / "b.jsonl"), FIFO_SKIPPED),
        (str(dumps / "c.otlp"), "not a regular file (a socket): skipped unread"),
    ]


def test_a_named_fifo_a_glob_match_and_a_link_to_one_are_left_out_too(dumps: Path) -> None:
    os.symlink(dumps / "b.jsonl", dumps.parent / "link.jsonl")
    problems: list[Diagnostic] = []
    named = [str(dumps / "b.jsonl"), str(dumps.parent / "link.jsonl"), str(dumps / "*.jsonl")]
    found = list(expand_paths(named, problems))
    assert found == [(str(dumps / "a.jsonl"), True)]
    assert [d.path for d in problems] == [
        str(dumps / "b.jsonl"),
        str(dumps.parent / "link.jsonl"),
        str(dumps / "b.jsonl"),
    ]
    assert {d.message for d in problems} == {FIFO_SKIPPED}


def test_a_device_named_on_the_command_line_is_left_out(tmp_path: Path) -> None:
    problems: list[Diagnostic] = []
    assert list(expand_paths(["/dev/null"], problems)) == []
    assert [str(d) for d in problems] == [
        "/dev/null: not a regular file (a character device): skipped unread"
    ]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_eval_of_a_directory_holding_a_fifo_skips_it_and_ends(
    workers: str, dumps: Path, tmp_path: Path
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    done = run("eval", "--workers", workers, "-q", suite, dumps)
    assert lines(done.stderr) == [f"{dumps / 'b.jsonl'}: {FIFO_SKIPPED}"]
    assert done.returncode == 3  # skipped input, and the dump beside it passed
    assert "1/1 runs passed" in done.stdout


def test_eval_of_a_named_fifo_says_so_and_ends(dumps: Path, tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    done = run("eval", "--workers", "1", "-q", suite, dumps / "b.jsonl")
    (line,) = lines(done.stderr)
    assert f"{dumps / 'b.jsonl'}: {FIFO_SKIPPED}" in line
    assert done.returncode == 3


def test_convert_skips_a_fifo_and_prints_the_rest(dumps: Path) -> None:
    done = run("convert", dumps, dumps / "b.jsonl")
    assert lines(done.stderr) == [f"{dumps / 'b.jsonl'}: {FIFO_SKIPPED}"] * 2
    assert len(lines(done.stdout)) == 1 and done.returncode == 1


def test_iter_records_of_a_fifo_refuses_it_without_blocking(dumps: Path) -> None:
    """A path given straight to the reader (no listing) is opened non-blocking and refused."""
    code = (
        "import sys\n"
        "from tooltrail.otlp import iter_records\n"
        "found = []\n"
        "print(list(iter_records(sys.argv[1], diagnostics=found)), [str(d) for d in found])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(dumps / "b.jsonl")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert done.stdout.strip() == f"[] ['{dumps / 'b.jsonl'}: {FIFO_SKIPPED}']"
