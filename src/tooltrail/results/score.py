"""The verdict every check and scorer returns: one slotted value, cheap to build by the million.

Layer 0 beside the model: a result row (``results.rows``) is made of scores, and reports,
events and the batch pass read them without knowing any check (``checks.score`` re-exports it
for the checks)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, SupportsIndex

#: Stands for an argument not given to ``Score(...)``.
_UNSET: Any = object()


@dataclass(slots=True, init=False)
class Score:
    """One check's verdict on one trace.

    ``name`` identifies the check on its case (``"required_tool:verify_identity"``); ``metric``
    is what reports roll up by (``"required_tool"``). ``span_ids`` are the span(s) of the
    call(s) that caused the verdict; an empty tuple means the verdict is about the whole trace.
    ``error`` names what went wrong (``"ConfigError"``, an exception type) when the scorer
    itself failed or was misconfigured: such a score never passes.

    agentic-evals' signature is accepted too (docs/judge.md, "agentic-evals and
    pytest-agent-eval code"): ``Score(name=, value=, passed=, explanation=)`` without
    ``metric`` rolls up under its ``name``, and ``metadata``, ``evaluator``,
    ``evaluator_type`` and ``evaluator_version`` are kept (in ``to_dict`` only when set, so
    reports of tooltrail's own checks are unchanged).
    """

    name: str
    metric: str
    value: float
    passed: bool
    explanation: str
    required: bool = True
    skipped: bool = False
    span_ids: tuple[str, ...] = ()
    error: str | None = None
    #: 1-based turn a per-turn check judged; ``None`` for checks over the whole trace.
    turn: int | None = None
    #: How a judge check's verdict was obtained (``JudgeOutcome.record()``: model, attempts,
    #: latency, tokens, cost, samples, agreement, cache); ``None`` for every other check.
    judge: dict[str, Any] | None = None
    #: Free-form facts a scorer adds (agentic-evals' ``Score.metadata``: a judge function's
    #: ``judge_status``, a rubric's ``verdict``); ``None`` when it adds none.
    metadata: dict[str, Any] | None = None
    #: What produced the score (agentic-evals' provenance: a registered evaluator's name,
    #: its kind such as ``llm_judge``, its declared version); empty for tooltrail's checks.
    evaluator: str = ""
    evaluator_type: str = ""
    evaluator_version: str | None = None

    def __init__(
        self,
        name: str,
        metric: str = "",
        value: float = _UNSET,
        passed: bool = _UNSET,
        explanation: str = _UNSET,
        required: bool = True,
        skipped: bool = False,
        span_ids: tuple[str, ...] = (),
        error: str | None = None,
        turn: int | None = None,
        judge: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        evaluator: str = "",
        evaluator_type: str = "",
        evaluator_version: str | None = None,
    ) -> None:
        # Written out rather than generated so that ``metric`` may be left out (it is then the
        # name, as in agentic-evals) while ``value``, ``passed`` and ``explanation`` stay
        # required; positional calls (``passing``, ``failing``, pickling) are as fast as the
        # generated ``__init__`` was.
        if value is _UNSET or passed is _UNSET or explanation is _UNSET:
            missing = [
                key
                for key, given in (
                    ("value", value),
                    ("passed", passed),
                    ("explanation", explanation),
                )
                if given is _UNSET
            ]
            raise TypeError(f"Score() missing required argument(s): {', '.join(missing)}")
        self.name = name
        self.metric = metric or name
        self.value = value
        self.passed = passed
        self.explanation = explanation
        self.required = required
        self.skipped = skipped
        self.span_ids = span_ids
        self.error = error
        self.turn = turn
        self.judge = judge
        self.metadata = metadata
        self.evaluator = evaluator
        self.evaluator_type = evaluator_type
        self.evaluator_version = evaluator_version

    @classmethod
    def skip(
        cls,
        name: str,
        explanation: str,
        *,
        metric: str = "",
        metadata: dict[str, Any] | None = None,
    ) -> Score:
        """A check that did not apply (agentic-evals' ``Score.skip``): never fails its case,
        and stays out of the metrics and the mean score."""
        return cls(
            name=name,
            metric=metric,
            value=0.0,
            passed=False,
            explanation=explanation,
            required=False,
            skipped=True,
            metadata=dict(metadata) if metadata else None,
        )

    @classmethod
    def passing(
        cls,
        name: str,
        metric: str,
        explanation: str,
        *,
        span_ids: tuple[str, ...] = (),
        required: bool = True,
        turn: int | None = None,
    ) -> Score:
        """A passed check (value 1.0)."""
        # Positional, in the order of the fields (name, metric, value, passed, explanation,
        # required, skipped, span_ids, error, turn): a keyword call of the dataclass's
        # ``__init__`` costs 0.5 us, a positional one 0.2 us, and every check of every trace
        # makes a score (a quarter of the checks' time; tests/checks/test_score_order.py).
        return cls(name, metric, 1.0, True, explanation, required, False, span_ids, None, turn)

    @classmethod
    def failing(
        cls,
        name: str,
        metric: str,
        explanation: str,
        *,
        span_ids: tuple[str, ...] = (),
        required: bool = True,
        error: str | None = None,
        turn: int | None = None,
    ) -> Score:
        """A failed check (value 0.0); ``error`` names what went wrong when the check could
        not judge (``"ConfigError"``)."""
        # Positional for speed, as in ``passing``.
        return cls(name, metric, 0.0, False, explanation, required, False, span_ids, error, turn)

    def __reduce_ex__(self, protocol: SupportsIndex) -> str | tuple[Any, ...]:
        """Pickled as its field values, rebuilt by one positional call. The default pickling
        of a slotted dataclass goes through a state dict per object; the batch pass pickles
        every score of every trace once to send it from a worker and once to spill it to
        disk, and unpickles it on each walk of the spilled rows: rebuilt by this call, a
        spilled block reads back in 30% less time than rows packed into tuples in Python
        (``benchmarks/bench_rows.py``). A score shared by rows stays one object: pickle
        writes a shared object once. A subclass (a custom scorer's) pickles as it always did.
        The agentic-evals fields are left out when they hold their defaults (as on every score
        of tooltrail's own checks), so a spilled row is no larger for them."""
        if self.__class__ is not Score or not _POSITIONAL:
            return object.__reduce_ex__(self, protocol)
        values = _values(self)
        if values[_OWN:] == _PEER_DEFAULTS:
            return Score, values[:_OWN]
        return Score, values

    @property
    def failed(self) -> bool:
        """Whether this score makes its case fail: required, not skipped and not passed."""
        return self.required and not self.skipped and not self.passed

    def to_dict(self) -> dict[str, object]:
        """The score as plain JSON-ready data (stable field names; ``judge`` only on a judge
        check's score, so reports of suites without judges are unchanged)."""
        data: dict[str, object] = {
            "name": self.name,
            "metric": self.metric,
            "value": self.value if math.isfinite(self.value) else None,
            "passed": self.passed,
            "explanation": self.explanation,
            "required": self.required,
            "skipped": self.skipped,
            "span_ids": list(self.span_ids),
            "error": self.error,
            "turn": self.turn,
        }
        if self.judge is not None:
            data["judge"] = self.judge
        if self.metadata:
            data["metadata"] = self.metadata
        if self.evaluator or self.evaluator_type or self.evaluator_version is not None:
            data["evaluator"] = self.evaluator
            data["evaluator_type"] = self.evaluator_type
            data["evaluator_version"] = self.evaluator_version
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Score:
        """Rebuild a score written by :meth:`to_dict`."""
        value = data.get("value")
        turn = data.get("turn")
        error = data.get("error")
        judge = data.get("judge")
        metadata = data.get("metadata")
        version = data.get("evaluator_version")
        return cls(
            name=str(data["name"]),
            metric=str(data["metric"]),
            value=float(value) if isinstance(value, (int, float)) else float("nan"),
            passed=bool(data["passed"]),
            explanation=str(data.get("explanation", "")),
            required=bool(data.get("required", True)),
            skipped=bool(data.get("skipped", False)),
            span_ids=tuple(str(s) for s in data.get("span_ids") or ()),
            error=str(error) if error is not None else None,
            turn=turn if isinstance(turn, int) else None,
            judge=dict(judge) if isinstance(judge, dict) else None,
            metadata=dict(metadata) if isinstance(metadata, dict) and metadata else None,
            evaluator=str(data.get("evaluator") or ""),
            evaluator_type=str(data.get("evaluator_type") or ""),
            evaluator_version=str(version) if version is not None else None,
        )


#: A score's field values in ``__init__``'s order, for ``Score.__reduce_ex__``; positional
#: rebuilding needs every field to be an ``__init__`` argument.
_values = attrgetter(*(f.name for f in fields(Score)))
_POSITIONAL = all(f.init for f in fields(Score))
#: The fields before agentic-evals' (``metadata`` on), and those fields' defaults.
_OWN = [f.name for f in fields(Score)].index("metadata")
_PEER_DEFAULTS = (None, "", "", None)
