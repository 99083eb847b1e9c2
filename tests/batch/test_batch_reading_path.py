"""Workers read through the path of their own environment: a ``--workers 2`` pool and a Dask
cluster in this process read as the parent does (``TOOLTRAIL_CORE`` reaches pool workers), a
Dask worker started with its own environment reads as that says, and every path gives the
same report (docs/core-path.md, "Workers")."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from fixtures import recorded_refund_case, refund_suite
from test_batch_support import SEED_RUNS, Run, interleaved, jsonl, prefixed_pb, record, write

from tooltrail.batch import BatchResult, run_batch
from tooltrail.convert import engine as core

try:
    import tooltrail_core
except ImportError:
    tooltrail_core = None

needs_core = pytest.mark.skipif(
    tooltrail_core is None,
    reason="the compiled core is not installed (CI requires it: test_engine_differential.py)",
)

SUITE = refund_suite(
    recorded_refund_case(evaluators=[{"name": "no_redundant_tool_calls", "threshold": 1.0}])
)


@pytest.fixture
def dumps(tmp_path: Path) -> list[str]:
    """A JSON-lines and a protobuf dump, cut into several chunks each at ``chunk_bytes=8_000``."""
    cycle = itertools.cycle(SEED_RUNS)
    runs = record(Run(f"run-{i}", next(cycle).calls) for i in range(60))
    return [
        write(tmp_path / "busy.jsonl", jsonl(interleaved(runs[:40]))),
        write(tmp_path / "more.pb", prefixed_pb(interleaved(runs[40:]))),
    ]


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Sets ``TOOLTRAIL_CORE`` for this process (and the workers it starts) and forgets the
    choice made so far; forgets it again afterwards."""

    def to(path: str) -> str:
        monkeypatch.setenv(core.CORE_ENV, path)
        core.reset()
        return core.reading_path()

    yield to
    core.reset()


def report_of(result: BatchResult) -> tuple[list, list, list]:
    return (
        [r.to_dict() for r in result.results],
        result.diagnostics,
        [u.key for u in result.unmatched],
    )


@pytest.mark.parametrize("path", [core.PYTHON, pytest.param(core.CORE, marks=needs_core)])
def test_pool_workers_read_through_the_parents_path(switch, dumps: list[str], path: str) -> None:
    parents = switch(path)
    two = run_batch(SUITE, dumps, workers=2, chunk_bytes=8_000)
    assert two.chunk_count > 2
    assert two.reading_paths == (parents,)
    assert parents == (core.PYTHON if path == core.PYTHON else f"core {tooltrail_core.__version__}")


@needs_core
def test_both_paths_give_the_same_report_on_workers(switch, dumps: list[str]) -> None:
    switch(core.PYTHON)
    python = run_batch(SUITE, dumps, workers=2, chunk_bytes=8_000)
    switch(core.CORE)
    compiled = run_batch(SUITE, dumps, workers=2, chunk_bytes=8_000)
    assert python.reading_paths != compiled.reading_paths
    assert report_of(compiled) == report_of(python)
    assert len(python.results) == 60


@pytest.mark.parametrize("path", [core.PYTHON, pytest.param(core.CORE, marks=needs_core)])
def test_a_dask_cluster_in_process_reads_through_the_parents_path(
    switch, dumps: list[str], path: str
) -> None:
    distributed = pytest.importorskip("distributed")
    parents = switch(path)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        on_dask = run_batch(SUITE, dumps, dask_address=cluster.scheduler_address, chunk_bytes=8_000)
    assert on_dask.chunk_count > 2
    assert on_dask.reading_paths == (parents,)


@needs_core
def test_a_dask_worker_reads_through_the_path_of_its_own_environment(
    switch, dumps: list[str]
) -> None:
    """A worker process started with ``TOOLTRAIL_CORE=python`` in its environment reads with the
    Python path although the driver uses the core: the switch must be set where workers start."""
    distributed = pytest.importorskip("distributed")
    parents = switch(core.CORE)
    with distributed.LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        env={core.CORE_ENV: core.PYTHON},
    ) as cluster:
        on_dask = run_batch(SUITE, dumps, dask_address=cluster.scheduler_address, chunk_bytes=8_000)
    local = run_batch(SUITE, dumps, workers=1, chunk_bytes=8_000)
    assert local.reading_paths == (parents,) != (core.PYTHON,)
    assert on_dask.reading_paths == (core.PYTHON,)
    assert report_of(on_dask) == report_of(local)
