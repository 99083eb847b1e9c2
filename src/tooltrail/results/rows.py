"""A result row: one (case, trace) evaluation's scores, and the recorded run it judged.

Layer 0 beside the model (``tooltrail.model``): whoever reads or writes rows (reports, events,
the batch pass's spill files, the pytest plugin) needs no check and no runner.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, SupportsIndex

from tooltrail.model import EvalTrace
from tooltrail.results.score import Score


@dataclass(slots=True)
class EvaluationSample:
    """One recorded run to judge: which case, the agent's reply, and its trace."""

    case_id: str
    output: str | None = None
    trace: EvalTrace | None = None
    #: Row label in reports; defaults to the case id (numbered when a case has several runs).
    label: str | None = None


@dataclass(slots=True)
class CaseResult:
    """One (case, trace) evaluation: a report row."""

    case_id: str
    passed: bool
    scores: list[Score]
    trace_id: str | None = None
    #: Row label shown in reports; defaults to ``case_id``.
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            self.label = self.case_id

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """Pickled as its field values, rebuilt by one positional call, as ``Score`` is (see
        ``Score.__reduce_ex__``: the batch pass pickles every row once or twice and reads
        spilled rows back on every walk). A subclass pickles as it always did."""
        if self.__class__ is not CaseResult:
            return object.__reduce_ex__(self, protocol)
        return CaseResult, _row_values(self)

    @property
    def failures(self) -> list[Score]:
        """The scores that make this row fail (``Score.failed``), in order."""
        return [s for s in self.scores if s.failed]

    def failure_messages(self) -> list[str]:
        """``"name: explanation"`` per failure; per-turn names start with ``turn{n}:``."""
        return [f"{s.name}: {s.explanation}" for s in self.failures]

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "label": self.label,
            "trace_id": self.trace_id,
            "passed": self.passed,
            "scores": [s.to_dict() for s in self.scores],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseResult:
        return cls(
            case_id=str(data["case_id"]),
            passed=bool(data["passed"]),
            scores=[Score.from_dict(s) for s in data.get("scores", [])],
            trace_id=data.get("trace_id"),
            label=str(data.get("label") or data["case_id"]),
        )


#: A row's field values in ``__init__``'s order (every field is an argument of it), for
#: ``CaseResult.__reduce_ex__``.
_row_values = attrgetter(*(f.name for f in fields(CaseResult)))
