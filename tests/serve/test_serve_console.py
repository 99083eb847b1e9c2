"""``tooltrail serve`` speaks: one console line per evaluated trace with its verdict, none with
``--quiet``, at most ``--console-rate`` a second under a flood (the rest counted and said),
trace text that cannot forge a line, the counters at most once a minute; TLS files that cannot
serve exit 2 naming the file and the cause."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
from fixtures import REFUND_DUMP, REFUND_SUITE
from serve_helpers import ANY_TRACE_SUITE, post, wait_for_stat, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of
from test_serve_shutdown import agent_traces, start_serve

from tooltrail.serve import ServeConfig, start_in_thread
from tooltrail.serve.console import COUNTER_WORDS, CounterLines, counters_line

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

JSON = {"Content-Type": "application/json"}
#: A verdict line: time, trace id, cases, verdict, and the rest.
VERDICT = re.compile(r"^(\d\d:\d\d:\d\d) ([0-9a-f]{32}) (\S+) (PASS|FAIL|ERROR|PARTIAL)(?: (.*))?$")
LEFT_OUT = re.compile(r"^\d\d:\d\d:\d\d tooltrail serve: (\d+) verdict lines? left out ")
#: The refund runs' trace ids (their ``tooltrail.case_id`` tags), as the README shows them.
RUNS = {
    "55da56e89fc4b19f37a5448ebf293b63": "correct",
    "5953b3e8788098ffd609159f8008ba53": "skipped-verification",
    "0cbd5666aae5e478930b6ac481752d11": "wrong-amount",
    "98f4bf1af951cb84eeeed56a9805b323": "looping",
}


def _stop(process: subprocess.Popen[str]) -> tuple[list[str], dict[str, int]]:
    """SIGTERM, then the lines of stderr after the listening line, and the final counters."""
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    lines = stderr.splitlines()
    stopped = [line for line in lines if line.startswith("tooltrail serve: stopped; ")]
    assert len(stopped) == 1, stderr
    return lines, orjson.loads(stopped[0].split("; ", 1)[1])


def _send_refund_runs(port: int) -> None:
    for line in REFUND_DUMP.read_bytes().splitlines():
        status, _, _ = post(port, line, JSON)
        assert status == 200


def test_serve_prints_one_line_per_refund_run_with_its_verdict() -> None:
    process, port = start_serve(
        "--suite", str(REFUND_SUITE), "--no-grpc", "--http-port", "0", "--grace", "0.05"
    )  # fmt: skip
    try:
        _send_refund_runs(port)
        wait_for_stat(port, "traces_evaluated", 4)
    finally:
        lines, stats = _stop(process)
    verdicts = [VERDICT.match(line) for line in lines]
    found = {m.group(2): m for m in verdicts if m is not None}
    assert len([m for m in verdicts if m is not None]) == 4 == len(found)
    assert set(found) == set(RUNS)
    by_run = {RUNS[trace]: match for trace, match in found.items()}
    assert {run: m.group(3) for run, m in by_run.items()} == dict.fromkeys(RUNS.values(), "refund")
    assert by_run["correct"].group(4) == "PASS" and by_run["correct"].group(5) is None
    # The first failure of each bad run, with its explanation, as the README shows it.
    assert by_run["skipped-verification"].group(4) == "FAIL"
    assert by_run["skipped-verification"].group(5) == (
        "required_tool:verify_identity: Required tool 'verify_identity' was not called. (+1 more)"
    )
    assert by_run["wrong-amount"].group(5) == (
        "tool_arg_values:issue_refund: Tool 'issue_refund' was called with "
        "[{'order_id': 'ORD-7731', 'amount': 499.9}], not {'order_id': 'ORD-7731', 'amount': "
        "49.99}."
    )
    assert (
        by_run["looping"]
        .group(5)
        .startswith("tool_call_precision: 5/6 tool calls were in the allowed set")
    )
    assert stats["console_lines"] == 4 and stats["console_lines_left_out"] == 0


def test_quiet_serve_prints_no_verdict_line() -> None:
    process, port = start_serve(
        "--suite", str(REFUND_SUITE), "--no-grpc", "--http-port", "0", "--grace", "0.05",
        "--quiet",
    )  # fmt: skip
    try:
        _send_refund_runs(port)
        wait_for_stat(port, "traces_evaluated", 4)
    finally:
        lines, stats = _stop(process)
    assert [line for line in lines if VERDICT.match(line)] == []
    assert stats["traces_evaluated"] == 4
    assert "console_lines" not in stats


@pytest.mark.parametrize("workers", [1, 2])
def test_the_console_rate_holds_under_a_flood(tmp_path: Path, workers: int) -> None:
    rate, traces = 3, 300
    process, port = start_serve(
        "--suite", str(write_suite(tmp_path, ANY_TRACE_SUITE)), "--no-grpc",
        "--http-port", "0", "--grace", "0.05", "--console-rate", str(rate),
        "--workers", str(workers),
    )  # fmt: skip
    try:
        for _ in range(traces // 20):
            body, _ = agent_traces(20)
            assert post(port, body, PROTOBUF)[0] == 200
        wait_for_stat(port, "traces_evaluated", traces)
    finally:
        lines, stats = _stop(process)
    written = [m for m in map(VERDICT.match, lines) if m is not None]
    per_second = Counter(m.group(1) for m in written)
    assert max(per_second.values()) <= rate, per_second
    said = sum(int(m.group(1)) for m in map(LEFT_OUT.match, lines) if m is not None)
    # Every verdict is written or counted, and every count is said before the end.
    assert len(written) + stats["console_lines_left_out"] == traces == stats["traces_evaluated"]
    assert said == stats["console_lines_left_out"] > 0
    assert stats["console_lines"] == len(written)


def _capture_lines(capfd: pytest.CaptureFixture[str], tmp_path: Path, body: bytes) -> list[str]:
    """``body`` sent to a receiver in this process with its console on; its stderr lines."""
    receiver = start_in_thread(
        ServeConfig(
            suite=write_suite(tmp_path, FORGED_SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            console=True,
        )
    )
    try:
        assert receiver.http_port is not None
        capfd.readouterr()
        assert post(receiver.http_port, body, PROTOBUF)[0] == 200
        wait_for_stat(receiver.http_port, "traces_evaluated", 1)
    finally:
        receiver.stop()
    return capfd.readouterr().err.splitlines()


FORGED_SUITE = """\
name: forged
cases:
  - id: lookup
    match: all
    expected_tool_arguments:
      lookup_order: {order_id: ORD-1}
