"""``tooltrail eval`` names the reading path that read its input at the end of its summary
line on stderr (docs/eval.md, docs/core-path.md "Which path is in use"), and leaves the report
as it was: the same bytes whichever path read (a report depends only on its rows). Run as a
real subprocess, as a user runs it, with and without ``TOOLTRAIL_CORE=python``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import REFUND_DUMP, REFUND_SUITE

from tooltrail.convert.engine import CORE_ENV, PYTHON, PYTHON_NO_CORE

try:
    import tooltrail_core
except ImportError:
    tooltrail_core = None

_BLOCK_CORE = "import sys\nsys.modules['tooltrail_core'] = None  # as if not installed\n"


def run_eval(tmp_path: Path, *, prelude: str = "", **env: str) -> tuple[str, bytes]:
    """Run ``tooltrail eval`` on the refund example with a JSON report: (the summary line,
    the report's bytes)."""
    environ = {k: v for k, v in os.environ.items() if k != CORE_ENV}
    environ.update(env)
    out = tmp_path / "report.json"
    code = prelude + "from tooltrail.cli import main\nmain()\n"
    done = subprocess.run(
        [sys.executable, "-c", code, "eval", "--workers", "1", "--format", "json"]
        + ["--out", str(out), str(REFUND_SUITE), str(REFUND_DUMP)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
    )
    assert done.returncode == 1, done.stderr  # the example has failing rows
    return done.stderr.strip().splitlines()[-1], out.read_bytes()


def test_the_python_path_is_named_when_switched_on(tmp_path: Path) -> None:
    line, _ = run_eval(tmp_path, **{CORE_ENV: PYTHON})
    assert line == (
        "4 traces read (18 spans), 4 rows evaluated, 0 unmatched, 0 skipped; read with python"
    )


def test_a_missing_core_is_named(tmp_path: Path) -> None:
    line, _ = run_eval(tmp_path, prelude=_BLOCK_CORE)
    assert line.endswith(f"; read with {PYTHON_NO_CORE}")


@pytest.mark.skipif(tooltrail_core is None, reason="the compiled core is not installed")
def test_the_core_is_named_with_its_version(tmp_path: Path) -> None:
    line, report = run_eval(tmp_path)
    assert line.endswith(f"; read with core {tooltrail_core.__version__}")
    _, python = run_eval(tmp_path, **{CORE_ENV: PYTHON})
    assert report == python  # the path is not part of the report
