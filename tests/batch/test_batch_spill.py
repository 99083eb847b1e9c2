"""Rows spilled to disk past ``spill_rows``: the same reports, gate, unmatched list, labels and
annotations as rows kept in memory, and no temporary file left behind, however the run ends."""

from __future__ import annotations

import functools
import gc
import itertools
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fixtures import CORPUS, LOOKUP, recorded_refund_case, refund_case, refund_suite, suite_yaml
from test_batch_support import (
    SEED_RUNS,
    Run,
    interleaved,
    jsonl,
    prefixed_pb,
    record,
)
from test_batch_support import write as write_file

import tooltrail.batch.driver as driver
from tooltrail.batch import BatchResult, run_batch
from tooltrail.batch.spill import SpilledRows
from tooltrail.cli import main
from tooltrail.otlp import read_log_records, read_spans
from tooltrail.report import render_json, render_junit, render_markdown, render_text
from tooltrail.results import CaseResult, EvaluationReport, summarize
from tooltrail.suite import TestSuite

SUITE = suite_yaml(
    recorded_refund_case(evaluators=[{"name": "no_redundant_tool_calls", "threshold": 1.0}]),
    {
        "id": "repeat",
        "required_tools": ["lookup_order", "issue_refund"],
        "runs": 3,
        "threshold": 0.5,
    },
    name="refunds",
    version="2",
    gate={"min_pass_rate": 0.2, "max_failed_cases": 1000},
)

RENDERERS = {
    "text": render_text,
    "json": render_json,
    "junit": render_junit,
    "markdown": render_markdown,
}


def runs(n: int, offset: int = 0) -> list[Run]:
    """Policy runs with unique tags, untagged runs (labelled by trace id), runs of the tagged
    case ``repeat`` (numbered labels) and a billing agent's runs no case selects."""
    cycle = itertools.cycle(SEED_RUNS)
    out: list[Run] = []
    for i in range(n):
        seed = next(cycle)
        out.append(Run(f"run-{offset + i}", seed.calls))
        if i % 7 == 3:
            out.append(Run("repeat", seed.calls))
        if i % 11 == 5:
            out.append(Run(None, seed.calls))
        if i % 13 == 8:
            out.append(Run(None, [LOOKUP], agent="billing-agent"))
    return out


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestSuite, list[str]]:
    """The suite, a JSON-lines dump and a protobuf dump, with traces cut across chunks."""
    directory = tmp_path_factory.mktemp("spill")
    busy = write_file(directory / "busy.jsonl", jsonl(interleaved(record(runs(40)))))
    more = write_file(directory / "more.pb", prefixed_pb(interleaved(record(runs(15, 40)))))
    suite_path = directory / "suite.yaml"
    suite_path.write_text(SUITE)
    return TestSuite.load(str(suite_path)), [busy, more]


@pytest.fixture()
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary files of this test go here, so the test can see what is left."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(directory))
    return directory


def batch(
    dumps: tuple[TestSuite, list[str]], spill_rows: int | None, **options: object
) -> BatchResult:
    suite, paths = dumps
    return run_batch(suite, paths, chunk_bytes=6_000, spill_rows=spill_rows, **options)  # type: ignore[arg-type]


def report(suite: TestSuite, result: BatchResult) -> EvaluationReport:
    return EvaluationReport.from_results(suite, result.results)


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_spilled_rows_give_the_same_report_in_every_format(
    dumps: tuple[TestSuite, list[str]], fmt: str, workers: int
) -> None:
    suite = dumps[0]
    kept = batch(dumps, None, workers=workers)
    spilled = batch(dumps, 1, workers=workers)
    assert isinstance(spilled.results, SpilledRows) and isinstance(kept.results, list)
    render = RENDERERS[fmt]
    assert render(report(suite, spilled)) == render(report(suite, kept))


def test_spilled_rows_are_those_of_a_run_kept_in_memory_with_merges_and_numbered_labels(
    dumps: tuple[TestSuite, list[str]],
) -> None:
    kept = batch(dumps, None, workers=1)
    spilled = batch(dumps, 1, workers=1)
    assert spilled.merged_count == kept.merged_count > 0
    assert spilled.chunk_count == kept.chunk_count > 2
    assert [r.to_dict() for r in spilled.results] == [r.to_dict() for r in kept.results]
    labels = [r.label for r in spilled.results]
    assert [label for label in labels if label.startswith("repeat run")] == [
        f"repeat run {n}" for n in range(1, 9)
    ]
    assert [u.key for u in spilled.unmatched] == [u.key for u in kept.unmatched] != []
    assert (spilled.group_count, spilled.span_count) == (kept.group_count, kept.span_count)


