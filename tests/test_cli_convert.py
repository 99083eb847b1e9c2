"""``tooltrail convert``: JSON lines on stdout, diagnostics on stderr, exit 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "data" / "corpus"
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
