"""The benchmarks reach into the package (engines, decoders, the functions a split wraps), so a
restructuring can leave one broken, or timing nothing, without a test failing. Each is run
here on a small dump."""

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
BENCH = BENCHMARKS / "bench_eval.py"


def test_each_part_of_the_split_is_timed(tmp_path):
    """``bench_eval.py --split`` times the batch pass by wrapping the functions it calls: a
    wrapper left on a name the code no longer calls would report that part as free."""
    done = subprocess.run(
        [sys.executable, str(BENCH), "--split", "--spans", "3000", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for dump in ("split.pb", "split.jsonl"):
        child = subprocess.run(
            [sys.executable, str(BENCH), "--child-split", str(tmp_path / "suite.yaml")]
            + [str(tmp_path / dump)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        parts = json.loads(child.stdout.strip().splitlines()[-1])
        assert parts["spans"] == 3000
        for part in ("decode", "convert", "evaluate", "report"):
            assert parts[part] > 0, (dump, part, parts)


def test_the_core_benchmark_times_every_row(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_core.py"), "--spans", "2000"]
        + ["--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "tooltrail eval --workers 1, JSON lines, python" in done.stdout


def test_the_target_board_measures_each_batch_target(tmp_path):
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "bench_targets.py"), "--spans", "3000"]
        + ["--rounds", "1", "--skip", "serve,live", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    for row in ("protobuf, JSON report", "protobuf, text report", "JSON lines, JSON report"):
        assert row in done.stdout
    assert "cost:" in done.stdout and "memory: driver peak" in done.stdout


def test_the_instruction_board_runs_each_program_it_counts(tmp_path):
    """``bench_instructions.py`` counts programs under valgrind (minutes, so not here): each
    program it counts must run, the limits' parse over a dump ``bench_eval`` writes among them."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from bench_eval import write_dumps
    finally:
        sys.path.remove(str(BENCHMARKS))
    pb, jsonl, records = write_dumps(tmp_path, 300, "small")
    me = BENCHMARKS / "bench_instructions.py"
    for kind, dump in (("protobuf", pb), ("json", jsonl)):
        done = subprocess.run(
            [sys.executable, str(me), "--parse", kind, str(dump)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    live = [sys.executable, str(BENCHMARKS / "bench_live.py"), "--traces", "3", "--steady"]
    for pipeline in ("sdk", "tooltrail"):
        done = subprocess.run(
            [*live, "--only", pipeline, "--workload", "tool"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
    done = subprocess.run(
        [sys.executable, str(BENCHMARKS / "serve_path.py"), "1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=BENCHMARKS,
    )
    assert done.returncode == 0, done.stderr
