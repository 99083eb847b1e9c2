"""Where each result came from: the provenance attributes of every evaluation event.

A backend comparing verdicts over weeks must compare like with like: the same check, at the
same configuration, asked of the same judge with the same prompt. ``Origins`` gives each
``gen_ai.evaluation.result`` event (``tooltrail.scores.evaluation_events``, on the live, serve
and ``eval --annotate`` paths alike) these ``tooltrail.*`` attributes, until the GenAI
conventions name them:

- ``tooltrail.check.version``: the suite's ``version:``; a plug-in check's: its package's
  version;
- ``tooltrail.suite.version``: the suite's ``version:``; ``tooltrail.version``: tooltrail's
  (the code of its own checks);
- ``tooltrail.check.config_hash``: the first sixteen hex digits of the SHA-256 of the
  check's configuration;
- ``tooltrail.judge.model`` (judge checks): the model that answered, else the one configured;
- ``tooltrail.judge.prompt_hash`` (judge checks): the SHA-256, cut the same way, of the prompt's
  template: the check's kind, its rubric's text, the configuration that shapes the prompt,
  tooltrail's instructions and answer format;
- ``tooltrail.sampled``: whether the check's sample takes the trace (always, without
  ``sample:``); ``false`` for test traffic, which is scored outside sampling;
- ``tooltrail.sample.rate``: the check's ``sample:`` rate, when it has one;
- ``tooltrail.test_traffic``: ``true`` on the events of a trace marked as a test run.

**Which configuration is a score's.** A score is matched to what the suite wrote: an
``evaluators:`` entry (by the score's name, the entry's ``config.name`` or its check name,
then by its metric), a turn (a score of turn ``n``: that turn's ``user`` and ``expect``), or a
case field (by the score's metric: ``required_tool`` is ``required_tools``, with the options
that change how it is judged: ``compare_args``, ``contains_options``, ``ignore_failed_calls``,
``agent``, ``prices``). Its hash covers exactly that, so a change to one check changes its
events' hash and no other's. A score none of these name (a plug-in scoring under another
metric) gets the hash of its whole case. The case verdict (``tooltrail.case``) hashes the
whole case and also lists ``tooltrail.sampled_out``: the checks sampling left out.

Pure apart from reading installed package versions once per plug-in module.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooltrail.checks.judge_prompts import INTRODUCTION
from tooltrail.checks.needs import needs_of
from tooltrail.checks.registry import Registry, default_registry, is_builtin
from tooltrail.checks.rubrics import resolve_rubric
from tooltrail.judge.verdict import VERDICT_INSTRUCTIONS
from tooltrail.model import EvalTrace
from tooltrail.sampling import (
    DEFAULT_TEST_TRAFFIC,
    TestTraffic,
    check_label,
    decision_of,
    in_sample,
    is_test_traffic,
    sample_of,
)
from tooltrail.suite import TestSuite
from tooltrail.suite.case import EvaluatorConfig, TestCase
from tooltrail.version import __version__

CHECK_VERSION = "tooltrail.check.version"
SUITE_VERSION = "tooltrail.suite.version"
TOOLTRAIL_VERSION = "tooltrail.version"
CONFIG_HASH = "tooltrail.check.config_hash"
JUDGE_MODEL = "tooltrail.judge.model"
PROMPT_HASH = "tooltrail.judge.prompt_hash"
SAMPLED = "tooltrail.sampled"
SAMPLE_RATE = "tooltrail.sample.rate"
TEST_TRAFFIC = "tooltrail.test_traffic"
SAMPLED_OUT = "tooltrail.sampled_out"

#: A case field's checks by the metric their scores carry (``checks.expectations``,
#: ``checks.budgets``, ``checks.provenance``); ``tests/pipeline/test_provenance_events.py``
#: compiles each field and holds its scores' metric to this table.
METRIC_FIELDS: dict[str, str] = {
    "contains": "expected_contains",
    "required_tool": "required_tools",
    "forbidden_tool": "forbidden_tools",
    "tool_args": "required_tool_arguments",
    "tool_arg_values": "expected_tool_arguments",
    "args_from": "args_from",
    "tool_order": "required_tool_order",
    "turn_count_threshold": "max_turns",
    "max_latency_ms": "max_latency_ms",
    "max_tool_calls": "max_tool_calls",
    "max_llm_calls": "max_llm_calls",
    "max_tokens": "max_tokens",
    "max_cost_usd": "max_cost_usd",
}
#: The case options that change how a field's checks judge, by field (besides the options
#: every check reads: ``ignore_failed_calls`` and ``agent``).
FIELD_OPTIONS: dict[str, tuple[str, ...]] = {
    "expected_contains": ("contains_options",),
    "expected_tool_arguments": ("compare_args",),
    "args_from": ("compare_args",),
    "max_cost_usd": ("prices",),
}
_EVERY_CHECK = ("ignore_failed_calls", "agent")
#: Score names remembered per case before the lookup stops caching (a plug-in may name its
#: scores after what a trace holds).
_MAX_CACHED = 4096
_HASH_DIGITS = 16


def config_hash(value: Any) -> str:
    """The SHA-256 of ``value`` as canonical JSON (objects as their fields), its first
    ``_HASH_DIGITS`` hex digits."""
    text = json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_DIGITS]


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.compare and f.name != "origin"
        }
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=repr)
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _plain(to_dict())
    return repr(value)


@dataclass(frozen=True, slots=True)
class _Entry:
    """What one check of a case carries on its events."""

    config_hash: str
    version: str
    judge_model: str | None = None
    prompt_hash: str | None = None
    sample: Any = None  # a ``Sample``, for a sampled evaluator


class Origins:
    """The provenance attributes of a suite's results (module docstring); the ``origins`` of
    ``scores.EventOptions``. ``judge_model``: the run's judge model (the suite's ``judge:``
    block or a ``--judge-model``), for judge checks that name none; ``traffic``: the test
    traffic rule of the run (``tooltrail.sampling``)."""

    def __init__(
        self,
        suite: TestSuite,
        *,
        registry: Registry | None = None,
        judge_model: str | None = None,
        traffic: TestTraffic = DEFAULT_TEST_TRAFFIC,
    ) -> None:
        self.suite_version = str(suite.version)
        self.traffic = traffic
        if judge_model is None and suite.judge is not None:
            judge_model = getattr(suite.judge, "model", None)
        self._judge_model = judge_model
        self._registry = registry or default_registry()
        self._cases: dict[str, _CaseOrigins] = {
            case.id: _CaseOrigins(case, self) for case in suite.cases
        }

    def trace_attributes(self, trace: EvalTrace) -> dict[str, Any]:
        """What every event of ``trace`` carries: the versions, and whether it is test traffic
        (as sampling decided it, ``tooltrail.sampling``, else by this run's rule)."""
        attributes: dict[str, Any] = {
            SUITE_VERSION: self.suite_version,
            TOOLTRAIL_VERSION: __version__,
        }
        decided = decision_of(trace)
        if decided is not None:
            test = bool(decided.get("test"))
        else:
            test = is_test_traffic(trace, self.traffic)
        if test:
            attributes[TEST_TRAFFIC] = True
        return attributes

    def score_attributes(
        self, trace: EvalTrace, case_id: str, score: Any, common: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The provenance of one score of ``case_id`` on ``trace`` (``common``: the trace's
        ``trace_attributes``, worked out here when not given)."""
        origins = self._cases.get(case_id)
        entry = origins.entry_of(score) if origins is not None else None
        attributes = dict(common) if common is not None else self.trace_attributes(trace)
        if entry is None:
            return attributes
        attributes[CHECK_VERSION] = entry.version
        attributes[CONFIG_HASH] = entry.config_hash
        record = getattr(score, "judge", None)
        model = record.get("model") if isinstance(record, dict) else None
        if entry.prompt_hash is not None or model:
            attributes[JUDGE_MODEL] = model or entry.judge_model or ""
            if entry.prompt_hash is not None:
                attributes[PROMPT_HASH] = entry.prompt_hash
        test = attributes.get(TEST_TRAFFIC, False)
        if entry.sample is not None:
            attributes[SAMPLE_RATE] = float(entry.sample.rate)
            attributes[SAMPLED] = not test and in_sample(trace, entry.sample)
        else:
            attributes[SAMPLED] = not test
        return attributes

    def case_attributes(
        self, trace: EvalTrace, result: Any, common: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The provenance of a case verdict: the whole case, and what sampling left out."""
        origins = self._cases.get(str(result.case_id))
        attributes = dict(common) if common is not None else self.trace_attributes(trace)
        if origins is not None:
            attributes[CHECK_VERSION] = self.suite_version
            attributes[CONFIG_HASH] = origins.case_hash
        out = [
            score.name
            for score in result.scores
            if getattr(score, "skipped", False)
            and isinstance(getattr(score, "metadata", None), dict)
            and score.metadata.get("sampled_out")
        ]
        attributes[SAMPLED] = not attributes.get(TEST_TRAFFIC, False) and not out
        if out:
            attributes[SAMPLED_OUT] = out
        return attributes

    # -- what the cases hold --------------------------------------------------------------

    def judge_model(self, configured: Any) -> str | None:
        if isinstance(configured, str) and configured:
            return configured
        return self._judge_model

    def check_version(self, evaluator: EvaluatorConfig) -> str:
        """The suite's version, or a plug-in check's own."""
        try:
            built = self._registry.build(evaluator)
        except Exception:  # noqa: BLE001 - a check that cannot be built reports it itself
            return self.suite_version
        if is_builtin(built):
            return self.suite_version
        return _plugin_version(built) or self.suite_version

    def asks_judge(self, evaluator: EvaluatorConfig) -> bool:
        try:
            built = self._registry.build(evaluator)
        except Exception:  # noqa: BLE001
            return False
        return needs_of(built).judge


class _CaseOrigins:
    """One case's checks: their entries, and which entry a score of it is."""

    def __init__(self, case: TestCase, owner: Origins) -> None:
        self.case_hash = config_hash(case)
        version = owner.suite_version
        common = {key: _plain(getattr(case, key, None)) for key in _EVERY_CHECK}
        self.fields: dict[str, _Entry] = {}
        for metric, key in METRIC_FIELDS.items():
            value = getattr(case, key, None)
            if value is None:
                continue
            options = {k: _plain(getattr(case, k, None)) for k in FIELD_OPTIONS.get(key, ())}
            self.fields[metric] = _Entry(
                config_hash=config_hash({"field": key, "value": value, **common, **options}),
                version=version,
            )
        self.turns: dict[int, _Entry] = {}
        for number, turn in enumerate(case.turns, start=1):
            judge = _turn_judge(turn)
            self.turns[number] = _Entry(
                config_hash=config_hash({"turn": number, "turn_config": turn, **common}),
                version=version,
                judge_model=owner.judge_model(getattr(judge, "model", None)) if judge else None,
                prompt_hash=_prompt_hash("turn_judge", getattr(judge, "rubric", None), None)
                if judge
                else None,
            )
        #: (names a score of the entry may carry, the check's name as its metric, the entry)
        self.evaluators: list[tuple[tuple[str, ...], str, _Entry]] = []
        for index, evaluator in enumerate(case.evaluators):
            config = evaluator.config if isinstance(evaluator.config, dict) else {}
            judged = owner.asks_judge(evaluator)
            entry = _Entry(
                config_hash=config_hash({"evaluator": evaluator, **common}),
                version=owner.check_version(evaluator),
                judge_model=owner.judge_model(config.get("model")) if judged else None,
                prompt_hash=(
                    _prompt_hash(evaluator.name, config.get("rubric"), config) if judged else None
                ),
                sample=sample_of(evaluator),
            )
            names = tuple(dict.fromkeys([check_label(case, index), evaluator.name]))
            named = config.get("name")
            if isinstance(named, str) and named:
                names = tuple(dict.fromkeys([named, *names]))
            self.evaluators.append((names, evaluator.name, entry))
        self.whole = _Entry(config_hash=self.case_hash, version=version)
        self._found: dict[tuple[str, str, Any], _Entry] = {}

    def entry_of(self, score: Any) -> _Entry:
        name = str(getattr(score, "name", ""))
        metric = str(getattr(score, "metric", ""))
        turn = getattr(score, "turn", None)
        key = (name, metric, turn)
        found = self._found.get(key)
        if found is None:
            found = self._match(name, metric, turn)
            if len(self._found) < _MAX_CACHED:
                self._found[key] = found
        return found

    def _match(self, name: str, metric: str, turn: Any) -> _Entry:
        bare = name
        if isinstance(turn, int) and name.startswith(f"turn{turn}:"):
            bare = name[len(f"turn{turn}:") :]
        if isinstance(turn, int) and turn in self.turns:  # a turn's check (scorers have none)
            return self.turns[turn]
        for names, _, entry in self.evaluators:
            for candidate in names:
                if (
                    bare == candidate
                    or bare.startswith(candidate + ":")
                    or (bare.startswith("agent:") and bare.endswith(":" + candidate))
                ):
                    return entry
        by_metric = [entry for _, own, entry in self.evaluators if own == metric]
        if len(by_metric) == 1:
            return by_metric[0]
        field_entry = self.fields.get(metric)
        if field_entry is not None:
            return field_entry
        return self.whole


def _turn_judge(turn: Any) -> Any:
    """The judge a turn's expectation asks (its reply's, else its first argument judge's)."""
    expect = getattr(turn, "expect", None)
    judge = getattr(expect, "judge", None)
    if judge is not None:
        return judge
    for entry in getattr(expect, "tool_calls_args", None) or ():
        if getattr(entry, "judge", None) is not None:
            return entry.judge
    return None


def _prompt_hash(kind: str, rubric: Any, config: Mapping[str, Any] | None) -> str:
    """The template a judge check's prompts are made from: its kind, its rubric's text, the
    configuration that shapes the prompt, and tooltrail's own instructions and answer format."""
    try:
        label, text = resolve_rubric(rubric, (config or {}).get("policy"))
    except Exception:  # noqa: BLE001 - a bad rubric is the check's error score; hash it as given
        label, text = "as given", repr(rubric)
    shaping = {
        key: value
        for key, value in (config or {}).items()
        if key not in ("model", "samples", "name", "judge", "rubric")
    }
    return config_hash(
        {
            "kind": kind,
            "rubric": [label, text],
            "shaping": shaping,
            "instructions": INTRODUCTION,
            "answer": VERDICT_INSTRUCTIONS,
        }
    )


_VERSIONS: dict[str, str | None] = {}


def _plugin_version(check: Any) -> str | None:
    """``package version`` of the module a plug-in check comes from (its ``__version__``, else
    its distribution's); ``None`` when it says none."""
    inner = getattr(check, "check", check)
    target = getattr(inner, "fn", None) or type(inner)
    module = getattr(target, "__module__", "") or ""
    if module in _VERSIONS:
        return _VERSIONS[module]
    top = module.split(".")[0]
    found: str | None = None
    for name in (module, top):
        version = getattr(sys.modules.get(name), "__version__", None)
        if isinstance(version, str) and version:
            found = f"{top} {version}"
            break
    if found is None and top:
        try:
            dists = importlib.metadata.packages_distributions().get(top) or []
            if dists:
                found = f"{dists[0]} {importlib.metadata.version(dists[0])}"
        except Exception:  # noqa: BLE001 - no version known
            found = None
    _VERSIONS[module] = found
    return found