def test_rows_spilled_by_two_workers_are_those_of_one_kept_in_memory(
    dumps: tuple[TestSuite, list[str]],
) -> None:
    one = batch(dumps, None, workers=1)
    two = batch(dumps, 1, workers=2)
    assert [r.to_dict() for r in two.results] == [r.to_dict() for r in one.results]


def test_a_dask_cluster_spills_the_same_rows(dumps: tuple[TestSuite, list[str]]) -> None:
    distributed = pytest.importorskip("distributed")
    kept = batch(dumps, None, workers=1)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        spilled = batch(dumps, 1, dask_address=cluster.scheduler_address)
        rows = [r.to_dict() for r in spilled.results]
    assert isinstance(spilled.results, SpilledRows) and spilled.merged_count > 0
    assert rows == [r.to_dict() for r in kept.results]


def test_the_gate_and_summary_of_spilled_rows_are_those_of_rows_in_memory(
    dumps: tuple[TestSuite, list[str]],
) -> None:
    suite = dumps[0]
    kept, spilled = report(suite, batch(dumps, None)), report(suite, batch(dumps, 1))
    assert suite.gate is not None
    assert suite.gate.check(spilled) == suite.gate.check(kept)
    assert spilled.summary == kept.summary
    assert spilled.passed == kept.passed


def test_rows_under_the_threshold_stay_in_memory_and_write_nothing(
    dumps: tuple[TestSuite, list[str]], private_tmp: Path
) -> None:
    result = batch(dumps, 10_000, workers=1)
    assert isinstance(result.results, list) and len(result.results) > 50
    assert list(private_tmp.iterdir()) == []


def test_spilled_rows_hold_no_row_in_the_driver(dumps: tuple[TestSuite, list[str]]) -> None:
    def rows_alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if type(o) is CaseResult)

    before = rows_alive()
    spilled = batch(dumps, 1, workers=1)
    assert rows_alive() == before
    kept = batch(dumps, None, workers=1)
    assert rows_alive() == before + len(kept.results) == before + len(spilled.results)


def test_spilled_rows_are_a_sequence_read_again_on_each_walk(
    dumps: tuple[TestSuite, list[str]],
) -> None:
    kept = batch(dumps, None).results
    spilled = batch(dumps, 1).results
    assert len(spilled) == len(kept)
    first, second = list(spilled), list(spilled)
    assert [r.to_dict() for r in first] == [r.to_dict() for r in second]
    assert first[0] is not second[0]
    assert spilled[5].to_dict() == kept[5].to_dict()
    assert spilled[-1].to_dict() == kept[-1].to_dict()
    assert [r.label for r in spilled[3:40:4]] == [r.label for r in kept[3:40:4]]
    assert [r.label for r in spilled[::-9]] == [r.label for r in kept[::-9]]
    with pytest.raises(IndexError):
        spilled[len(kept)]


def test_a_report_keeps_the_sequence_it_is_given_and_walks_it_once(
    dumps: tuple[TestSuite, list[str]],
) -> None:
    rows = CountedRows(batch(dumps, 1).results)
    built = EvaluationReport.from_results(dumps[0], rows)
    assert built.cases is rows
    assert rows.walks == 1


class CountedRows(Sequence[CaseResult]):
    """Rows that count how often they are walked."""

    def __init__(self, rows: Sequence[CaseResult]) -> None:
        self.rows = rows
        self.walks = 0

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> CaseResult:  # type: ignore[override]
        return self.rows[index]

    def __iter__(self) -> Iterator[CaseResult]:
        self.walks += 1
        return iter(self.rows)


def test_the_summary_of_a_one_shot_iterator_is_that_of_the_list(
    dumps: tuple[TestSuite, list[str]],
) -> None:
    rows = batch(dumps, None).results
    cases = {c.id: c for c in dumps[0].cases}
    assert summarize(iter(rows), cases) == summarize(list(rows), cases)