"""


def test_trace_text_cannot_forge_a_console_line(
    capfd: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    forged = (
        "X\n12:00:00 00000000000000000000000000000000 lookup PASS\r\x1b[2K\x1b[32mall good"
        "\u202egnirts"
    )
    arguments = orjson.dumps({"order_id": forged, "password": "hunter2"}).decode()
    spans = agent_trace(
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.arguments": arguments,
            }
        ]
    )
    lines = _capture_lines(capfd, tmp_path, body_of(spans))
    verdicts = [line for line in lines if VERDICT.match(line)]
    assert len(verdicts) == 1, lines
    (line,) = verdicts
    assert VERDICT.match(line).group(4) == "FAIL"  # type: ignore[union-attr]
    assert "\\n12:00:00 00000000000000000000000000000000 lookup PASS\\r\\x1b[2K" in line
    assert "\\u202e" in line and "\x1b" not in line and "\u202e" not in line
    assert "hunter2" not in line and "[REDACTED]" in line
    assert not any("00000000000000000000000000000000" in other for other in lines if other != line)


def test_the_counters_come_once_a_minute_at_most_and_only_when_they_moved() -> None:
    now = [1000.0]
    stats = {"traces_evaluated": 0}
    written: list[str] = []
    lines = CounterLines(lambda: stats, written.append, interval_s=60, clock=lambda: now[0])
    stats["traces_evaluated"] = 5
    now[0] += 59
    assert not lines.tick() and written == []  # moved, but not a minute yet
    now[0] += 1
    assert lines.tick() and written == [counters_line(stats, now[0])]
    now[0] += 120
    assert not lines.tick()  # a minute passed, nothing moved: an idle receiver is silent
    stats["traces_evaluated"] = 6
    now[0] += 1
    assert lines.tick() and len(written) == 2
    assert "6 traces evaluated" in written[1]
    assert all(words in written[1] for _, words in COUNTER_WORDS)


# --- TLS files that cannot serve: exit 2, the file and the cause named ------------------------


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


@pytest.fixture
def tls_files(tmp_path: Path) -> dict[str, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    files: dict[str, Path] = {}
    for name in ("one", "two"):
        cert, key = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
            "/CN=localhost", "-keyout", str(key), "-out", str(cert),
        )  # fmt: skip
        files[f"{name}.crt"], files[f"{name}.key"] = cert, key
    files["garbage"] = tmp_path / "garbage.pem"
    files["garbage"].write_text("not a certificate\n", encoding="utf-8")
    damaged = files["one.crt"].read_text(encoding="ascii").splitlines()
    files["damaged"] = tmp_path / "damaged.crt"
    files["damaged"].write_text("\n".join(damaged[:4] + damaged[-1:]) + "\n", encoding="ascii")
    files["encrypted"] = tmp_path / "encrypted.key"
    _openssl(
        "pkey", "-in", str(files["one.key"]), "-aes256", "-passout", "pass:x", "-out",
        str(files["encrypted"]),
    )  # fmt: skip
    return files


@pytest.mark.parametrize(
    ("cert", "key", "named", "cause"),
    [
        ("garbage", "one.key", "--tls-cert garbage.pem", "holds no PEM certificate"),
        ("damaged", "one.key", "--tls-cert damaged.crt", "not a valid certificate"),
        ("one.crt", "garbage", "--tls-key garbage.pem", "holds no PEM private key"),
        ("one.crt", "two.key", "--tls-key two.key", "does not belong to the certificate"),
        ("one.crt", "encrypted", "--tls-key encrypted.key", "the private key is encrypted"),
    ],
)
def test_tls_files_that_cannot_serve_exit_2_naming_the_file_and_the_cause(
    tls_files: dict[str, Path], cert: str, key: str, named: str, cause: str
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tooltrail", "serve", "--grpc-port", "0", "--http-port", "0",
         "--tls-cert", str(tls_files[cert]), "--tls-key", str(tls_files[key])],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    assert line.startswith("tooltrail serve: --tls-")
    assert named.split(" ")[1] in line and named.split(" ")[0] in line and cause in line
    assert "Traceback" not in done.stderr
