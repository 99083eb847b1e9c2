"""Bad input costs the bad records only: each is reported with file and line (or offset)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from test_batch_support import SEED_RUNS, jsonl, prefixed_pb, record, write

from tooltrail.batch import run_batch
from tooltrail.cli import main
from tooltrail.convert import TraceCollector
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {"name": "s", "cases": [{"id": "any", "match": "all", "required_tools": ["lookup_order"]}]}
)


def test_a_truncated_protobuf_record_is_reported_at_its_offset(tmp_path: Path) -> None:
    data = prefixed_pb(record(SEED_RUNS))
    dump = write(tmp_path / "cut.pb", data[:-10])
    result = run_batch(SUITE, [dump], workers=1, chunk_bytes=1_000)
    assert len(result.results) == 3  # the last run's record is lost, the others are evaluated
    (problem,) = result.diagnostics
    assert problem.path == dump and problem.offset is not None
    assert "truncated" in problem.message


def test_a_stray_non_otlp_file_in_a_directory_is_skipped_quietly(tmp_path: Path) -> None:
    write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS)))
    write(tmp_path / "notes.json", b'{"what": "not a trace"}\n')
    result = run_batch(SUITE, [str(tmp_path)], workers=1)
    assert len(result.results) == 4
    assert result.diagnostics == []


def test_a_named_non_otlp_file_is_reported(tmp_path: Path) -> None:
    notes = write(tmp_path / "notes.json", b'{"what": "not a trace"}\n')
    (problem,) = run_batch(SUITE, [notes], workers=1).diagnostics
    assert (problem.path, problem.line) == (notes, 1)


def test_a_record_the_converter_cannot_handle_is_skipped_and_the_rest_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = record(SEED_RUNS)
    poisoned = format(runs[1][0].context.trace_id, "032x")
    dump = write(tmp_path / "runs.jsonl", jsonl(runs))
    original = TraceCollector.add

    def add(self: TraceCollector, span):  # type: ignore[no-untyped-def]
        if span.trace_id == poisoned:  # (a span, or the core's part of a trace)
            raise RuntimeError("converter bug")
        return original(self, span)

    monkeypatch.setattr(TraceCollector, "add", add)
    result = run_batch(SUITE, [dump], workers=1)
    assert [r.label for r in result.results] == ["correct", "wrong-amount", "looping"]
    (problem,) = result.diagnostics
    assert (problem.path, problem.line) == (dump, 2)
    assert "RuntimeError: converter bug" in problem.message


def test_an_empty_directory_allowed_empty_warns_that_no_traces_were_found(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\ncases:\n  - {id: a, match: all, max_turns: 1}\n")
    empty = tmp_path / "dumps"
    empty.mkdir()
    result = CliRunner().invoke(main, ["eval", "--allow-empty", str(suite), str(empty)])
    assert result.exit_code == 0  # without --allow-empty: 3 (tests/cli/test_cli_edges.py)
    assert f"warning: no traces found in {empty}" in result.stderr


@pytest.mark.parametrize("spans_per_line", [1, 40], ids=["many-short-lines", "few-long-lines"])
def test_a_bad_line_in_a_cut_chunk_is_reported_at_its_line_in_the_file(
    tmp_path: Path, spans_per_line: int
) -> None:
    spans = [span for run in record(SEED_RUNS * 60) for span in run]
    lines = jsonl(spans[i : i + spans_per_line] for i in range(0, len(spans), spans_per_line))
    good = lines.splitlines(keepends=True)
    bad_at = len(good) * 4 // 5  # 0-based: well inside a later chunk
    dump = write(tmp_path / "runs.jsonl", b"".join(good[:bad_at] + [b"{oops\n"] + good[bad_at:]))
    whole = run_batch(SUITE, [dump], workers=1)
    cut = run_batch(SUITE, [dump], workers=1, chunk_bytes=len(lines) // 3)
    assert cut.chunk_count >= 3
    assert [(d.path, d.line) for d in cut.diagnostics] == [(dump, bad_at + 1)]
    assert [(d.path, d.line) for d in whole.diagnostics] == [(dump, bad_at + 1)]
