"""What a check needs is declared in typed attributes and read in one place
(``checks.needs.needs_of``); ``score.suite_needs`` adds them up over a suite. A plug-in that
declares a need wrongly is told, with the check's name, instead of silently getting "no": a
value that is not a bool, or a misspelt attribute."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from tooltrail.checks import CheckNeeds, CheckNeedsError, Registry, needs_of
from tooltrail.checks.agents import AgentScoped
from tooltrail.checks.budgets import MaxTokens
from tooltrail.checks.expectations import Contains
from tooltrail.checks.judges import LlmJudge
from tooltrail.checks.plugins import PluginError, load_plugins
from tooltrail.checks.protocol import CheckContext
from tooltrail.results import Score
from tooltrail.score import SuiteNeeds, suite_needs
from tooltrail.suite import EvaluatorConfig, TestCase


@dataclass(frozen=True)
class CountsTokens:
    reads_usage: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("counts_tokens", "counts_tokens", "ok")


@dataclass(frozen=True)
class SaysYes:
    reads_usage: ClassVar[object] = "yes"

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("says_yes", "says_yes", "ok")


@dataclass(frozen=True)
class Misspelt:
    read_usage: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("misspelt", "misspelt", "ok")


@dataclass(frozen=True)
class AsksSometimes:
    """A need read from the configuration (a property), wrongly typed for one config."""

    judged: object = False

    @property
    def asks_judge(self) -> object:
        return self.judged

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("asks_sometimes", "asks_sometimes", "ok")


def _case(name: str, config: dict[str, object] | None = None) -> TestCase:
    return TestCase(id="c", evaluators=[EvaluatorConfig(name=name, config=config or {})])


def test_a_check_that_says_nothing_gets_the_defaults_stated_once() -> None:
    assert needs_of(Score) == CheckNeeds()  # any object: nothing declared
    assert CheckNeeds() == CheckNeeds(
        usage=False, content=False, calls=True, reply=False, judge=False
    )


def test_the_built_in_checks_declarations_are_read() -> None:
    assert needs_of(MaxTokens(max=3)) == CheckNeeds(usage=True, calls=False)
    assert needs_of(Contains(text="x")) == CheckNeeds(calls=False, reply=True)
    judge = needs_of(LlmJudge(rubric="polite"))
    assert judge.content and judge.judge


def test_a_scoped_check_needs_what_its_check_needs() -> None:
    scoped = AgentScoped(MaxTokens(max=3), "planner")
    assert needs_of(scoped) == needs_of(MaxTokens(max=3))


def test_suite_needs_adds_up_every_case_in_one_typed_value() -> None:
    registry = Registry.with_builtins()
    registry.register("counts_tokens", CountsTokens)
    assert suite_needs([TestCase(id="a", required_tools=["t"])], registry) == SuiteNeeds()
    assert suite_needs([_case("counts_tokens")], registry) == SuiteNeeds(usage=True)
    both = [_case("counts_tokens"), _case("llm_judge", {"rubric": "x"})]
    assert suite_needs(both, registry) == SuiteNeeds(usage=True, content=True, judge=True)


def test_a_need_that_is_not_a_bool_is_refused_when_the_check_is_registered() -> None:
    with pytest.raises(TypeError, match=r"SaysYes: reads_usage must be True or False, not 'yes'"):
        Registry().register("says_yes", SaysYes)


def test_a_misspelt_need_is_refused_with_a_hint() -> None:
    with pytest.raises(TypeError) as caught:
        Registry().register("misspelt", Misspelt)
    assert "unknown attribute 'read_usage' (did you mean 'reads_usage'?)" in str(caught.value)
    with pytest.raises(CheckNeedsError, match="read_usage"):
        needs_of(Misspelt())  # the same rule for a check no registry saw


def test_a_plug_in_module_with_a_wrong_need_is_a_plugin_error(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "wrong_needs.py").write_text(
        "class Wrong:\n"
        "    reads_content = 1\n"
        "    def evaluate(self, ctx):\n"
        "        raise AssertionError\n"
        "TOOLTRAIL_CHECKS = {'wrong': Wrong}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="reads_content must be True or False, not 1"):
        load_plugins(["wrong_needs"], registry=Registry())


def test_a_need_read_from_the_configuration_is_checked_on_the_check() -> None:
    registry = Registry()
    registry.register("asks_sometimes", AsksSometimes)
    assert suite_needs([_case("asks_sometimes", {"judged": True})], registry).judge
    with pytest.raises(CheckNeedsError) as caught:
        suite_needs([_case("asks_sometimes", {"judged": "no"})], registry)
    assert "AsksSometimes: asks_judge must be True or False, not 'no'" in str(caught.value)


@dataclass(frozen=True)
class HasOwnFields:
    """Attributes that only start like a need's: a far name, a method."""

    read_timeout: float = 3.0
    asks_for: str = "a refund"

    def read_config(self) -> dict[str, object]:
        return {}

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("own_fields", "own_fields", "ok")


@dataclass(frozen=True)
class SaysFile:
    reads_file: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> Score:
        return Score.passing("says_file", "says_file", "ok")


def test_a_check_own_attributes_that_start_like_a_need_are_not_needs() -> None:
    Registry().register("own_fields", HasOwnFields)
    assert needs_of(HasOwnFields()) == CheckNeeds()


def test_a_bool_under_an_unknown_need_name_is_refused() -> None:
    with pytest.raises(TypeError, match="unknown attribute 'reads_file'"):
        Registry().register("says_file", SaysFile)
