"""Judge providers are registered like checks (``judge.providers.PROVIDERS``): an installed
package's entry point in ``tooltrail.judge_providers`` is the provider of the model strings
that name it (``echo:any-model``), in the same table as ``openai`` and ``anthropic``. The
package is real to ``importlib.metadata``: a module and its ``.dist-info`` put on
``sys.path``."""

from __future__ import annotations

from pathlib import Path

import pytest
from installed_plugins import install_distribution

from tooltrail.judge import JudgeConfigError, JudgeSettings, build_judge
from tooltrail.judge.providers import PROVIDERS, completion_for_model

PLUGIN = '''
from tooltrail.judge.completion import Reply


class EchoCompletion:
    """Every prompt judged a pass, by a provider outside tooltrail."""

    def __init__(self, model, name, *, base_url, timeout_s, temperature, max_tokens):
        self.model, self.name, self.endpoint = model, name, "echo://"
        self.timeout_s = timeout_s

    def complete(self, prompt, *, timeout_s):
        return Reply('{"passed": true, "score": 1.0, "reasoning": "echoed"}', 3, 2)

    def close(self):
        pass
'''


def _install(root: Path, entry_points: str) -> Path:
    return install_distribution(root, "echoprovider", entry_points, {"echoprovider": PLUGIN})


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = "[tooltrail.judge_providers]\necho = echoprovider:EchoCompletion\n"
    monkeypatch.syspath_prepend(str(_install(tmp_path / "site", entry)))


def test_an_installed_provider_makes_the_completion_of_its_model_strings(installed: None) -> None:
    completion = completion_for_model("echo:tiny", timeout_s=5.0)
    assert type(completion).__name__ == "EchoCompletion"
    assert (completion.model, completion.endpoint) == ("echo:tiny", "echo://")


def test_a_judge_built_from_settings_asks_the_installed_provider(installed: None) -> None:
    runner = build_judge(JudgeSettings(model="echo:tiny", cache=False))
    try:
        outcome = runner.judge("Is the reply polite?")
    finally:
        runner.close()
    assert outcome.verdict is not None and outcome.verdict.passed


def test_the_known_providers_name_the_installed_one(installed: None) -> None:
    assert PROVIDERS.names() == ["anthropic", "echo", "openai"]
    with pytest.raises(JudgeConfigError) as caught:
        completion_for_model("ecko:tiny")
    assert str(caught.value) == (
        "judge model 'ecko:tiny': unknown provider 'ecko' (did you mean 'echo'?); "
        "known: ['anthropic', 'echo', 'openai']"
    )


def test_without_the_package_the_provider_is_unknown_as_before() -> None:
    with pytest.raises(JudgeConfigError) as caught:
        completion_for_model("echo:tiny")
    assert str(caught.value) == (
        "judge model 'echo:tiny': unknown provider 'echo'; known: ['anthropic', 'openai']"
    )


def test_a_provider_that_cannot_be_loaded_is_a_configuration_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = "[tooltrail.judge_providers]\necho = echoprovider:NoSuchClass\n"
    monkeypatch.syspath_prepend(str(_install(tmp_path / "site", entry)))
    with pytest.raises(JudgeConfigError, match="judge provider plug-in 'echo' .* cannot be loaded"):
        completion_for_model("echo:tiny")
