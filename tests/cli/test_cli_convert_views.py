"""``tooltrail convert --format table`` and ``tree``: a block per trace for a person, every call
shown, no JSON lines; the refund example's views as a snapshot; colour only on a terminal
without ``NO_COLOR``; the terminal's width; trace text that cannot draw the table."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import CORPUS, DATA, REFUND_DUMP

from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.report.table import MAX_NAME, fit

#: Every recorded trace file of the corpus (JSON lines and protobuf alike).
CORPUS_FILES = sorted(p for p in CORPUS.glob("*/*") if re.search(r"\.otlp\.(jsonl|pb)$", p.name))
SNAPSHOTS = DATA / "views"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def convert(*args: str, columns: int = 100) -> str:
    """``tooltrail convert ARGS`` in this process, its output not a terminal."""
    result = CliRunner().invoke(
        main, ["convert", *args], env={"COLUMNS": str(columns), "NO_COLOR": None}
    )
    assert result.exit_code == 0, result.output
    return result.stdout


def blocks(text: str) -> list[list[str]]:
    """The blocks of a view: one per trace, a blank line between two."""
    return [block.splitlines() for block in text.split("\n\n")] if text else []


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_table_of_every_corpus_file_shows_every_call_and_no_json(path: Path) -> None:
    traces = list(read_traces(str(path)))
    text = convert("--format", "table", str(path))
    assert not any(line.lstrip().startswith(("{", "[")) for line in text.splitlines())
    found = blocks(text)
    assert len(found) == len(traces)
    for block, trace in zip(found, traces, strict=True):
        assert block[0].startswith(f"trace {trace.trace_id}")
        rows = [line for line in block if re.match(r"^  +\d+  ", line)]
        assert len(rows) == len(trace.tool_calls), block
        for n, (row, call) in enumerate(zip(rows, trace.tool_calls, strict=True), 1):
            assert row.split()[0] == str(n)
            shown = fit(call.name, MAX_NAME)
            assert f"  {shown}" in row or f"  {shown[: MAX_NAME - 3]}" in row, (row, call.name)
        if not trace.tool_calls:
            assert "  (no tool calls)" in block


def test_the_tree_of_every_corpus_file_shows_every_call() -> None:
    paths = [str(p) for p in CORPUS_FILES]
    text = convert("--format", "tree", *paths)
    traces = list(read_traces(paths))  # a trace in two files (JSON and protobuf) is one
    found = blocks(text)
    assert len(found) == len(traces)
    for block, trace in zip(found, traces, strict=True):
        calls = [line for line in block if re.search(r"[├└]── \S+\(.*\)  (ok|error)  ", line)]
        assert len(calls) == len(trace.tool_calls), block


@pytest.mark.parametrize("view", ["table", "tree"])
def test_the_refund_example_views_match_their_snapshots(view: str) -> None:
    text = convert("--format", view, str(REFUND_DUMP))
    expected = (SNAPSHOTS / f"refund.{view}.txt").read_text(encoding="utf-8")
    assert text == expected


def test_with_content_the_table_shows_results_and_turns_redacted(tmp_path: Path) -> None:
    path = CORPUS / "pydantic-ai" / "a_refund_ok.otlp.jsonl"
    text = convert("--format", "table", "--content", str(path), columns=140)
    (titles,) = [line for line in text.splitlines() if line.startswith("  #  ")]
    assert titles.split()[-1] == "result"
    assert '{"refund_id":"RF-1","status":"issued"}' in text
    assert "  user: I want a refund for order ORD-7731, I'm customer C-118." in text
    assert "  reply: Your refund of $49.99 for ORD-7731 has been issued." in text


def _forged_dump(tmp_path: Path) -> Path:
    """One trace whose tool arguments try to draw a row of their own and colour the screen,
    and carry a secret."""
    line = REFUND_DUMP.read_text(encoding="utf-8").splitlines()[0]
    forged = json.dumps(
        {"order_id": "X\n  9  web_search  \x1b[31mq=1  ok  1 ms", "password": "hunter2"}
    )
    data = json.loads(line)
    for resource in data["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for attribute in span.get("attributes", []):
                    if attribute["key"] == "gen_ai.tool.call.arguments":
                        attribute["value"] = {"stringValue": forged}
    path = tmp_path / "forged.otlp.jsonl"
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("view", ["table", "tree"])
def test_trace_text_cannot_draw_a_row_or_colour_the_terminal(tmp_path: Path, view: str) -> None:
    text = convert("--format", view, str(_forged_dump(tmp_path)), columns=200)
    assert "\x1b" not in text and "hunter2" not in text and "[REDACTED]" in text
    assert "\\n  9  web_search  \\u001b[31m" in text  # JSON text, escaped
    assert not any(line.startswith("  9  ") for line in text.splitlines())


def _on_a_terminal(args: list[str], env: dict[str, str], columns: int) -> str:
    """``tooltrail convert ARGS`` with its output on a pseudo-terminal ``columns`` wide."""
    import fcntl
    import struct
    import termios

    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS")}
    process = subprocess.Popen(
        [sys.executable, "-m", "tooltrail", "convert", *args],
        stdout=child_fd,
        stderr=subprocess.PIPE,
        env={**environment, "TERM": "xterm", **env},
    )
    os.close(child_fd)
    out = b""
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # the child closed the terminal (EIO on Linux)
            break
        if not chunk:
            break
        out += chunk
    os.close(main_fd)
    assert process.wait(timeout=60) == 0
    return out.decode("utf-8").replace("\r\n", "\n")


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_on_a_terminal_the_table_is_coloured_and_as_wide_as_the_terminal() -> None:
    text = _on_a_terminal(["--format", "table", str(REFUND_DUMP)], {}, columns=72)
    assert ANSI.search(text) is not None
    plain = ANSI.sub("", text)
    assert max(len(line) for line in plain.splitlines()) <= 72
    assert "issue_refund" in plain


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals")
def test_no_color_turns_the_colour_off_on_a_terminal() -> None:
    text = _on_a_terminal(["--format", "table", str(REFUND_DUMP)], {"NO_COLOR": "1"}, 100)
    assert "\x1b" not in text and "issue_refund" in text


def test_json_stays_the_default_for_pipes() -> None:
    text = convert(str(REFUND_DUMP))
    assert [json.loads(line)["trace_id"] for line in text.splitlines()][0] == (
        "55da56e89fc4b19f37a5448ebf293b63"
    )


def test_an_output_without_box_drawing_characters_gets_an_ascii_tree() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tooltrail", "convert", "--format", "tree", str(REFUND_DUMP)],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "ascii"},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("ascii")
    assert '`-- turn 1\n    |-- lookup_order(order_id="ORD-7731")  ok  285 us\n' in text
