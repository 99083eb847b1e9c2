"""``tooltrail convert``: JSON lines on stdout, diagnostics on stderr, exit 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fixtures import CORPUS

MULTITURN = CORPUS / "pydantic-ai" / "e_booking_multiturn_bad.otlp.jsonl"
TRUTH = json.loads((CORPUS / "pydantic-ai" / "e_booking_multiturn_bad.truth.json").read_text())


def run(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "convert", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )


def lines(result: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_prints_one_json_object_per_trace_with_the_agreed_fields() -> None:
    result = run(str(MULTITURN))
    assert (result.returncode, result.stderr) == (0, b"")
    objects = lines(result)
    assert [o["trace_id"] for o in objects] == TRUTH["trace_ids"]
    first = objects[0]
    assert set(first) == {"trace_id", "tool_calls", "turn_count", "output", "metadata"}
    assert first["tool_calls"] == [
        {
            "name": "create_booking",
            "args": TRUTH["traces"][0]["calls"][0]["args"],
            "call_id": TRUTH["traces"][0]["calls"][0]["call_id"],
            "status": "unset",
            "turn": 1,
            "source": "genai:gen_ai.tool.call.arguments",
            "span_id": first["tool_calls"][0]["span_id"],
        }
    ]
    assert len(first["tool_calls"][0]["span_id"]) == 16
    assert first["turn_count"] == 1
    assert first["metadata"]["service.name"] == "corpus-pydantic-ai"


def test_group_conversation_prints_one_object_with_numbered_turns() -> None:
    result = run(str(MULTITURN), "--group", "conversation")
    assert result.returncode == 0
    (conversation,) = lines(result)
    assert conversation["turn_count"] == TRUTH["turn_count"]
    expected = [(c["tool"], t["turn"]) for t in TRUTH["traces"] for c in t["calls"]]
    assert [(c["name"], c["turn"]) for c in conversation["tool_calls"]] == expected
    assert conversation["metadata"]["trace_ids"] == TRUTH["trace_ids"]


def test_skipped_record_is_reported_on_stderr_and_exits_1(tmp_path: Path) -> None:
    good = MULTITURN.read_bytes().splitlines()
    dump = tmp_path / "dump.jsonl"
    dump.write_bytes(b"\n".join([good[0], b"{not json", good[1]]) + b"\n")
    result = run(str(dump))
    assert result.returncode == 1
    assert len(lines(result)) == 2
    assert result.stderr.decode().startswith(f"{dump}:2: ")


def test_stdin_and_directories_are_inputs(tmp_path: Path) -> None:
    from_stdin = run("-", stdin=MULTITURN.read_bytes())
    from_dir = run(str(CORPUS / "pydantic-ai"))
    assert from_stdin.returncode == 0
    assert [o["trace_id"] for o in lines(from_stdin)] == TRUTH["trace_ids"]
    assert from_dir.returncode == 0
    assert set(TRUTH["trace_ids"]) <= {o["trace_id"] for o in lines(from_dir)}


def test_a_path_naming_nothing_is_a_usage_error(tmp_path: Path) -> None:
    result = run(str(MULTITURN), str(tmp_path / "missing.jsonl"))
    assert result.returncode == 2
    assert result.stdout == b""
    assert b"missing.jsonl: no such file or directory" in result.stderr


def test_an_unknown_group_is_a_usage_error() -> None:
    result = run(str(MULTITURN), "--group", "turn")
    assert result.returncode == 2
    assert result.stdout == b""


def test_content_prints_each_turns_input_and_reply_and_each_calls_result() -> None:
    plain = lines(run(str(MULTITURN)))
    result = run("--content", "--group", "conversation", str(MULTITURN))
    assert (result.returncode, result.stderr) == (0, b"")
    (conversation,) = lines(result)
    assert [(t["turn"], t["input"], t["reply"]) for t in conversation["turns"]] == [
        (1, "Book me a table at 10am.", "Booked for 10am."),
        (2, "Actually, make it 11am.", "Moved to 11am."),
    ]
    results = [call["result"] for call in conversation["tool_calls"]]
    assert results[0] == {"booking_id": "BK-1", "status": "confirmed"}
    assert all(r is not None for r in results)
    assert "turns" not in plain[0] and "result" not in plain[0]["tool_calls"][0]


def test_content_is_redacted_with_the_configured_rules(tmp_path: Path) -> None:
    """Tool results and messages are customer data: the configured key and value rules apply."""
    import os

    env = {
        **os.environ,
        "TOOLTRAIL_REDACT_KEYS": "booking_id",
        "TOOLTRAIL_REDACT_VALUE_PATTERNS": "1[01]am",
    }
    result = subprocess.run(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "convert", "--content",
         "--group", "conversation", str(MULTITURN)],
        capture_output=True, timeout=120, check=False, env=env,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (0, b"")
    (conversation,) = lines(result)
    assert b"BK-1" not in result.stdout.split(b'"metadata"')[0]
    assert b"10am" not in result.stdout and b"11am" not in result.stdout
    first = conversation["tool_calls"][0]
    assert first["result"] == {"booking_id": "[REDACTED]", "status": "confirmed"}
    assert first["args"] == {"time": "[REDACTED]"}
    assert conversation["turns"][0]["input"] == "Book me a table at [REDACTED]."
