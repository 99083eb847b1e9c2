"""Repeated trials of one case: how reliable is an agent that passed ``c`` of ``n`` runs?

A single run is a sample. A case run ``n`` times (``runs: N``, the pytest plugin's
``runs=``, or the several traces a dump holds of one case) gives its pass count ``c`` and the
order of its outcomes, and from them, all worked out here in one place for every path (the
summary, the gate, the reports, the pytest plugin):

- ``pass@k = 1 - C(n - c, k) / C(n, k)``: the chance that at least one of ``k`` runs drawn
  from the ``n`` passes (Chen et al. 2021, the unbiased estimator);
- ``pass^k = C(c, k) / C(n, k)``: the chance that all ``k`` pass (τ-bench, Yao et al. 2024),
  the measure of an agent that must work every time;
- the flip rate: how often the outcome changed between consecutive recorded runs, ``flips /
  (recorded - 1)`` (the flaky-test measure of Apple's "Modeling and Ranking Flaky Tests");
- the Wilson score interval of the pass rate at a confidence (default 95%), and the verdict it
  gives at a threshold: ``inconclusive`` when the threshold lies strictly inside the interval,
  else the plain verdict ``c / n >= threshold`` (exact arithmetic).

Both estimators are computed exactly (integer binomials, a ``Fraction``) and only then made a
float, so a test can compare them with values worked out by hand. No I/O, nothing of tooltrail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist
from typing import Literal

#: The Wilson interval's confidence when none is given (a gate's ``confidence`` sets its own).
DEFAULT_CONFIDENCE = 0.95

#: ``k`` shown in the human-readable reports: every ``k`` up to this, then powers of two, and
#: ``n`` itself (the JSON report lists every ``k`` from 1 to ``n``).
SHOWN_EVERY_K_UP_TO = 8

Verdict = Literal["pass", "fail", "inconclusive"]


def meets(passed: int, total: int, floor: float) -> bool:
    """``passed / total >= floor`` exactly (a rate equal to its floor passes; no float drift).

    The one comparison of a count with a floor: the gate's floors, a case's runs threshold."""
    if total <= 0:
        return False
    return Fraction(passed, total) >= Fraction(repr(float(floor)))


def check_confidence(confidence: float) -> float:
    """``confidence`` as a float, if it lies strictly between 0 and 1; else ``ValueError``."""
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)):
        raise ValueError(f"confidence must be a number between 0 and 1, not {confidence!r}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie strictly between 0 and 1, not {confidence!r}")
    return float(confidence)


def z_score(confidence: float) -> float:
    """The standard normal quantile of a two-sided ``confidence`` (1.959964 for 95%)."""
    return NormalDist().inv_cdf(1 - (1 - check_confidence(confidence)) / 2)


@dataclass(frozen=True, slots=True)
class Interval:
    """A Wilson score interval of a pass rate, at ``confidence``."""

    low: float
    high: float
    confidence: float

    def straddles(self, threshold: float) -> bool:
        """Whether ``threshold`` lies strictly inside: the runs cannot tell which side the
        agent's true pass rate is on."""
        return self.low < threshold < self.high


