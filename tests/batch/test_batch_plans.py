"""A batch task compiles each case once (``score.CasePlans``) and forgets it with the task:
two suites run one after the other in one process, with a case of the same id and different
expectations, each get their own verdicts (a plan cached past its task, or by case id, would
give the second suite the first one's checks)."""

from __future__ import annotations

import itertools
from pathlib import Path

from test_batch_support import SEED_RUNS, Run, interleaved, prefixed_pb, record, write

from tooltrail.batch import run_batch
from tooltrail.suite import TestSuite


def suite_requiring(tool: str) -> TestSuite:
    return TestSuite.from_dict(
        {
            "name": "plans",
            "cases": [
                {"id": "policy", "match": {"agent_name": "refund-agent"}, "required_tools": [tool]}
            ],
        }
    )


def verdicts(result) -> set[tuple[str, bool]]:  # type: ignore[no-untyped-def]
    return {(s.name, s.passed) for row in result.results for s in row.scores}


def test_each_suite_gets_its_own_checks(tmp_path: Path) -> None:
    cycle = itertools.cycle(SEED_RUNS)
    runs = record(Run(f"run-{i}", next(cycle).calls) for i in range(12))
    dump = write(tmp_path / "runs.pb", prefixed_pb(interleaved(runs)))
    looked_up = run_batch(suite_requiring("lookup_order"), [dump], workers=1)
    invented = run_batch(suite_requiring("delete_account"), [dump], workers=1)
    assert len(looked_up.results) == len(invented.results) == 12
    assert verdicts(looked_up) == {("required_tool:lookup_order", True)}
    assert verdicts(invented) == {("required_tool:delete_account", False)}
