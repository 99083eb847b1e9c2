"""The reading path: the compiled core when installed, ``TOOLTRAIL_CORE=python`` for the Python
path, a one-line notice when the core is missing, and no core loaded by ``--help`` or
``import tooltrail.live`` (docs/core-path.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures import REFUND_DUMP

from tooltrail.otlp.read.core import CORE_ENV, NOT_INSTALLED, PYTHON, PYTHON_NO_CORE

try:
    import tooltrail_core
except ImportError:
    tooltrail_core = None


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != CORE_ENV}
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environ
    )


_BLOCK_CORE = "import sys\nsys.modules['tooltrail_core'] = None  # as if not installed\n"
_READ_TWICE = (
    "from tooltrail.convert import read_traces\n"
    "from tooltrail.otlp.read.core import reading_path\n"
    f"for _ in range(2):\n    n = len(list(read_traces({str(REFUND_DUMP)!r})))\n"
    "print(n, reading_path())\n"
)


def test_without_the_core_reading_works_and_says_so_once() -> None:
    done = _run(_BLOCK_CORE + _READ_TWICE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(maxsplit=1)[1].strip() == PYTHON_NO_CORE
    assert int(done.stdout.split()[0]) > 0
    assert done.stderr.count(NOT_INSTALLED) == 1, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_switch_picks_the_python_path_quietly() -> None:
    done = _run(_READ_TWICE + "import sys\nprint('tooltrail_core' in sys.modules)\n", **{
        CORE_ENV: PYTHON
    })  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split(maxsplit=1)[1] == PYTHON
    assert lines[1] == "False"
    assert NOT_INSTALLED not in done.stderr


@pytest.mark.skipif(tooltrail_core is None, reason="the compiled core is not installed")
def test_with_the_core_installed_it_is_used() -> None:
    done = _run(_READ_TWICE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(maxsplit=1)[1].strip() == f"core {tooltrail_core.__version__}"
    assert NOT_INSTALLED not in done.stderr


@pytest.mark.parametrize(
    "code",
    [
        "from click.testing import CliRunner\nfrom tooltrail.cli import main\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0",
        "import tooltrail.live",
        "import tooltrail",
    ],
)
def test_start_up_loads_no_core(code: str) -> None:
    done = _run(f"{code}\nimport sys\nprint('tooltrail_core' in sys.modules)")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "False"


def test_version_names_the_reading_path(tmp_path: Path) -> None:
    code = "from tooltrail.cli import main\nmain(['--version'])"
    switched = _run(code, **{CORE_ENV: PYTHON})
    assert switched.stdout.strip().endswith(f"(reading path: {PYTHON})"), switched.stdout
    missing = _run(_BLOCK_CORE + code)
    assert missing.stdout.strip().endswith(f"(reading path: {PYTHON_NO_CORE})"), missing.stdout
    if tooltrail_core is not None:
        found = _run(code)
        assert f"(reading path: core {tooltrail_core.__version__})" in found.stdout


@pytest.mark.skipif(tooltrail_core is None, reason="the compiled core is not installed")
def test_readers_without_an_interest_keep_the_wire_form(tmp_path: Path) -> None:
    """Spans read for re-encoding keep what ``Span`` has no field for (``Span.wire``): the
    core serves only readers with an interest (the converter's)."""
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    from tooltrail import dialects
    from tooltrail.otlp import frame
    from tooltrail.otlp.read.mixed import read_spans_and_logs

    data = TracesData()
    span = data.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "root"
    span.trace_state = "vendor=1"
    path = tmp_path / "one.pb"
    path.write_bytes(frame(data.SerializeToString()))
    (kept,) = read_spans_and_logs(path)
    assert kept.wire is not None and kept.wire_group is not None
    (converted,) = read_spans_and_logs(path, interest=dialects.INTEREST)
    assert converted.wire is None  # read by the core: what the converter reads, no more
