"""agentevals' OTLP fixture corpus, read from ``../shared/external`` (never copied here), against
the truth files its authors wrote: ordered tool calls (name, arguments, error), turn count and
final reply, through the Python API, the CLI, and each fixture split into a traces file and a
logs file (JSON lines, and length-prefixed protobuf).
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from click.testing import CliRunner
from external_truth import EXTERNAL, fixture_id, fixtures, judge, load_truth, split_fixture

from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.model import ToolCall

pytestmark = pytest.mark.skipif(
    not EXTERNAL.is_dir(), reason=f"the external corpus is not beside the checkout ({EXTERNAL})"
)

FIXTURES = fixtures()
IDS = [fixture_id(p) for p in FIXTURES]


def _verdict(path: Path, traces: list[Any]) -> None:
    verdict = judge(fixture_id(path), load_truth(path), traces)
    assert verdict.right, verdict.problems


def _otlp(path: Path) -> bool:
    return "resourceSpans" in json.loads(path.read_text())


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_python_api(path: Path) -> None:
    _verdict(path, list(read_traces([str(path)], group="conversation")))


@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_cli_convert(path: Path) -> None:
    result = CliRunner().invoke(main, ["convert", "--group", "conversation", str(path)])
    # 1: log records left unjoined (reported on stderr, which the runner mixes in)
    assert result.exit_code == (1 if "not joined" in result.output else 0), result.output
    traces = []
    for line in result.output.splitlines():
        if not line.startswith("{"):
            continue
        out = json.loads(line)
        calls = [
            ToolCall(name=c["name"], args=c.get("args"), status=c.get("status", "unset"))
            for c in out["tool_calls"]
        ]
        traces.append(
            SimpleNamespace(tool_calls=calls, turn_count=out["turn_count"], output=out["output"])
        )
    _verdict(path, traces)


@pytest.mark.parametrize("framing", ["jsonl", "pb"])
@pytest.mark.parametrize("path", FIXTURES, ids=IDS)
def test_split_into_traces_and_logs_files(path: Path, framing: str, tmp_path: Path) -> None:
    if not _otlp(path):
        pytest.skip("a trace-store download, not an OTLP document: nothing to split")
    files = split_fixture(path, tmp_path, framing)
    _verdict(path, list(read_traces([str(f) for f in files], group="conversation")))
