"""YAML agent test files collected as pytest items (default glob ``tests/agents/*.yaml``).

A file is a suite-like document: file-wide defaults (``agent``, ``factory``, ``runs``,
``threshold``, ``concurrency``, ``confidence``) and ``cases``, each a suite case (same keys,
same strict reading as ``TestSuite.load``) that has ``turns`` plus which agent fixture to
call. Each case becomes one test item that runs the agent through ``trail.run_turns``. Unknown
keys are errors naming file, line and key path with a did-you-mean hint.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tooltrail.checks import default_registry
from tooltrail.checks.plugins import PluginError, load_plugins
from tooltrail.pytest.runs import TrajectoryAssertionError
from tooltrail.suite.case import TestCase
from tooltrail.suite.fields import FieldReader, KeyPath, read_document
from tooltrail.suite.gate import confidence_of
from tooltrail.suite.load import CASE_KEYS, read_case
from tooltrail.suite.suite_error import SuiteError

#: Keys only an agent test file has, on top of the suite case keys.
RUN_KEYS = ("agent", "factory", "concurrency", "confidence")
CASE_ONLY_KEYS = ("xfail", "skip")
FILE_KEYS = ("name", "description", "runs", "threshold", *RUN_KEYS, "cases")
#: Suite case keys that mean nothing for a test run by pytest.
IGNORED_CASE_KEYS = ("match",)
TEST_KEYS = tuple(k for k in CASE_KEYS if k not in IGNORED_CASE_KEYS) + RUN_KEYS + CASE_ONLY_KEYS
RESERVED_FIXTURES = ("trail", "request")


@dataclass(slots=True)
class AgentTest:
    """One case of an agent test file, ready to run."""

    case: TestCase
    agent: str
    factory: bool
    runs: int
    threshold: float | None
    concurrency: int | None
    xfail: str | None
    skip: str | None
    line: int | None
    #: The Wilson interval's confidence deciding the runs (``None``: the session's option).
    confidence: float | None = None


def load_agent_tests(path: Path) -> list[AgentTest]:
    """Read and validate an agent test file; ``SuiteError`` names the first problem
    (``PluginError`` a plug-in that cannot be loaded)."""
    data, reader = read_document(path)
    top = reader.mapping(data, (), FILE_KEYS, required=("cases",), what="an agent test mapping")
    defaults = _run_settings(top, (), reader, {"factory": False, "runs": 1, "threshold": None})
    raw_cases = top["cases"]
    if not isinstance(raw_cases, list) or not raw_cases:
        reader.fail(("cases",), "expected a non-empty list of cases")
    tests: list[AgentTest] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_cases):
        tests.append(_agent_test(raw, ("cases", index), reader, defaults))
        case_id = tests[-1].case.id
        if case_id in seen:
            reader.fail(("cases", index, "id"), f"duplicate case id {case_id!r}")
        seen.add(case_id)
    load_plugins()  # installed plug-ins and TOOLTRAIL_PLUGINS
    default_registry().check(test.case for test in tests)
    return tests


def _agent_test(
    raw: Any, path: KeyPath, reader: FieldReader, defaults: dict[str, Any]
) -> AgentTest:
    data = reader.mapping(raw, path, TEST_KEYS, required=("id", "turns"), what="a case mapping")
    settings = _run_settings(data, path, reader, defaults)
    if "agent" not in settings:
        reader.fail(
            path,
            "missing key 'agent' (the name of the agent fixture to call), "
            "on the case or at the top of the file",
        )
    turns = data["turns"]
    if not isinstance(turns, list) or not turns:
        reader.fail(path + ("turns",), "expected a non-empty list of turns")
    marks = {key: reader.string(data[key], path + (key,)) for key in CASE_ONLY_KEYS if key in data}
    # (``agent`` names the agent fixture here, not the agent whose calls a case is judged on)
    case = read_case(
        {k: v for k, v in data.items() if k in CASE_KEYS and k not in RUN_KEYS}, path, reader
    )
    return AgentTest(
        case=case,
        agent=settings["agent"],
        factory=settings["factory"],
        runs=settings["runs"],
        threshold=settings["threshold"],
        concurrency=settings.get("concurrency"),
        confidence=settings.get("confidence"),
        xfail=marks.get("xfail"),
        skip=marks.get("skip"),
        line=reader.lines.get(path),
    )


def _run_settings(
    data: dict[str, Any], path: KeyPath, reader: FieldReader, defaults: dict[str, Any]
) -> dict[str, Any]:
    settings = dict(defaults)
    if data.get("agent") is not None:
        agent = reader.string(data["agent"], path + ("agent",))
        if not agent.isidentifier() or agent in RESERVED_FIXTURES:
            reader.fail(path + ("agent",), f"expected the name of an agent fixture, got {agent!r}")
        settings["agent"] = agent
    if data.get("factory") is not None:
        settings["factory"] = reader.boolean(data["factory"], path + ("factory",))
    if data.get("runs") is not None:
        settings["runs"] = reader.integer(data["runs"], path + ("runs",), minimum=1)
    if data.get("threshold") is not None:
        settings["threshold"] = reader.fraction(data["threshold"], path + ("threshold",))
    if data.get("concurrency") is not None:
        settings["concurrency"] = reader.integer(
            data["concurrency"], path + ("concurrency",), minimum=1
        )
    if data.get("confidence") is not None:
        settings["confidence"] = confidence_of(data["confidence"], reader, path + ("confidence",))
    return settings


class AgentTestFile(pytest.Module):
    """A YAML agent test file. A ``Module`` so that module-scoped fixtures work for its items."""

    def _getobj(self) -> types.ModuleType:
        return types.ModuleType(self.path.stem)

    def collect(self) -> list[pytest.Item]:  # type: ignore[override]
        try:
            tests = load_agent_tests(self.path)
        except (SuiteError, PluginError) as error:
            raise self.CollectError(str(error)) from None
        return [AgentTestItem.from_parent(self, name=test.case.id, test=test) for test in tests]


class AgentTestItem(pytest.Function):
    """One case of an agent test file: ``trail.run_turns(<agent fixture>, case, ...)``."""

    def __init__(self, *, test: AgentTest, **kwargs: Any) -> None:
        self.agent_test = test
        super().__init__(callobj=_test_function(test), **kwargs)
        if test.xfail is not None:
            self.add_marker(pytest.mark.xfail(reason=test.xfail, strict=True))
        if test.skip is not None:
            self.add_marker(pytest.mark.skip(reason=test.skip))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.agent_test.line
        return self.path, (line - 1 if line else None), self.name

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, TrajectoryAssertionError):
            return str(excinfo.value)
        return super().repr_failure(excinfo)


def _test_function(test: AgentTest) -> Any:
    """The test body, with a signature naming the fixtures it needs (``trail``, the agent)."""

    def run_agent_test(**fixtures: Any) -> None:
        __tracebackhide__ = True
        fixtures["trail"].run_turns(
            fixtures[test.agent],
            test.case,
            runs=test.runs,
            threshold=test.threshold,
            factory=test.factory,
            concurrency=test.concurrency,
            confidence=test.confidence,
        )

    keyword = inspect.Parameter.KEYWORD_ONLY
    run_agent_test.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter("trail", keyword), inspect.Parameter(test.agent, keyword)]
    )
    return run_agent_test
