"""``bench_eval.py --split`` times the batch pass by wrapping the functions it calls; a wrapper
left on a name the code no longer calls would report that part as free. Run on a small dump,
every part the pass goes through must have taken time."""

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "benchmarks" / "bench_eval.py"


def test_each_part_of_the_split_is_timed(tmp_path):
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