def test_the_spill_directory_is_private_and_removed_on_close(
    dumps: tuple[TestSuite, list[str]], private_tmp: Path
) -> None:
    result = batch(dumps, 1)
    (directory,) = private_tmp.iterdir()
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((directory / "rows.pickle").stat().st_mode) == 0o600
    with result:
        assert len(list(result.results)) > 0
    assert list(private_tmp.iterdir()) == []
    with pytest.raises(ValueError, match="closed"):
        list(result.results)


def test_the_spill_is_removed_when_the_rows_are_freed(
    dumps: tuple[TestSuite, list[str]], private_tmp: Path
) -> None:
    result = batch(dumps, 1)
    assert len(list(private_tmp.iterdir())) == 1
    del result
    assert list(private_tmp.iterdir()) == []


def test_the_spill_is_removed_when_a_task_fails(
    dumps: tuple[TestSuite, list[str]], private_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_merge(task: object) -> object:
        assert len(list(private_tmp.iterdir())) == 1  # the chunks' rows are on disk by now
        raise RuntimeError("merge task failed")

    monkeypatch.setattr(driver, "evaluate_merge", broken_merge)
    with pytest.raises(RuntimeError, match="merge task failed") as caught:
        batch(dumps, 1, workers=1)
    # removed at once, not when the traceback (which still holds the run's frames) is freed
    assert caught.traceback and list(private_tmp.iterdir()) == []


def test_the_spill_is_removed_on_ctrl_c(
    dumps: tuple[TestSuite, list[str]], private_tmp: Path
) -> None:
    chunks = 0

    def interrupt(groups: int, spans: int, size: int) -> None:
        nonlocal chunks
        chunks += 1
        if chunks == 3:
            assert len(list(private_tmp.iterdir())) == 1
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as caught:
        batch(dumps, 1, workers=2, on_progress=interrupt)
    assert caught.traceback and list(private_tmp.iterdir()) == []


# The command: same output, exit code and annotations; nothing left in the temporary directory.


def cli(
    monkeypatch: pytest.MonkeyPatch, spill_rows: int | None, *args: str
) -> tuple[Result, bytes]:
    monkeypatch.setattr(
        "tooltrail.cli.eval.run_batch", functools.partial(run_batch, spill_rows=spill_rows)
    )
    result = CliRunner().invoke(main, ["eval", "--quiet", "--chunk-mb", "1", *args])
    return result, result.stdout_bytes + b"\0" + result.stderr_bytes


@pytest.mark.parametrize("fmt", sorted(RENDERERS))
def test_the_command_prints_the_same_with_spilled_rows(
    dumps: tuple[TestSuite, list[str]],
    tmp_path: Path,
    private_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    fmt: str,
) -> None:
    suite_path = tmp_path / "suite.yaml"
    suite_path.write_text(SUITE)
    args = [str(suite_path), *dumps[1], "--format", fmt, "--show-unmatched", "--workers", "2"]
    kept, kept_out = cli(monkeypatch, None, *args)
    spilled, spilled_out = cli(monkeypatch, 1, *args)
    assert "matched no case" in kept.stderr and "gate: PASS" in kept.stderr
    assert spilled_out == kept_out
    assert spilled.exit_code == kept.exit_code == 0
    assert list(private_tmp.iterdir()) == []


def test_annotations_of_spilled_rows_are_those_of_rows_in_memory(
    dumps: tuple[TestSuite, list[str]],
    tmp_path: Path,
    private_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOOLTRAIL_EVALUATION_EXPLANATIONS", raising=False)
    suite_path = tmp_path / "suite.yaml"
    suite_path.write_text(SUITE)
    written = {}
    for spill_rows in (None, 1):
        events, traces = tmp_path / f"events-{spill_rows}.jsonl", tmp_path / f"t-{spill_rows}.jsonl"
        args = [str(suite_path), *dumps[1], "--workers", "1"]
        result, _ = cli(
            monkeypatch,
            spill_rows,
            *args,
            "--annotate",
            str(events),
            "--annotate-traces",
            str(traces),
        )
        assert result.exit_code == 0, result.output
        written[spill_rows] = (
            [(r.trace_id, r.attributes) for r in read_log_records(str(events))],
            [(s.trace_id, s.name, s.attributes) for s in read_spans(str(traces)) if s.attributes],
        )
    assert written[1] == written[None]
    assert len(written[1][0]) > 100
    assert list(private_tmp.iterdir()) == []


def test_spilled_rows_of_the_real_corpus_give_the_same_report(tmp_path: Path) -> None:
    corpus = CORPUS / "google-adk"
    paths = [str(p) for p in sorted(corpus.glob("*.otlp.jsonl"))]
    suite = refund_suite(
        refund_case("required_tools", match={"root_span_name": "invoke_workflow refund_agent"}),
        name="adk",
    )
    kept = run_batch(suite, paths, workers=1, spill_rows=None)
    spilled = run_batch(suite, paths, workers=1, spill_rows=0)
    assert len(kept.results) >= 3 and os.path.isdir(corpus)
    assert render_text(report(suite, spilled)) == render_text(report(suite, kept))


def test_every_threshold_gives_the_rows_kept_in_memory_also_when_spilling_starts_in_a_merge(
    dumps: tuple[TestSuite, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = [r.to_dict() for r in batch(dumps, None, workers=1).results]
    phase = "chunks"
    started: list[str] = []
    real_merge, real_spill = driver.evaluate_merge, driver.RowSpill

    def merge(task: object) -> object:
        nonlocal phase
        phase = "merges"
        return real_merge(task)  # type: ignore[arg-type]

    def spill() -> object:
        started.append(phase)
        return real_spill()

    monkeypatch.setattr(driver, "evaluate_merge", merge)
    monkeypatch.setattr(driver, "RowSpill", spill)
    for spill_rows in [0, 1, 7, *range(len(expected) * 3 // 4, len(expected) + 2)]:
        phase = "chunks"
        result = batch(dumps, spill_rows, workers=1)
        assert [r.to_dict() for r in result.results] == expected, spill_rows
    assert "merges" in started and "chunks" in started


def test_conversations_split_across_files_spill_the_same_rows(tmp_path: Path) -> None:
    turns = [
        Run(f"turn-{n}", seed.calls, conversation=f"conv-{n % 5}")
        for n, seed in zip(range(30), itertools.cycle(SEED_RUNS), strict=False)
    ]
    spans = record(turns)
    first = write_file(tmp_path / "a.jsonl", jsonl(interleaved(spans[:17])))
    second = write_file(tmp_path / "b.pb", prefixed_pb(interleaved(spans[17:])))
    suite = TestSuite.from_dict(
        {"name": "conv", "cases": [{"id": "c", "match": "all", "required_tools": ["lookup_order"]}]}
    )
    paths = [first, second]
    kept = run_batch(suite, paths, group="conversation", workers=1, chunk_bytes=6_000)
    spilled = run_batch(
        suite, paths, group="conversation", workers=2, chunk_bytes=6_000, spill_rows=1
    )
    assert isinstance(spilled.results, SpilledRows) and spilled.merged_count > 0
    assert len(kept.results) == 5
    assert [r.to_dict() for r in spilled.results] == [r.to_dict() for r in kept.results]


def test_spilled_rows_know_their_longest_label_as_numbered_without_a_walk() -> None:
    """The text report's label column is as wide as the longest label read back: ``name run
    N`` for the last of N rows sharing a label, rows left out (merged again) not counted."""
    from tooltrail.batch.outcomes import GroupOutcome
    from tooltrail.batch.spill import RowSpill
    from tooltrail.checks import Score

    def group(n: int, label: str) -> GroupOutcome:
        score = Score("required_tool:a", "required_tool", 1.0, True, "ok")
        row = CaseResult("c", True, [score], trace_id=f"t{n}", label=label)
        return GroupOutcome(f"t{n}", (f"t{n}",), (0, n), None, [row])

    labels = ["shared"] * 10 + ["a-label-of-20-chars!", "left-out-label-of-twenty-eight"]
    spill = RowSpill(block_rows=4)
    try:
        packed = spill.add([group(n, label) for n, label in enumerate(labels)])
        rows = spill.rows(
            packed.placed(lambda key: key != "t11"), packed.placed({"t11"}.__contains__)
        )
        read = [row.label for row in rows]
        assert read[9:] == ["shared run 10", "a-label-of-20-chars!"]
        assert rows.longest_label == max(len(label) for label in read) == 20
        spill_nine = RowSpill()
        packed = spill_nine.add([group(n, "shared") for n in range(9)])
        assert spill_nine.rows(packed.placed(bool), []).longest_label == len("shared run 9")
        spill_nine.close()
    finally:
        spill.close()
