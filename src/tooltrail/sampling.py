"""Which checks judge which production traces: deterministic samples, and test traffic apart.

A check with ``sample:`` (``suite.sample.Sample``) judges a share of the traces. The decision
is a pure function of the trace, so every process, every worker and every rerun takes the
same traces, and nothing is stored:

- **The key.** The value of the trace attribute ``by`` when the check names one (a resource or
  root/agent span attribute, ``metadata["attributes"]``: every trace of one tenant together),
  else the trace's conversation id when it has one (a conversation's traces together), else
  its trace id.
- **The draw.** The key's BLAKE2b hash as a fraction of 2**64, against the rate: a trace is in
  the sample when the fraction is below it. The hash is not salted per check, so for one key a
  rarer check's sample is a subset of a commoner one's (a trace judged at 0.1 is judged at 0.5
  too), and a check at 1 judges every trace.
- **Out of the sample** a check gives no verdict: its score is skipped (it never fails or
  passes its case, and has no evaluation event), with an explanation and
  ``metadata["sampled_out"]``, so the trace's results say which checks were sampled out; it is
  not run, so a judge check calls no model.

**Test traffic.** A trace marked as a test run (an attribute of ``TestTraffic.attributes`` set
on its resource or its root or agent span, or ``deployment.environment`` one of
``TestTraffic.environments``) is never counted in production sampling or spend windows: it
is scored fully (``mode="score"``, every check run) or not evaluated at all (``"skip"``).

``serve`` and live evaluation apply this (``pipeline.inline``), and ``tooltrail eval`` over
recorded traffic (``batch.tasks``); the pytest plugin's runs are test traffic (it marks them),
so they run every check. ``tooltrail.origins`` reads the same decision for the
``tooltrail.sampled`` attribute of every evaluation event.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from tooltrail.checks.score import Score
from tooltrail.model import EvalTrace
from tooltrail.results import CaseResult
from tooltrail.settings import TEST_MARK
from tooltrail.suite.case import EvaluatorConfig, TestCase
from tooltrail.suite.sample import Sample, read_sample
from tooltrail.suite.suite_error import SuiteError

#: Attributes that mark a trace as a test run when set (to anything but ``false`` or ``""``)
#: on its resource or its root or agent span: tooltrail's own mark
#: (``OTEL_RESOURCE_ATTRIBUTES=tooltrail.test=true`` on a test run's agents) and the
#: OpenTelemetry test conventions' ``test.case.name`` and ``test.suite.name``.
DEFAULT_TEST_ATTRIBUTES = (TEST_MARK, "test.case.name", "test.suite.name")
#: Where a deployment's environment is written (the current and the older convention).
ENVIRONMENT_KEYS = ("deployment.environment.name", "deployment.environment")
TEST_MODES = ("score", "skip")
_SPACE = float(1 << 64)


@dataclass(frozen=True, slots=True)
class TestTraffic:
    """Which traces are test runs, and what becomes of them: ``score`` every check (outside
    sampling and spend windows), or ``skip`` them (not evaluated, counted)."""

    __test__ = False  # not a pytest test class

    attributes: tuple[str, ...] = DEFAULT_TEST_ATTRIBUTES
    #: ``deployment.environment`` values that are test runs (``ci``, ``staging``...).
    environments: tuple[str, ...] = ()
    mode: Literal["score", "skip"] = "score"

    def __post_init__(self) -> None:
        if self.mode not in TEST_MODES:
            raise ValueError(f"test traffic mode must be score or skip, not {self.mode!r}")


DEFAULT_TEST_TRAFFIC = TestTraffic()


def is_test_traffic(trace: EvalTrace, traffic: TestTraffic = DEFAULT_TEST_TRAFFIC) -> bool:
    """Whether ``trace`` is marked as a test run (module docstring)."""
    found = trace.metadata.get("attributes")
    if not isinstance(found, dict) or not found:
        return False
    for key in traffic.attributes:
        value = found.get(key)
        if value is not None and value is not False and value != "" and value != "false":
            return True
    if traffic.environments:
        for key in ENVIRONMENT_KEYS:
            value = found.get(key)
            if isinstance(value, str) and value in traffic.environments:
                return True
    return False


def sample_key(trace: EvalTrace, by: str | None = None) -> str:
    """What a check's sample is drawn on for ``trace`` (module docstring)."""
    if by is not None:
        found = trace.metadata.get("attributes")
        if isinstance(found, dict):
            value = found.get(by)
            if value is not None:
                return f"{by}={value}"
    conversation = trace.metadata.get("conversation_id")
    if isinstance(conversation, str) and conversation:
        return f"conversation={conversation}"
    return f"trace={trace.trace_id}"


