"""The reading path: the compiled core when installed, ``TOOLTRAIL_CORE=python`` for the Python
path, a one-line notice when the core is missing, and no core loaded by ``--help`` or
``import tooltrail.live`` (docs/core-path.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from core_paths import engine_reading
from fixtures import REFUND_DUMP

from tooltrail.convert.engine import CORE_ENV, NOT_INSTALLED, PYTHON, PYTHON_NO_CORE

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
    "from tooltrail.convert.engine import reading_path\n"
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
    (converted,) = read_spans_and_logs(path, **engine_reading())
    assert converted.wire is None  # read by the core: what the converter reads, no more


#: Reads a dump and prints what the converter made of it, the reading path and the core's
#: counts (facts, spans, heads), after the lines of set-up it is given.
_READ_ALL = (
    "from tooltrail.convert import read_traces\n"
    "from tooltrail.convert.engine import facts_counts, reading_path\n"
    f"traces = list(read_traces({str(REFUND_DUMP)!r}))\n"
    "print(repr([(t.trace_id, t.tool_calls, t.output, t.metadata, t.turns) for t in traces]))\n"
    "print(reading_path())\n"
    "print(*facts_counts())\n"
)

#: A core newer than the package: it needs a row of the dialect rules that this package's
#: ``rules.json`` does not have (the text the core is handed loses one; the Python readers
#: keep their own copy, parsed at import).
_OLDER_RULES = (
    "import orjson\nfrom tooltrail.dialects import rules\n"
    "table = orjson.loads(rules.TEXT)\ndel table['models']\n"
    "rules.TEXT = orjson.dumps(table).decode()\n"
)


@pytest.mark.skipif(tooltrail_core is None, reason="the compiled core is not installed")
def test_a_core_that_cannot_read_the_packages_rules_reads_without_its_facts_mode() -> None:
    reference = _run(_READ_ALL, **{CORE_ENV: PYTHON})
    assert reference.returncode == 0, reference.stderr
    done = _run(_OLDER_RULES + _READ_ALL)
    assert done.returncode == 0, done.stderr
    found, path, counts = done.stdout.splitlines()
    assert found == reference.stdout.splitlines()[0]
    assert path == f"core {tooltrail_core.__version__}"
    facts, spans, _ = map(int, counts.split())
    assert facts == 0 and spans > 0  # the core read the records, Python classified them
    said = [line for line in done.stderr.splitlines() if "does not fit" in line]
    assert len(said) == 1, done.stderr
    assert "rules.json: no models" in said[0] and "its facts mode is off" in said[0]


@pytest.mark.skipif(tooltrail_core is None, reason="the compiled core is not installed")
def test_a_core_that_refuses_the_packages_classes_is_not_used() -> None:
    """A core whose ``Reader`` takes other arguments (a different release) is said once and
    left: every record is read by the Python path, nothing is lost."""
    reference = _run(_READ_ALL, **{CORE_ENV: PYTHON})
    refusing = (
        "import tooltrail_core\n"
        "def Reader(*args):\n"
        "    raise TypeError(f'Reader() takes 7 positional arguments but {len(args)} were given')\n"
        "tooltrail_core.Reader = Reader  # as a core of another release would answer\n"
    )
    done = _run(refusing + _READ_ALL)
    assert done.returncode == 0, done.stderr
    found, _, counts = done.stdout.splitlines()
    assert found == reference.stdout.splitlines()[0]
    assert counts.split() == ["0", "0", "0"]
    said = [line for line in done.stderr.splitlines() if "does not fit" in line]
    assert len(said) == 2, done.stderr  # the facts mode refused, then the reader itself
    assert "reading with the Python path" in said[1] and "takes 7 positional" in said[1]


@pytest.mark.skipif(tooltrail_core is None, reason="the compiled core is not installed")
def test_a_core_whose_builder_refuses_the_packages_classes_leaves_building_to_python() -> None:
    reference = _run(_READ_ALL, **{CORE_ENV: PYTHON})
    refusing = (
        "import tooltrail_core\n"
        "def Builder(*args):\n"
        "    raise ValueError('EvalTrace has no field spans_count')\n"
        "tooltrail_core.Builder = Builder  # as a core of another release would answer\n"
    )
    done = _run(refusing + _READ_ALL + "from tooltrail.convert.engine import build_counts\n"
                "print(*build_counts())\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    found, path, _, built = done.stdout.splitlines()
    assert found == reference.stdout.splitlines()[0]
    assert path == f"core {tooltrail_core.__version__}"
    assert built.split() == ["0", "0", "0", "0"]
    said = [line for line in done.stderr.splitlines() if "does not fit" in line]
    assert len(said) == 1, done.stderr
    assert "built by the Python builder" in said[0] and "spans_count" in said[0]
