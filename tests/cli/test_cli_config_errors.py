"""A configuration that cannot work is one class (``tooltrail.config_error.ConfigError``), and
the command line catches it once: any command's ``ConfigError`` becomes one line
``tooltrail COMMAND: what`` on stderr and exit code 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from tooltrail.checks.needs import CheckNeedsError
from tooltrail.checks.plugins import PluginError
from tooltrail.checks.rubrics import RubricError
from tooltrail.cli import main
from tooltrail.config_error import ConfigError
from tooltrail.judge.config_errors import JudgeCacheError, JudgeConfigError
from tooltrail.labels import LabelsError
from tooltrail.registries import RegistryError
from tooltrail.serve.auth import TlsFileError
from tooltrail.suite import TestSuite
from tooltrail.suite.suite_error import SuiteError


@pytest.mark.parametrize(
    "kind",
    [
        SuiteError,
        LabelsError,
        CheckNeedsError,
        PluginError,
        RubricError,
        RegistryError,
        JudgeConfigError,
        JudgeCacheError,
        TlsFileError,
    ],
)
def test_every_configuration_error_is_a_config_error(kind: type[Exception]) -> None:
    assert issubclass(kind, ConfigError)


@pytest.mark.parametrize("kind", [RubricError, RegistryError, JudgeCacheError])
def test_a_config_error_raised_deep_in_a_command_is_one_line_and_exit_2(
    kind: type[Exception], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No handler of ``eval`` names these classes (a rubric and a registered name were plain
    ``ValueError``s, a traceback): the group's one catch prints them."""

    def refuse(path: object) -> TestSuite:
        raise kind(f"{path}: cannot work")

    monkeypatch.setattr(TestSuite, "load", staticmethod(refuse))
    suite = tmp_path / "suite.yaml"
    suite.write_text("name: s\ncases: []\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["eval", str(suite), str(tmp_path)])
    assert (done.exit_code, done.stderr) == (2, f"tooltrail eval: {suite}: cannot work\n")