def sample_fraction(key: str) -> float:
    """``key``'s place in [0, 1): its BLAKE2b hash (64 bits) over 2**64."""
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return int(digest, 16) / _SPACE


def in_sample(trace: EvalTrace, sample: Sample) -> bool:
    """Whether ``sample`` takes ``trace``: its key's fraction is below the rate."""
    if sample.rate >= 1.0:
        return True
    if sample.rate <= 0.0:
        return False
    return sample_fraction(sample_key(trace, sample.by)) < sample.rate


def sample_of(evaluator: EvaluatorConfig) -> Sample | None:
    """The evaluator's ``sample:`` as a ``Sample`` (a rate or mapping given in Python is read
    here); ``None``: it judges every trace."""
    raw = getattr(evaluator, "sample", None)
    return None if raw is None else read_sample(raw)


def check_label(case: TestCase, index: int) -> str:
    """How results and counters name the ``index``-th evaluator of ``case``: its configured
    ``name`` (a judge's), else the check's name; ``#n`` after it when another evaluator of the
    case has the same."""
    labels = [_own_label(e) for e in case.evaluators]
    label = labels[index]
    if labels.count(label) > 1:
        label = f"{label}#{index + 1}"
    return label


def _own_label(evaluator: EvaluatorConfig) -> str:
    named = evaluator.config.get("name") if isinstance(evaluator.config, dict) else None
    return named if isinstance(named, str) and named else evaluator.name


@dataclass(frozen=True, slots=True)
class SampledCheck:
    """One evaluator of one case that has ``sample:``."""

    case_id: str
    index: int
    label: str
    metric: str
    sample: Sample

    @property
    def key(self) -> str:
        """``case/check``, as counters and the results line's ``sampled_out`` name it."""
        return f"{self.case_id}/{self.label}"


def sampled_checks(cases: Iterable[TestCase]) -> list[SampledCheck]:
    """Every sampled evaluator of ``cases``, in suite order (the counters' order)."""
    found: list[SampledCheck] = []
    for case in cases:
        for index, evaluator in enumerate(case.evaluators):
            sample = sample_of(evaluator)
            if sample is not None:
                found.append(
                    SampledCheck(
                        case_id=case.id,
                        index=index,
                        label=check_label(case, index),
                        metric=evaluator.name,
                        sample=sample,
                    )
                )
    return found


@dataclass(slots=True)
class SampledRun:
    """What sampling decided for one trace: the cases to evaluate (a case without its
    sampled-out checks is a copy of it), the checks sampled in and out, and whether the trace is
    test traffic (then nothing was sampled)."""

    cases: list[TestCase]
    #: case id -> the checks of it sampled out, in order.
    out: dict[str, list[SampledCheck]] = field(default_factory=dict)
    sampled_in: list[SampledCheck] = field(default_factory=list)
    #: Cases every check of which was sampled out: not evaluated, a row of skipped scores.
    empty: list[TestCase] = field(default_factory=list)
    #: The cases as given, for the order of the rows.
    given: list[TestCase] = field(default_factory=list)
    test: bool = False

    @property
    def sampled_out(self) -> list[SampledCheck]:
        return [check for checks in self.out.values() for check in checks]