def wilson_interval(passed: int, runs: int, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
    """The Wilson score interval of ``passed / runs``:
    ``(p + z²/2n ± z·sqrt(p(1 - p)/n + z²/4n²)) / (1 + z²/n)``, ``p = passed / runs``.

    Its ends are exactly 0 when no run passed and exactly 1 when every run did (where the
    formula gives them up to rounding)."""
    if runs <= 0 or not 0 <= passed <= runs:
        raise ValueError(f"an interval needs 0 <= passed <= runs and runs > 0, got {passed}/{runs}")
    z = z_score(confidence)
    p = passed / runs
    z2 = z * z
    scale = 1 + z2 / runs
    centre = (p + z2 / (2 * runs)) / scale
    half = z * math.sqrt(p * (1 - p) / runs + z2 / (4 * runs * runs)) / scale
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == runs else min(1.0, centre + half)
    return Interval(low=low, high=high, confidence=float(confidence))


def pass_at_k(passed: int, runs: int, k: int) -> float:
    """``1 - C(n - c, k) / C(n, k)``: the chance that some of ``k`` runs passes."""
    _check_k(passed, runs, k)
    return float(1 - Fraction(math.comb(runs - passed, k), math.comb(runs, k)))


def pass_hat_k(passed: int, runs: int, k: int) -> float:
    """``C(c, k) / C(n, k)``: the chance that all of ``k`` runs pass (τ-bench's pass^k)."""
    _check_k(passed, runs, k)
    return float(Fraction(math.comb(passed, k), math.comb(runs, k)))


def _check_k(passed: int, runs: int, k: int) -> None:
    if not 1 <= k <= runs or not 0 <= passed <= runs:
        raise ValueError(f"k must be between 1 and the runs ({runs}), got k={k}, passed={passed}")


def shown_ks(runs: int) -> list[int]:
    """The ``k`` a human-readable report shows: 1 to 8, then 16, 32, ... below ``runs``, and
    ``runs`` itself."""
    shown = list(range(1, min(runs, SHOWN_EVERY_K_UP_TO) + 1))
    k = SHOWN_EVERY_K_UP_TO * 2
    while k < runs:
        shown.append(k)
        k *= 2
    if runs > SHOWN_EVERY_K_UP_TO:
        shown.append(runs)
    return shown


def count_flips(outcomes: list[bool]) -> int:
    """How many times the outcome changed between consecutive runs."""
    return sum(1 for before, after in zip(outcomes, outcomes[1:], strict=False) if before != after)


@dataclass(frozen=True, slots=True)
class Trials:
    """The runs of one case: ``passed`` of ``runs`` (a run the case asks for and the input
    lacks counts as failed), and of the ``recorded`` runs, ``flips`` changes of outcome between
    consecutive ones, in run order."""

    runs: int
    passed: int
    recorded: int
    flips: int

    def pass_at(self, k: int) -> float:
        """pass@k of these runs (``pass_at_k``)."""
        return pass_at_k(self.passed, self.runs, k)

    def pass_hat(self, k: int) -> float:
        """pass^k of these runs (``pass_hat_k``)."""
        return pass_hat_k(self.passed, self.runs, k)

    @property
    def flip_rate(self) -> float | None:
        """``flips / (recorded - 1)``; ``None`` with fewer than two recorded runs."""
        if self.recorded < 2:
            return None
        return self.flips / (self.recorded - 1)

    def interval(self, confidence: float = DEFAULT_CONFIDENCE) -> Interval:
        """The Wilson interval of the pass rate (``wilson_interval``)."""
        return wilson_interval(self.passed, self.runs, confidence)

    def verdict(self, threshold: float | None, confidence: float = DEFAULT_CONFIDENCE) -> Verdict:
        """``inconclusive`` when the interval straddles ``threshold`` (``None``: every run must
        pass, a threshold of 1, which no interval straddles); else ``pass`` or ``fail`` as
        ``passed / runs >= threshold`` exactly."""
        floor = 1.0 if threshold is None else threshold
        if self.runs > 0 and self.interval(confidence).straddles(floor):
            return "inconclusive"
        return "pass" if meets(self.passed, self.runs, floor) else "fail"

    def to_dict(self, threshold: float | None, confidence: float = DEFAULT_CONFIDENCE) -> dict:
        """The figures as JSON-ready data: every ``k`` from 1 to ``runs``."""
        interval = self.interval(confidence)
        ks = range(1, self.runs + 1)
        return {
            "recorded": self.recorded,
            "flips": self.flips,
            "flip_rate": self.flip_rate,
            "confidence": interval.confidence,
            "interval": [interval.low, interval.high],
            "verdict": self.verdict(threshold, confidence),
            "pass_at_k": {str(k): self.pass_at(k) for k in ks},
            "pass_hat_k": {str(k): self.pass_hat(k) for k in ks},
        }


__all__ = [
    "DEFAULT_CONFIDENCE",
    "Interval",
    "Trials",
    "Verdict",
    "check_confidence",
    "count_flips",
    "meets",
    "pass_at_k",
    "pass_hat_k",
    "shown_ks",
    "wilson_interval",
    "z_score",
]
