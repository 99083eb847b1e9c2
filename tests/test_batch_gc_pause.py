"""The batch pass runs with the cyclic garbage collector paused, and leaves it as it found it."""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_batch_support import SEED_RUNS, jsonl, record, write

from tooltrail.batch import run_batch
from tooltrail.batch.gc_pause import gc_paused
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {"name": "s", "cases": [{"id": "refund", "match": "all", "required_tools": ["lookup_order"]}]}
)


@pytest.fixture()
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after(collector_on: None) -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled(collector_on: None) -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_the_collector_comes_back_after_an_exception(collector_on: None) -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("task failed")
    assert gc.isenabled()


def test_overlapping_pauses_on_two_threads_restore_it_only_when_both_end(
    collector_on: None,
) -> None:
    inside, release = threading.Event(), threading.Event()

    def task() -> None:
        with gc_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=task)
    with gc_paused():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other task still runs
    release.set()
    thread.join(10)
    assert gc.isenabled()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_process_forked_during_a_pause_starts_with_the_collector_on(collector_on: None) -> None:
    read_end, write_end = os.pipe()
    with gc_paused():
        pid = os.fork()
        if pid == 0:  # the child: report, then leave without running the parent's cleanup
            with gc_paused():
                paused = not gc.isenabled()
            os.write(write_end, f"{gc.isenabled()} {paused}".encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        report = pipe.read()
    os.waitpid(pid, 0)
    assert report == "True True"


def test_a_batch_pass_collects_nothing_while_it_runs(collector_on: None, tmp_path: Path) -> None:
    dump = write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS * 5)))
    collections: list[int] = []
    seen: list[tuple[bool, int]] = []  # per chunk done: (collector on?, collections so far)

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    def progress(groups: int, spans: int, size: int) -> None:
        seen.append((gc.isenabled(), len(collections)))

    thresholds = gc.get_threshold()
    gc.set_threshold(1)  # without the pause, every allocation would start a collection
    gc.callbacks.append(count)
    try:
        result = run_batch(SUITE, [dump], workers=1, chunk_bytes=4000, on_progress=progress)
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
    assert len(result.results) == 20 and result.chunk_count > 2
    assert [on for on, _ in seen] == [False] * result.chunk_count
    assert seen[0][1] == seen[-1][1]  # no collection while the chunks between ran
    assert gc.isenabled()