class Sampler:
    """Applies the suite's samples to each trace's cases (module docstring). Thread-safe: its
    only state is a cache of case copies, filled once per (case, checks left out)."""

    def __init__(self, cases: Iterable[TestCase], traffic: TestTraffic = DEFAULT_TEST_TRAFFIC):
        self.traffic = traffic
        self.checks = sampled_checks(cases)
        self._by_case: dict[str, list[SampledCheck]] = {}
        for check in self.checks:
            self._by_case.setdefault(check.case_id, []).append(check)
        #: (id of a case, indices left out) -> (the case, its copy without them, or None when
        #: nothing is left of it). The case is held so its ``id`` is not reused.
        self._variants: dict[tuple[int, tuple[int, ...]], tuple[TestCase, TestCase | None]] = {}

    @property
    def active(self) -> bool:
        """Whether any check of the suite is sampled."""
        return bool(self.checks)

    def decide(self, cases: Sequence[TestCase], trace: EvalTrace, test: bool) -> SampledRun:
        """The cases to evaluate on ``trace`` (``test``: it is test traffic, every check runs)."""
        run = SampledRun(cases=[], given=list(cases), test=test)
        for case in cases:
            checks = self._by_case.get(case.id)
            if not checks or test:
                run.cases.append(case)
                continue
            out = []
            for check in checks:
                if check.index >= len(case.evaluators):  # a case of another suite, same id
                    continue
                if in_sample(trace, check.sample):
                    run.sampled_in.append(check)
                else:
                    out.append(check)
            if not out:
                run.cases.append(case)
                continue
            run.out[case.id] = out
            variant = self._variant(case, tuple(check.index for check in out))
            if variant is None:
                run.empty.append(case)
            else:
                run.cases.append(variant)
        return run

    def _variant(self, case: TestCase, left_out: tuple[int, ...]) -> TestCase | None:
        key = (id(case), left_out)
        known = self._variants.get(key)
        if known is not None and known[0] is case:
            return known[1]
        kept = [e for i, e in enumerate(case.evaluators) if i not in left_out]
        variant: TestCase | None
        try:
            variant = replace(case, evaluators=kept)
        except SuiteError:  # nothing left to check: the case is all sampled out
            variant = None
        self._variants[key] = (case, variant)
        return variant

    def finish(
        self, run: SampledRun, results: list[CaseResult], trace: EvalTrace
    ) -> list[CaseResult]:
        """The rows of every given case, in order: each evaluated row with a skipped score per
        check sampled out of it, and a row of skipped scores for a case left with nothing."""
        if not run.out:
            return results
        by_case = {result.case_id: result for result in results}
        rows: list[CaseResult] = []
        for case in run.given:
            skipped = [_skipped(check) for check in run.out.get(case.id, ())]
            row = by_case.get(case.id)
            if row is None:
                if not skipped:
                    continue
                row = CaseResult(case.id, True, skipped, trace.trace_id or None, case.id)
            elif skipped:
                row.scores.extend(skipped)
            rows.append(row)
        return rows


def _skipped(check: SampledCheck) -> Score:
    """The score of a check sampled out: no verdict, and why."""
    by = f"the trace attribute {check.sample.by!r}" if check.sample.by else "trace"
    share = f"{check.sample.rate:.4g}"
    return Score.skip(
        check.label,
        f"Not sampled: this check judges a share of {share} of production traces (by {by}); "
        "this trace is not among them.",
        metric=check.metric,
        metadata={"sampled_out": True, "sample_rate": check.sample.rate},
    )


def sampled_out_names(results: Sequence[CaseResult]) -> list[str]:
    """``case/check`` of every score in ``results`` that sampling left out."""
    return [
        f"{result.case_id}/{score.name}"
        for result in results
        for score in result.scores
        if score.skipped and isinstance(score.metadata, dict) and score.metadata.get("sampled_out")
    ]


def annotate_trace(trace: EvalTrace, run: SampledRun) -> None:
    """Leave what sampling decided in ``trace.metadata`` (``tooltrail.sampling``): the
    evaluation events and spans of the trace read it."""
    trace.metadata["tooltrail.sampling"] = {
        "test": run.test,
        "sampled_out": [check.key for check in run.sampled_out],
    }


def decision_of(trace: EvalTrace) -> dict[str, Any] | None:
    """What ``annotate_trace`` left on ``trace``, or ``None``."""
    found = trace.metadata.get("tooltrail.sampling")
    return found if isinstance(found, dict) else None
