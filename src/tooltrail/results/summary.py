"""The roll-up of result rows: metrics, case counts, the mean score, each case's runs verdict
and what its judgements cost, counted in one walk over rows that may be read lazily from disk.

Beside the rows in layer 0: a report derives its summary from its rows wherever it is made or
read back (``results.report``), with no runner at hand.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice
from typing import Any, Protocol

from tooltrail.results.rows import CaseResult
from tooltrail.results.tally import tally
from tooltrail.trials import Trials, meets


class CaseRuns(Protocol):
    """What the summary reads of a case (a ``suite.TestCase``): how many runs it wants, and the
    share of them that must pass (``None``: every one)."""

    @property
    def runs(self) -> int: ...

    @property
    def threshold(self) -> float | None: ...


@dataclass(slots=True)
class MetricSummary:
    """Passed and total non-skipped scores of one metric over every row."""

    passed: int = 0
    total: int = 0

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0


@dataclass(slots=True)
class RunVerdict:
    """A case's verdict over all its rows: passed runs / max(runs, rows) >= threshold."""

    case_id: str
    passed_runs: int
    runs: int
    #: ``None``: every run must pass.
    threshold: float | None
    passed: bool
    #: Whether the case asked for repeated runs (``runs > 1`` or a threshold): reports show it.
    repeated: bool = False
    #: The case's rows (its recorded runs; ``runs`` may count more, a missing run failing).
    recorded: int = 0
    #: Changes of outcome (pass to fail, fail to pass) between consecutive rows, in row order.
    flips: int = 0

    @property
    def trials(self) -> Trials:
        """The runs' figures (``tooltrail.trials``: pass@k, pass^k, flip rate, interval)."""
        return Trials(
            runs=self.runs, passed=self.passed_runs, recorded=self.recorded, flips=self.flips
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "case_id": self.case_id,
            "passed_runs": self.passed_runs,
            "runs": self.runs,
            "threshold": self.threshold,
            "passed": self.passed,
            "repeated": self.repeated,
        }
        if self.repeated:  # (a report without repeated cases, byte for byte as before)
            data["trials"] = self.trials.to_dict(self.threshold)
        return data


@dataclass(slots=True)
class Summary:
    metrics: dict[str, MetricSummary] = field(default_factory=dict)
    passed_cases: int = 0
    total_cases: int = 0
    pass_rate: float = 0.0
    #: Mean value of every non-skipped score.
    average_score: float = 0.0
    #: One verdict per case that has rows, in order of first row.
    runs: list[RunVerdict] = field(default_factory=list)
    #: What the judge checks' judgements cost (``None``: no score was a judge's).
    judge: JudgeSummary | None = None
    #: The length of the longest row label (``None``: not counted), counted on the summary's
    #: walk over the rows so that the text report need not walk them once more for its
    #: column width: rows read back from disk cost a third of that report's time a walk.
    #: A layout aid, not part of what the summary says: not compared, not serialized.
    longest_label: int | None = field(default=None, compare=False)
    #: Failing rows with a failing score that is an error (``None``: not counted), counted on
    #: the summary's walk for the JUnit report's ``errors`` count, for the same reason.
    error_rows: int | None = field(default=None, compare=False)


@dataclass(slots=True)
class JudgeSummary:
    """The judgements behind the rows' judge scores (each score's ``judge`` record): model
    requests made, answers from the cache, judgements not made (a spent budget), errors,
    tokens and dollars. ``unpriced`` lists the models with no price in the suite's
    ``prices:`` (their tokens are counted, their cost is not)."""

    judgements: int = 0
    requests: int = 0
    cached: int = 0
    skipped: int = 0
    errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    models: list[str] = field(default_factory=list)
    unpriced: list[str] = field(default_factory=list)

    def add(self, record: dict[str, Any]) -> None:
        """Count one score's ``judge`` record (``JudgeOutcome.record()``)."""
        self.judgements += 1
        model = str(record.get("model", ""))
        if model not in self.models:
            self.models.append(model)
        if record.get("skipped"):
            self.skipped += 1
            return
        if record.get("error"):
            self.errors += 1
        if record.get("cached"):
            self.cached += 1
        else:
            self.requests += int(record.get("attempts") or 0)
            cost = record.get("cost_usd")
            if isinstance(cost, (int, float)):
                self.cost_usd += cost
            elif (record.get("input_tokens") or record.get("output_tokens")) and (
                model not in self.unpriced
            ):
                self.unpriced.append(model)
        self.input_tokens += int(record.get("input_tokens") or 0)
        self.output_tokens += int(record.get("output_tokens") or 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "judgements": self.judgements,
            "requests": self.requests,
            "cached": self.cached,
            "skipped": self.skipped,
            "errors": self.errors,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 9),
            "models": list(self.models),
            "unpriced": list(self.unpriced),
        }

    def line(self) -> str:
        """One line for the text reports: ``judge: 3 judgements, 2 requests (1 cached), ...``."""
        cost = f"${self.cost_usd:.6f}"
        if self.unpriced:
            cost += f" (no price for {', '.join(self.unpriced)})"
        text = (
            f"judge: {self.judgements} judgements, {self.requests} requests "
            f"({self.cached} cached), {self.input_tokens} input + {self.output_tokens} output "
            f"tokens, {cost}"
        )
        if self.errors:
            text += f"; {self.errors} errors"
        if self.skipped:
            text += f"; {self.skipped} not judged: the judge budget was spent"
        return text


