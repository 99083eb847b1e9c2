"""A check's ``sample:``: the share of production traces it judges, and what it samples by.

    evaluators:
      - {name: llm_judge, sample: 0.1, config: {rubric: task_completed}}
      - {name: tool_args_judge, sample: {rate: 0.25, by: tenant.id}, config: {...}}

A rate alone samples by trace (a conversation's traces together, ``tooltrail.sampling``);
``by`` names a trace attribute (a resource or root/agent span attribute) whose value picks
the traces of one key together: every trace of a sampled tenant, none of the others. This
module only reads and checks the value, the same way from a suite file (``suite.load``
turns a ``RuleError`` into file, line and key) and from Python; the decision is
``tooltrail.sampling``'s, which ``serve`` and live evaluation apply.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooltrail.hints import did_you_mean
from tooltrail.suite.argrules import RuleError

#: The keys of ``sample:`` written as a mapping.
SAMPLE_KEYS = ("rate", "by")


@dataclass(frozen=True, slots=True)
class Sample:
    """Judge ``rate`` of the traces (0 to 1), keyed by trace (``by`` unset) or by the value of
    the trace attribute ``by``."""

    rate: float
    by: str | None = None

    def __post_init__(self) -> None:
        problem = _rate_problem(self.rate)
        if problem is not None:
            raise RuleError(("rate",), problem)
        if self.by is not None and (not isinstance(self.by, str) or not self.by.strip()):
            raise RuleError(("by",), f"expected the name of a trace attribute, got {self.by!r}")

    def to_dict(self) -> float | dict[str, Any]:
        """The suite-file form: the rate alone, or ``{rate, by}``."""
        if self.by is None:
            return self.rate
        return {"rate": self.rate, "by": self.by}


def read_sample(value: Any) -> Sample:
    """``0.1`` or ``{rate: 0.1, by: tenant.id}`` as a ``Sample``; a ``Sample`` as it is.
    Raises ``RuleError`` naming the key under the value that is wrong."""
    if isinstance(value, Sample):
        return value
    if isinstance(value, Mapping):
        unknown = [key for key in value if key not in SAMPLE_KEYS]
        if unknown:
            key = unknown[0]
            raise RuleError(
                (key,),
                f"unknown key {key!r}: a sample has {', '.join(SAMPLE_KEYS)}"
                f"{did_you_mean(str(key), SAMPLE_KEYS)}",
            )
        if "rate" not in value:
            raise RuleError((), "missing key 'rate': the share of traces to judge, 0 to 1")
        by = value.get("by")
        return Sample(rate=_rate(value["rate"], ("rate",)), by=by)
    return Sample(rate=_rate(value, ()))


def _rate(value: Any, where: tuple[Any, ...]) -> float:
    problem = _rate_problem(value)
    if problem is not None:
        raise RuleError(where, problem)
    return float(value)


def _rate_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a share of traces from 0 to 1 (0.1 judges one in ten), got {value!r}"
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        return f"expected a share of traces from 0 to 1 (0.1 judges one in ten), got {value!r}"
    return None
