"""Splitting work never splits a verdict: traces cut across files or chunks are evaluated once,
whole, and every way of running the pass (one process, a pool, Dask) gives the same report."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from fixtures import CORPUS, LOOKUP, REFUND, VERIFY, recorded_refund_case, refund_suite
from test_batch_support import (
    SEED_RUNS,
    Run,
    interleaved,
    jsonl,
    prefixed_pb,
    record,
    write,
)

from tooltrail.batch import plan_chunks, run_batch
from tooltrail.otlp import OtlpFileWriter
from tooltrail.otlp.decode.span import Diagnostic
from tooltrail.suite import TestSuite

REFUND_POLICY = refund_suite(
    recorded_refund_case(evaluators=[{"name": "no_redundant_tool_calls", "threshold": 1.0}])
)


def many_runs(n: int) -> list[list]:
    cycle = itertools.cycle(SEED_RUNS)
    return record(Run(f"run-{i}", next(cycle).calls) for i in range(n))


def report_of(result) -> tuple[list, list[Diagnostic], list]:  # type: ignore[no-untyped-def]
    return (
        [r.to_dict() for r in result.results],
        result.diagnostics,
        [u.key for u in result.unmatched],
    )


def test_a_trace_split_across_two_files_is_evaluated_once_whole(tmp_path: Path) -> None:
    (spans,) = record([Run("correct", [LOOKUP, VERIFY, REFUND])])
    tools, root = spans[:-1], spans[-1:]  # the SDK ends children first: the root is last
    a = write(tmp_path / "a.jsonl", jsonl([tools]))
    b = write(tmp_path / "b.jsonl", jsonl([root]))
    result = run_batch(REFUND_POLICY, [a, b], workers=1)
    assert [(r.label, r.passed) for r in result.results] == [("correct", True)]
    assert result.merged_count == 1
    assert result.unmatched == []


def test_a_conversation_split_across_files_is_one_row(tmp_path: Path) -> None:
    lines = (
        (CORPUS / "pydantic-ai" / "e_booking_multiturn_ok.otlp.jsonl").read_bytes().splitlines(True)
    )
    assert len(lines) == 2  # one trace per turn
    a = write(tmp_path / "turn1.jsonl", lines[0])
    b = write(tmp_path / "turn2.jsonl", lines[1])
    s = TestSuite.from_dict(
        {"name": "b", "cases": [{"id": "booking", "match": "all", "max_turns": 1}]}
    )
    (row,) = run_batch(s, [a, b], group="conversation", workers=1).results
    assert not row.passed
    assert "Turn count 2 exceeds the 1 turn limit." in row.failure_messages()[0]


def test_chunks_of_a_large_json_lines_file_give_the_same_report_as_one_chunk(
    tmp_path: Path,
) -> None:
    dump = write(tmp_path / "busy.jsonl", jsonl(interleaved(many_runs(60))))
    whole = run_batch(REFUND_POLICY, [dump], workers=1)
    assert len(plan_chunks([dump], chunk_bytes=8_000)) > 5
    cut = run_batch(REFUND_POLICY, [dump], workers=1, chunk_bytes=8_000)
    assert cut.merged_count > 0
    assert report_of(cut) == report_of(whole)
    assert len(whole.results) == 60


def test_chunks_of_length_prefixed_protobuf_give_the_same_report(tmp_path: Path) -> None:
    runs = interleaved(many_runs(40))
    whole = run_batch(REFUND_POLICY, [write(tmp_path / "a.jsonl", jsonl(runs))], workers=1)
    pb = write(tmp_path / "busy.pb", prefixed_pb(runs))
    cut = run_batch(REFUND_POLICY, [pb], workers=1, chunk_bytes=4_000)
    assert cut.chunk_count > 5 and cut.merged_count > 0
    assert [r.to_dict() for r in cut.results] == [r.to_dict() for r in whole.results]


def test_zstd_compressed_messages_are_cut_like_plain_ones(tmp_path: Path) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    batches = interleaved(many_runs(24))
    path = tmp_path / "busy.pb.zst"
    writer = OtlpFileWriter(path, format="proto", compression="zstd")
    for batch in batches:
        writer.write(encode_spans(batch))
    writer.close()
    plain = run_batch(REFUND_POLICY, [write(tmp_path / "a.jsonl", jsonl(batches))], workers=1)
    cut = run_batch(REFUND_POLICY, [str(path)], workers=1, chunk_bytes=3_000)
    assert cut.chunk_count > 3
    assert [r.to_dict() for r in cut.results] == [r.to_dict() for r in plain.results]


def test_two_workers_give_the_same_report_as_one(tmp_path: Path) -> None:
    dump = write(tmp_path / "busy.jsonl", jsonl(interleaved(many_runs(60))))
    other = write(tmp_path / "more.pb", prefixed_pb(interleaved(many_runs(20))))
    one = run_batch(REFUND_POLICY, [dump, other], workers=1, chunk_bytes=8_000)
    two = run_batch(REFUND_POLICY, [dump, other], workers=2, chunk_bytes=8_000)
    assert report_of(two) == report_of(one)
    assert len(one.results) == 80


def test_a_dask_cluster_gives_the_same_report_as_one_process(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    dump = write(tmp_path / "busy.jsonl", jsonl(interleaved(many_runs(30))))
    one = run_batch(REFUND_POLICY, [dump], workers=1, chunk_bytes=6_000)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = run_batch(
            REFUND_POLICY, [dump], dask_address=cluster.scheduler_address, chunk_bytes=6_000
        )
    assert on_dask.chunk_count > 1 and on_dask.merged_count > 0
    assert report_of(on_dask) == report_of(one)


def test_a_corrupt_line_in_a_later_chunk_is_reported_with_its_absolute_line(
    tmp_path: Path,
) -> None:
    lines = jsonl(interleaved(many_runs(40))).splitlines(True)
    bad = len(lines) - 5
    lines[bad] = b'{"resourceSpans": [oops\n'
    dump = write(tmp_path / "busy.jsonl", b"".join(lines))
    whole = run_batch(REFUND_POLICY, [dump], workers=1)
    cut = run_batch(REFUND_POLICY, [dump], workers=1, chunk_bytes=5_000)
    assert cut.chunk_count > 3
    assert [(d.path, d.line) for d in cut.diagnostics] == [(dump, bad + 1)]
    assert [(d.path, d.line) for d in whole.diagnostics] == [(dump, bad + 1)]
    assert [r.to_dict() for r in cut.results] == [r.to_dict() for r in whole.results]
