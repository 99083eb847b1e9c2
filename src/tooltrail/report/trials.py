"""The figures of a case's repeated runs as every report words them (text, Markdown, JUnit,
HTML; the JSON report carries ``RunVerdict.to_dict()``'s ``trials``), and the pytest plugin's
message too: the Wilson interval and what it says at the case's threshold, the flip rate, and
pass@k and pass^k for the ``k`` that ``tooltrail.trials.shown_ks`` picks.

Only cases that ask for repeated runs (``RunVerdict.repeated``) have these figures in a
report, so a report without such cases is what it was before them, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from tooltrail.results import RunVerdict
from tooltrail.trials import DEFAULT_CONFIDENCE, Trials, shown_ks

#: What the interval says of the threshold, by the verdict it gives (``Trials.verdict``).
READINGS = {
    "pass": "clears the threshold",
    "fail": "is below the threshold",
    "inconclusive": "straddles the threshold",
}


@dataclass(frozen=True, slots=True)
class TrialFigures:
    """One case's figures, worded: each a short text."""

    #: ``95% Wilson interval [37.6%, 96.4%]``
    interval: str
    #: ``straddles the threshold 0.8: inconclusive`` (empty when every run must pass).
    reading: str
    #: ``0.25 (1 change in 5 runs)``, or ``n/a (1 run recorded)``.
    flip_rate: str
    #: The ``k`` shown, and pass@k and pass^k for each (three decimals).
    ks: list[int]
    pass_at: list[str]
    pass_hat: list[str]
    #: ``pass``, ``fail`` or ``inconclusive`` at the interval's confidence.
    verdict: str


def figures_of(verdict: RunVerdict, confidence: float = DEFAULT_CONFIDENCE) -> TrialFigures:
    """The worded figures of ``verdict``'s runs at ``confidence``."""
    trials = verdict.trials
    interval = trials.interval(confidence)
    decided = trials.verdict(verdict.threshold, confidence)
    reading = ""
    if verdict.threshold is not None:
        reading = f"{READINGS[decided]} {verdict.threshold:g}"
        if decided == "inconclusive":
            reading += ": inconclusive"
    ks = shown_ks(trials.runs)
    return TrialFigures(
        interval=(f"{confidence:.0%} Wilson interval [{interval.low:.1%}, {interval.high:.1%}]"),
        reading=reading,
        flip_rate=flip_text(trials),
        ks=ks,
        pass_at=[f"{trials.pass_at(k):.3f}" for k in ks],
        pass_hat=[f"{trials.pass_hat(k):.3f}" for k in ks],
        verdict=decided,
    )


def flip_text(trials: Trials) -> str:
    """``0.25 (1 change in 5 runs)``; ``recorded runs`` when some runs are missing."""
    runs = "runs" if trials.recorded == trials.runs else "recorded runs"
    if trials.flip_rate is None:
        return f"n/a ({trials.recorded} {runs.replace('runs', 'run')})"
    changes = "change" if trials.flips == 1 else "changes"
    return f"{trials.flip_rate:.2f} ({trials.flips} {changes} in {trials.recorded} {runs})"


def text_lines(
    verdict: RunVerdict, indent: str = "    ", confidence: float = DEFAULT_CONFIDENCE
) -> list[str]:
    """The text report's lines under a repeated case's runs line (no newlines)."""
    shown = figures_of(verdict, confidence)
    head = shown.interval + (f" {shown.reading}" if shown.reading else "")
    width = max(len(value) for value in (*shown.pass_at, *map(str, shown.ks)))
    cells = [f"{k:>{width}}" for k in shown.ks]
    return [
        f"{indent}{head}",
        f"{indent}flip rate {shown.flip_rate}",
        f"{indent}{'k':<8}{'  '.join(cells)}",
        f"{indent}{'pass@k':<8}{'  '.join(f'{v:>{width}}' for v in shown.pass_at)}",
        f"{indent}{'pass^k':<8}{'  '.join(f'{v:>{width}}' for v in shown.pass_hat)}",
    ]


def by_k(ks: Iterable[int], values: Iterable[str]) -> str:
    """``k=1 0.800, k=2 0.600``: one cell of a table."""
    return ", ".join(f"k={k} {value}" for k, value in zip(ks, values, strict=True))


def junit_properties(verdict: RunVerdict) -> list[tuple[str, str]]:
    """``trials.{case}.{figure}``: the figures as JUnit properties of the test suite."""
    trials = verdict.trials
    interval = trials.interval()
    name = f"trials.{verdict.case_id}"
    found = [
        (f"{name}.runs", str(trials.runs)),
        (f"{name}.passed_runs", str(trials.passed)),
        (f"{name}.confidence", str(interval.confidence)),
        (f"{name}.interval_low", str(interval.low)),
        (f"{name}.interval_high", str(interval.high)),
        (f"{name}.verdict", trials.verdict(verdict.threshold)),
        (f"{name}.flip_rate", "" if trials.flip_rate is None else str(trials.flip_rate)),
    ]
    for k in shown_ks(trials.runs):
        found.append((f"{name}.pass_at_{k}", str(trials.pass_at(k))))
        found.append((f"{name}.pass_hat_{k}", str(trials.pass_hat(k))))
    return found


def repeated(verdicts: Iterable[RunVerdict]) -> list[RunVerdict]:
    """The verdicts of the cases that ask for repeated runs, in order."""
    return [verdict for verdict in verdicts if verdict.repeated]


__all__ = [
    "READINGS",
    "TrialFigures",
    "by_k",
    "figures_of",
    "flip_text",
    "junit_properties",
    "repeated",
    "text_lines",
]
