"""``tooltrail serve`` sets the garbage collector for serving (``serve.collector``), in the
receiving process and in each worker, and the collector still frees reference cycles."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from serve_helpers import post, write_suite
from test_serve_shutdown import PB, agent_traces, start_serve

from tooltrail.serve.collector import OLDER_THRESHOLD, YOUNG_THRESHOLD

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

#: A plug-in check whose explanation is the collector's state in the process that judges.
PROBE = textwrap.dedent(
    """
    import gc, json
    from tooltrail.checks.score import Score

    def gc_state(trace, case, config):
        state = {"threshold": list(gc.get_threshold()), "frozen": gc.get_freeze_count()}
        return Score.passing("gc_state", "gc_state", json.dumps(state))

    TOOLTRAIL_CHECKS = {"gc_state": gc_state}
    """
)
SUITE = """\
name: probe
cases:
  - id: probe
    match: all
    evaluators:
      - name: gc_state
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_the_judging_process_runs_with_startup_frozen_and_fewer_collections(
    tmp_path: Path, workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gc_probe.py").write_text(PROBE, encoding="utf-8")
    inherited = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *inherited]))
    results = tmp_path / "results.jsonl"
    process, port = start_serve(
        "--suite", str(write_suite(tmp_path, SUITE)), "--plugin", "gc_probe",
        "--no-grpc", "--http-port", "0", "--workers", str(workers),
        "--results", str(results), "--explanations", "--grace", "0.1",
    )  # fmt: skip
    try:
        body, trace_ids = agent_traces(4)
        assert post(port, body, PB)[0] == 200
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
    lines = [orjson.loads(line) for line in results.read_bytes().splitlines()]
    assert sorted(line["trace_id"] for line in lines) == sorted(trace_ids)
    for line in lines:
        (score,) = line["results"][0]["scores"]
        state = orjson.loads(score["explanation"])
        assert state["threshold"] == [YOUNG_THRESHOLD, OLDER_THRESHOLD, OLDER_THRESHOLD]
        assert state["frozen"] > 10_000  # start-up's objects: modules, the web server, the suite


def test_cycles_made_while_serving_are_still_freed(tmp_path: Path) -> None:
    """The collector is not switched off: cycles made after ``set_for_serving`` are freed
    by its own collections, without anyone calling ``gc.collect``."""
    script = textwrap.dedent(
        """
        import gc, weakref
        from tooltrail.serve.collector import YOUNG_THRESHOLD, set_for_serving

        set_for_serving()
        freed = []

        class Node:
            pass

        for n in range(20 * YOUNG_THRESHOLD):
            node = Node()
            node.me = node  # a cycle, garbage at once
            if n % 1000 == 0:
                weakref.finalize(node, freed.append, n)
        print(len(freed), gc.isenabled())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    freed, enabled = done.stdout.split()
    assert enabled == "True"
    assert int(freed) >= 19 * YOUNG_THRESHOLD // 1000  # all but the last young generation's
