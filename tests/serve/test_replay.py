"""The replay suite (issue 21) at CI size: a seeded sample of every fixture ``tooltrail
eval`` reads, replayed into a real ``tooltrail serve`` (HTTP JSON, HTTP protobuf, gRPC;
``--workers`` 1 and 2) and into a real ``TraceBuffer`` fed through the OpenTelemetry SDK, on
the schedules of ``tests/replay.py``. Each trace must end with ``tooltrail eval``'s verdict
and calls on the file; none lost, none judged twice without a revision mark, none judged
before its root was sent.

Replays whose pieces reach the receiver after the trace's verdict (a process exporting more
than the grace after the root's, log records beyond the grace, retried log records) end with
the file's verdict through verdict revisions: they are kept apart, so that a failure says
which kind of replay broke.
``benchmarks/replay_matrix.py`` runs the whole matrix.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from replay import (
    DATA,
    EXTERNAL,
    TARGETS,
    Outcome,
    Problem,
    Replay,
    Timing,
    Verdicts,
    build_replay,
    build_replays,
    distinct,
    judge,
    load_recording,
    load_suite,
    make_target,
    recordings,
    run_replays,
)

#: Recordings per schedule and target in the CI run (the script replays all of them).
SAMPLE = 10
#: Real time (the 2 s grace of the schedules is the receivers' grace): a gap within the grace
#: is at most 0.1 s, so only a stall of nearly 2 s on a loaded machine could make it late.
TIMING = Timing(grace=2.0)


@pytest.fixture(scope="module")
def recs() -> list[Any]:
    return distinct(recordings(load_suite()))


Run = tuple[list[Replay], list[Problem]]


def _run(name: str, recs: list[Any], directory: Path) -> Run:
    """A target's sampled replays, plus every replay whose late pieces would change the
    verdict without revisions, all sent at once; their problems."""
    live = name == "live"
    # A sample of its own per receiver: together they cover more of the fixtures.
    seed = 21 + TARGETS.index(name)
    sampled = build_replays(recs, TIMING, live=live, sample=SAMPLE, seed=seed)
    keys = {r.key for r in sampled}
    late = [r for r in build_replays(recs, TIMING, live=live, seed=seed) if r.late_matters]
    replays = sampled + [r for r in late if r.key not in keys]
    target = make_target(name, TIMING, directory)
    run_replays(target, replays, threads=8)
    return replays, [p for r in replays for p in judge(target, r)]


@pytest.fixture(scope="module")
def runs(recs: list[Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Run]:
    """Every target's run, the targets side by side (each waits mostly on its grace)."""
    with ThreadPoolExecutor(len(TARGETS)) as pool:
        futures = {
            name: pool.submit(_run, name, recs, tmp_path_factory.mktemp(name.replace("/", "-")))
            for name in TARGETS
        }
        return {name: future.result() for name, future in futures.items()}


def _problems(replays: list[Replay], problems: list[Problem], late: bool) -> list[str]:
    mine = {r.key for r in replays if r.late_matters == late}
    return [str(p) for p in problems if p.replay in mine]


@pytest.mark.parametrize("name", TARGETS)
def test_replays_end_with_the_files_verdicts(runs: dict[str, Run], name: str) -> None:
    replays, problems = runs[name]
    assert len([r for r in replays if not r.late_matters]) >= 20
    assert _problems(replays, problems, late=False) == []


@pytest.mark.parametrize("name", TARGETS)
def test_late_pieces_revise_the_verdict(runs: dict[str, Run], name: str) -> None:
    replays, problems = runs[name]
    if not any(r.late_matters for r in replays):
        pytest.skip("no fixture here has pieces that change the verdict when late")
    assert _problems(replays, problems, late=True) == []


# -- issue 21's two reproductions, each on its own receiver -------------------------------------

ADK_GO = EXTERNAL / "kagent" / "v1.0.0-alpha9" / "adk_go_1turn.json"
WEATHER = DATA / "logs" / "openai_v2_weather.json"


def _replay_alone(path: Path, schedule: str, tmp_path: Path) -> tuple[Replay, list[Problem]]:
    if not path.exists():
        pytest.skip(f"{path} is not beside the checkout")
    recording = load_recording(path, load_suite())
    assert recording is not None
    replay = build_replay(schedule, [recording], 21, TIMING)
    target = make_target("serve/http-protobuf/w1", TIMING, tmp_path)
    run_replays(target, [replay])
    return replay, judge(target, replay)


def test_the_go_runtime_within_the_grace_is_judged_with_the_harness(tmp_path: Path) -> None:
    replay, problems = _replay_alone(ADK_GO, "c-other-process-1s", tmp_path)
    [(recording, old)] = replay.traces.values()
    assert recording.expected[old].verdict == "pass" and recording.expected[old].calls == 2
    assert [s.after_verdict for s in replay.steps if s.after_verdict] == []
    assert problems == []


def test_the_go_runtime_3s_after_the_harness_revises_the_verdict(tmp_path: Path) -> None:
    """kagent's Go ADK fixture, its second process exporting 3 s (real time) after the root's:
    the file says pass with 2 calls; without revisions serve says fail with 0."""
    replay, problems = _replay_alone(ADK_GO, "c-other-process-3s", tmp_path)
    assert any(step.after_verdict for step in replay.steps)
    assert [str(p) for p in problems] == []


def test_a_logs_request_posted_twice_before_the_spans_counts_once(tmp_path: Path) -> None:
    """The same /v1/logs body twice, then the spans: the file's 2 calls, not 4."""
    replay, problems = _replay_alone(WEATHER, "f-logs-twice-first", tmp_path)
    assert [str(p) for p in problems] == []


# -- the judge itself ---------------------------------------------------------------------------


class _Lines:
    """A target whose results file held ``lines``."""

    live = False
    name = "fake"

    def __init__(self, lines: list[dict[str, Any]]) -> None:
        self.verdicts = Verdicts()
        for line in lines:
            self.verdicts.add(line)


def test_the_judge_names_each_kind_of_problem(tmp_path: Path) -> None:
    recording = load_recording(WEATHER, load_suite())
    assert recording is not None
    replay = build_replay("a-whole", [recording], 21, TIMING)
    [(trace_id, (_, old))] = replay.traces.items()
    want: Outcome = recording.expected[old]
    right = {"trace_id": trace_id, "verdict": want.verdict, "time_unix_nano": 2_000,
             "results": [json.loads(row) for row in want.rows]}  # fmt: skip
    replay.root_sent[trace_id] = 1_000
    assert judge(_Lines([right]), replay) == []
    assert judge(_Lines([{**right, "revision": 1, "verdict": "fail"}, right]), replay)[0].kind == (
        "difference"
    )
    assert [p.kind for p in judge(_Lines([right, right]), replay)] == ["duplicate"]
    assert [p.kind for p in judge(_Lines([{**right, "time_unix_nano": 500}]), replay)] == ["early"]
    assert [p.kind for p in judge(_Lines([{**right, "reason": "dropped"}]), replay)] == ["lost"]
    assert [p.kind for p in judge(_Lines([]), replay)] == ["lost"]
    revised = {**right, "verdict": "fail", "results": []}
    assert judge(_Lines([revised, {**right, "revision": 1}]), replay) == []
