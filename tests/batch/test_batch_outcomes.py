"""A task's outcome reads back from pickle (a process pool, Dask) exactly as it was."""

from __future__ import annotations

import dataclasses
import pickle
import pickletools
from pathlib import Path
from typing import Any

from fixtures import recorded_refund_case, refund_suite
from test_batch_support import SEED_RUNS, Run, jsonl, record, write

from tooltrail.batch import plan_chunks
from tooltrail.batch.outcomes import ChunkOutcome, GroupOutcome
from tooltrail.batch.tasks import ChunkTask, EvalSettings, evaluate_chunk
from tooltrail.checks import Score
from tooltrail.results import CaseResult

SUITE = refund_suite(
    recorded_refund_case(
        required_tool_order=None,
        evaluators=[
            {"name": "no_redundant_tool_calls", "threshold": 1.0},
            {"name": "max_tool_calls", "config": {"max": 4}, "required": False},
        ],
    ),
    {"id": "no-search", "match": {"agent_name": "refund-agent"}, "forbidden_tools": ["web_search"]},
)


class FlaggedScore(Score):
    """A custom scorer's own kind of score."""


class AnnotatedResult(CaseResult):
    """A row of a kind the transfer does not know."""


def _chunk_outcome(tmp_path: Path) -> ChunkOutcome:
    runs = record([*SEED_RUNS, Run("other", [("lookup_order", {})], agent="billing-agent")])
    lines = jsonl(runs) + b"{not json\n"
    (chunk,) = plan_chunks([write(tmp_path / "runs.jsonl", lines)])
    return evaluate_chunk(ChunkTask(EvalSettings(SUITE), chunk))


def _described(outcome: ChunkOutcome) -> list[Any]:
    """Every field of the outcome, each row and each score, as plain values."""
    return [
        outcome.chunk_index,
        outcome.diagnostics,
        outcome.span_count,
        outcome.byte_count,
        outcome.merged,
        [
            (
                g.key,
                g.trace_ids,
                g.position,
                g.extent,
                g.unmatched,
                [
                    (type(r), r.case_id, r.passed, r.trace_id, r.label)
                    + tuple((type(s), dataclasses.astuple(s)) for s in r.scores)
                    for r in g.results
                ],
            )
            for g in outcome.groups
        ],
    ]


def test_a_chunk_outcome_reads_back_from_pickle_as_it_was(tmp_path: Path) -> None:
    outcome = _chunk_outcome(tmp_path)
    assert outcome.diagnostics and any(g.unmatched for g in outcome.groups)  # all fields in use
    assert any(s.span_ids for g in outcome.groups for r in g.results for s in r.scores)
    assert _described(pickle.loads(pickle.dumps(outcome))) == _described(outcome)


def test_scores_shared_in_the_task_are_shared_in_the_driver(tmp_path: Path) -> None:
    outcome = pickle.loads(pickle.dumps(_chunk_outcome(tmp_path)))
    rows = [g.results[0] for g in outcome.groups if g.results and g.results[0].case_id == "refund"]
    contains = {id(row.scores[0]) for row in rows}  # contains:$49.99, about the whole trace
    assert len(rows) == 4 and len(contains) < len(rows)


def test_rows_and_scores_of_other_kinds_travel_as_they_are() -> None:
    flagged = FlaggedScore("custom", "custom", 0.5, False, "half", span_ids=("ab" * 8,))
    plain = Score("contains:x", "contains", 1.0, True, "ok")
    rows = [
        CaseResult("a", False, [plain, flagged], "t1", "a"),
        AnnotatedResult("b", True, [plain], "t2", "b"),
    ]
    outcome = ChunkOutcome(0, [GroupOutcome("t1", ("t1",), (0, 0), None, rows)], [], 2, 10)
    back = pickle.loads(pickle.dumps(outcome))
    assert _described(back) == _described(outcome)
    first, second = back.groups[0].results
    assert type(first.scores[1]) is FlaggedScore and type(second) is AnnotatedResult


def _opcodes(value: object) -> set[str]:
    return {op.name for op, _, _ in pickletools.genops(pickle.dumps(value, protocol=5))}


def test_rows_and_scores_pickle_as_their_values_without_a_state_dict(tmp_path: Path) -> None:
    """What a worker sends and the spill writes: each group, row and score is rebuilt by one
    call of its values (REDUCE), not made empty and filled from a state dict (BUILD), the
    slower way."""
    outcome = _chunk_outcome(tmp_path)
    groups = [g for g in outcome.groups if g.results]
    assert groups and _opcodes(groups) >= {"REDUCE"} and "BUILD" not in _opcodes(groups)
    judged = Score("judge:tone", "judge", float("nan"), False, "?", judge={"model": "m"})
    back = pickle.loads(pickle.dumps(judged))
    assert repr(back) == repr(judged) and "BUILD" not in _opcodes(judged)