def summarize(rows: Iterable[CaseResult], cases: Mapping[str, CaseRuns]) -> Summary:
    """The roll-up of docs/checks.md: metrics over non-skipped scores, keys sorted; case counts;
    mean score; one runs verdict per case (``cases`` supplies runs/threshold).

    One walk over ``rows``, a block at a time, so rows read lazily from disk are not all held."""
    summarizer = Summarizer(cases)
    walk = iter(rows)
    while block := list(islice(walk, SUMMARY_BLOCK)):
        summarizer.add(block)
    return summarizer.summary()


class Summarizer:
    """``summarize`` fed a block of rows at a time, in report order: a report that writes its
    rows before its roll-up (the text report) counts them as it writes them, in the same walk
    (rows read back from disk are unpickled on every walk: ``batch.spill``)."""

    def __init__(self, cases: Mapping[str, CaseRuns]) -> None:
        self._cases = cases
        # case id -> [passed rows, rows, flips, the last row's outcome], by first row
        self._by_case: dict[str, list[int]] = {}
        self._totals: dict[str, int] = {}
        self._passes: dict[str, int] = {}
        self._total_value = 0.0
        self._counted = 0
        self._judged: JudgeSummary | None = None
        self._longest_label = 0
        self._error_rows = 0

    def add(self, block: Sequence[CaseResult]) -> None:
        """Count the rows of ``block``, the next ones in report order."""
        if not block:
            return
        self._longest_label = max(self._longest_label, max([len(row.label) for row in block]))
        by_case = self._by_case
        for row in block:
            passed = row.passed
            counts = by_case.get(row.case_id)
            if counts is None:
                counts = by_case[row.case_id] = [0, 0, 0, passed]
            elif counts[3] != passed:  # the outcome flipped since the case's previous row
                counts[2] += 1
                counts[3] = passed
            if passed:
                counts[0] += 1
            elif any([s.error for s in row.scores]) and any(s.error for s in row.failures):
                self._error_rows += 1  # (errors are rare: the property only on such rows)
            counts[1] += 1
        # Counted at C speed: this runs over every score of a batch (millions in a nightly run).
        scores = [score for row in block for score in row.scores if not score.skipped]
        records = [score.judge for score in scores if score.judge is not None]
        if records:
            judged = self._judged = self._judged or JudgeSummary()
            for record in records:
                judged.add(record)
        tally(self._totals, [score.metric for score in scores])
        tally(self._passes, [score.metric for score in scores if score.passed])
        values = [score.value for score in scores]
        if not math.isfinite(sum(values)):  # a NaN or infinite value is left out of the mean
            values = [v for v in values if math.isfinite(v)]
        # Continues the sum: the same additions in the same order, whatever the blocks.
        self._total_value = sum(values, self._total_value)
        self._counted += len(values)

    def summary(self) -> Summary:
        """The roll-up of the rows added so far."""
        totals, passes, by_case = self._totals, self._passes, self._by_case
        metrics = {
            name: MetricSummary(passes.get(name, 0), totals[name]) for name in sorted(totals)
        }
        passed_rows = sum([counts[0] for counts in by_case.values()])
        total = sum([counts[1] for counts in by_case.values()])
        verdicts = []
        for case_id, (passed_runs, case_rows, flips, _) in by_case.items():
            case = self._cases.get(case_id)
            wanted_runs = case.runs if case is not None else 1
            threshold = case.threshold if case is not None else None
            runs = max(wanted_runs, case_rows)
            verdicts.append(
                RunVerdict(
                    case_id=case_id,
                    passed_runs=passed_runs,
                    runs=runs,
                    threshold=threshold,
                    passed=meets(passed_runs, runs, 1.0 if threshold is None else threshold),
                    repeated=case is not None and (case.runs > 1 or case.threshold is not None),
                    recorded=case_rows,
                    flips=flips,
                )
            )
        return Summary(
            metrics=metrics,
            passed_cases=passed_rows,
            total_cases=total,
            pass_rate=passed_rows / total if total else 0.0,
            average_score=self._total_value / self._counted if self._counted else 0.0,
            runs=verdicts,
            judge=_judge_copy(self._judged),
            longest_label=self._longest_label,
            error_rows=self._error_rows,
        )


def _judge_copy(judged: JudgeSummary | None) -> JudgeSummary | None:
    """A summary's own copy: more rows added later do not change a summary already made."""
    if judged is None:
        return None
    return replace(judged, models=list(judged.models), unpriced=list(judged.unpriced))


#: Rows summarized at a time (a block of rows read back from disk is 512).
SUMMARY_BLOCK = 4096
