"""The batch pass runs with the cyclic garbage collector paused, and leaves it as it found it."""

from __future__ import annotations

import gc
import os
import threading
import weakref
from pathlib import Path

import pytest
from test_batch_support import SEED_RUNS, jsonl, record, write

from tooltrail.batch import run_batch
from tooltrail.gc_pause import gc_paused
from tooltrail.suite import TestSuite

SUITE = TestSuite.from_dict(
    {"name": "s", "cases": [{"id": "refund", "match": "all", "required_tools": ["lookup_order"]}]}
)


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


def test_a_batch_pass_collects_only_young_objects_once_per_chunk(
    collector_on: None, tmp_path: Path
) -> None:
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
    # while the chunks after the first ran: only one young collection as each ended
    assert collections[seen[0][1] : seen[-1][1]] == [0] * (result.chunk_count - 1)
    assert gc.isenabled()


class _Cycle:
    """An object that refers to itself: only the cyclic collector frees it."""

    def __init__(self, freed: list[int]) -> None:
        self.me = self
        weakref.finalize(self, freed.append, 1)


def test_cycles_left_by_a_chunk_are_freed_when_the_chunk_ends(
    collector_on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tooltrail.convert.collect as collect  # where the batch tasks build traces

    dump = write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS * 5)))
    made: list[int] = []
    freed: list[int] = []
    convert = collect.build_eval_trace

    def leaving_a_cycle(members):  # type: ignore[no-untyped-def]
        made.append(1)
        _Cycle(freed)
        return convert(members)

    monkeypatch.setattr(collect, "build_eval_trace", leaving_a_cycle)
    after_each_chunk: list[tuple[int, int]] = []
    result = run_batch(
        SUITE,
        [dump],
        workers=1,
        chunk_bytes=4000,
        on_progress=lambda *_: after_each_chunk.append((len(made), len(freed))),
    )
    assert result.chunk_count > 2
    assert after_each_chunk[0][0] > 0
    assert all(n_made == n_freed for n_made, n_freed in after_each_chunk)
