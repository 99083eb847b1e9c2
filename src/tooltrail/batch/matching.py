"""How batch report rows are labelled, and what is kept of a trace no case selected.

Which cases apply is the suite's rule (``TestSuite.cases_for``): a case with ``match:`` is a
policy applied to every trace its selector picks; a case without ``match:`` applies to the
traces tagged with its id (``tooltrail.case_id``). A trace no case selects is not evaluated;
the batch pass counts and lists it instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from tooltrail.model import EvalTrace
from tooltrail.suite import TestCase, TestSuite


@dataclass(frozen=True, slots=True)
class UnmatchedTrace:
    """A trace (or conversation) that no case selected, with what a user needs to find it."""

    key: str
    service_name: str | None = None
    root_span_name: str | None = None
    #: The ``tooltrail.case_id`` tag when it names no case of the suite.
    case_id: str | None = None

    def describe(self) -> str:
        parts = [self.key]
        if self.service_name:
            parts.append(f"service={self.service_name}")
        if self.root_span_name:
            parts.append(f"root={self.root_span_name}")
        if self.case_id:
            parts.append(f"case_id={self.case_id!r} (no such case)")
        return "  ".join(parts)


def unmatched(trace: EvalTrace) -> UnmatchedTrace:
    """The listing entry of a trace no case selected."""
    meta = trace.metadata
    tag = meta.get("case_id")
    return UnmatchedTrace(
        key=trace.trace_id,
        service_name=_str_or_none(meta.get("service.name")),
        root_span_name=_str_or_none(meta.get("root_span_name")),
        case_id=tag if isinstance(tag, str) else None,
    )


def row_label(case: TestCase, trace: EvalTrace, suite: TestSuite) -> str:
    """The label of one (case, trace) row.

    A tagged case labels its row with its id, as an offline test set does. A policy runs over
    many traces, so its rows are told apart by the trace: its ``tooltrail.case_id`` tag when it
    has one (a run name), else its trace id; followed by ``[policy id]`` when the suite has
    more than one case.
    """
    if case.match is None:
        return case.id
    tag = trace.metadata.get("case_id")
    name = tag if isinstance(tag, str) and tag else trace.trace_id
    return name if len(suite.cases) == 1 else f"{name} [{case.id}]"


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
