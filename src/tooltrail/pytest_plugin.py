"""pytest integration for tooltrail (registered through the ``pytest11`` entry point).

Loaded into every pytest run of an environment where tooltrail is installed, so it imports
nothing heavy until a test asks for it: the ``trail`` fixture, the ``tooltrail`` marker,
YAML agent tests (``tooltrail_files``, default ``tests/agents/*.yaml``),
``--tooltrail-report PATH``, the judge options (``--tooltrail-judge-model`` ...,
``tooltrail.pytest.judge_options``) and ``--tooltrail-confidence`` with the inconclusive
verdict of repeated runs (``tooltrail.pytest.trials``: exit 75). The machinery lives in
:mod:`tooltrail.pytest`.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from tooltrail.pytest.trail import Trail

MARKER_HELP = (
    "tooltrail(runs=1, threshold=1.0, concurrency=None, confidence=None): how many times "
    "trail.run_turns runs the agent in this test, the share of runs that must pass, and the "
    "confidence of the interval that may find the runs inconclusive"
)
DEFAULT_FILES = ["tests/agents/*.yaml", "tests/agents/*.yml"]
_trail_key = pytest.StashKey["Trail"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tooltrail", "tooltrail: agent trajectory checks")
    group.addoption(
        "--tooltrail-report",
        metavar="PATH",
        default=None,
        help="write the session's tooltrail results to PATH: JSON (.json) or JUnit XML (.xml)",
    )
    parser.addini(
        "tooltrail_files",
        type="linelist",
        default=DEFAULT_FILES,
        help="glob patterns (matched against the end of the path) of YAML agent test files",
    )
    parser.addini(
        "tooltrail_global_provider",
        type="bool",
        default=True,
        help="let the trail fixture capture spans of the global tracer provider "
        "(installing an SDK provider when none is set)",
    )
    from tooltrail.pytest.judge_options import add_options

    add_options(group, parser)
    from tooltrail.pytest import trials

    trials.add_options(group, parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    report_path = config.getoption("tooltrail_report", None)
    # Under pytest-xdist only the controller writes the report; workers' rows reach it on
    # their test reports.
    if report_path and not hasattr(config, "workerinput"):
        from tooltrail.pytest.session_report import SessionReport

        config.pluginmanager.register(SessionReport(Path(report_path)), "tooltrail-report")
    if not hasattr(config, "workerinput"):  # the controller decides the session's exit code
        from tooltrail.pytest.trials import TrialVerdicts, session_confidence

        session_confidence(config)  # a bad value is a usage error before any test runs
        config.pluginmanager.register(TrialVerdicts(), "tooltrail-trials")
    from tooltrail.pytest.judge_options import install

    install(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    from tooltrail.pytest.judge_options import uninstall

    uninstall(config)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix not in (".yaml", ".yml"):
        return None
    patterns = parent.config.getini("tooltrail_files")
    if not any(file_path.match(pattern) for pattern in patterns):
        return None
    from tooltrail.pytest.yaml_items import AgentTestFile

    return AgentTestFile.from_parent(parent, path=file_path)


@pytest.fixture
def trail(request: pytest.FixtureRequest) -> Iterator[Trail]:
    """Captures the spans this test emits and checks the tool calls read from them."""
    from tooltrail.pytest.trail import open_trail

    with open_trail(request) as opened:
        request.node.stash[_trail_key] = opened
        yield opened


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    opened = item.stash.get(_trail_key, None)
    if opened is not None and call.when == "call":
        # Plain data on the report travels to the controller under pytest-xdist too.
        data: dict[str, Any] = opened.report_data()
        if data["rows"]:
            report.tooltrail = data  # type: ignore[attr-defined]
        if call.excinfo is not None:
            from tooltrail.pytest.trials import mark_report

            mark_report(report, call.excinfo.value)
    return report
