"""``tooltrail eval`` samples a check with ``sample:`` as serve and live do
(``tooltrail.sampling``): the same traces on every run and with any number of workers, a
rarer check's sample inside a commoner one's, the others giving the check a skipped score,
and test traffic scored fully."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import REFUND_DUMP

from tooltrail.cli import main

SUITE = """\
name: sampled
cases:
  - id: refund
    match: all
    required_tools: [lookup_order]
    evaluators:
      - {name: no_redundant_tool_calls, threshold: 1.0, sample: 0.5}
      - {name: tool_call_precision, threshold: 0.0, sample: 0.2}
"""
TRACES = 80


def _dump(path: Path, test_marked: int = 0) -> Path:
    """``TRACES`` copies of the refund example's first run, each with its own trace id; the
    first ``test_marked`` carry the test-traffic resource attribute."""
    line = REFUND_DUMP.read_text().splitlines()[0]
    first = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
    out = []
    for n in range(TRACES):
        doc = json.loads(line.replace(first, f"{n + 1:032x}"))
        if n < test_marked:
            doc["resourceSpans"][0]["resource"]["attributes"].append(
                {"key": "tooltrail.test", "value": {"stringValue": "true"}}
            )
        out.append(json.dumps(doc))
    path.write_text("\n".join(out) + "\n")
    return path


def _judged(tmp_path: Path, dump: Path, *extra: str) -> dict[str, set[str]]:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    report = tmp_path / "report.json"
    result = CliRunner().invoke(
        main, ["eval", str(suite), str(dump), "--format", "json", "--out", str(report), *extra]
    )
    assert result.exit_code in (0, 1), result.output
    judged: dict[str, set[str]] = {"no_redundant_tool_calls": set(), "tool_call_precision": set()}
    for row in json.loads(report.read_text())["cases"]:
        for score in row["scores"]:
            if score["name"] in judged and not score.get("skipped"):
                judged[score["name"]].add(row["trace_id"])
    return judged


@pytest.mark.parametrize("workers", ["1", "2"])
def test_eval_samples_the_same_traces_nested_by_rate(tmp_path: Path, workers: str) -> None:
    dump = _dump(tmp_path / "runs.jsonl")
    first = _judged(tmp_path, dump, "--workers", workers)
    half, fifth = first["no_redundant_tool_calls"], first["tool_call_precision"]
    assert 0.3 * TRACES <= len(half) <= 0.7 * TRACES
    assert 0.05 * TRACES <= len(fifth) <= 0.35 * TRACES
    assert fifth <= half  # one hash for every check: a rarer sample inside a commoner one
    assert _judged(tmp_path, dump, "--workers", "1") == first


def test_test_traffic_is_scored_by_every_check(tmp_path: Path) -> None:
    dump = _dump(tmp_path / "runs.jsonl", test_marked=TRACES)
    judged = _judged(tmp_path, dump)
    assert len(judged["no_redundant_tool_calls"]) == len(judged["tool_call_precision"]) == TRACES
