"""A plug-in check and a judge check see, in ``tooltrail eval``'s batch pass, exactly the
``EvalTrace`` the object path reads for them: one test per kind (issue 38).

The reference is ``read_traces`` with the Python engine, read as the check's needs say
(content for both checks here). The batch pass runs with the compiled core when it is
installed, rows spilled and files cut into small chunks, so traces cut across chunks are
merged before a check sees them. A path that decides verdicts without building every trace
(the compact path) must still hand these checks the same objects.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from core_paths import HAVE_CORE, reading_with
from fixtures import CORPUS
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401

from tooltrail.batch import run_batch
from tooltrail.checks import default_registry
from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.score import Score
from tooltrail.convert import engine as core
from tooltrail.convert import read_traces
from tooltrail.score import CasePlans, evaluate_cases, judging, run_judge_settings
from tooltrail.suite import TestSuite

DUMPS = sorted(CORPUS.glob("*/*.otlp.*"))
#: What the plug-in check was handed, as text (every field; NaN equal to NaN).
SEEN: list[str] = []


@dataclass(frozen=True)
class RecordsItsTrace:
    """A plug-in check that notes the trace it is given (on traces recorded without their
    calls' content too: it does not say it reads the calls)."""

    reads_content: ClassVar[bool] = True
    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        SEEN.append(repr(ctx.trace))
        return Score.passing("records_its_trace", "records_its_trace", "Noted.")


def _batch(suite: TestSuite, path: Path, monkeypatch: pytest.MonkeyPatch, **options: object):
    which = core.CORE if HAVE_CORE else core.PYTHON
    with reading_with(monkeypatch, which):
        with run_batch(
            suite, [str(path)], workers=1, spill_rows=0, chunk_bytes=4096, **options
        ) as result:
            return list(result.results)


def test_the_corpus_is_there() -> None:
    assert len(DUMPS) >= 20


@pytest.mark.parametrize("path", DUMPS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_plug_in_check_sees_the_trace_read_traces_gives(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default_registry().register("records_its_trace", RecordsItsTrace, replace=True)
    suite = TestSuite.from_dict(
        {
            "name": "s",
            "cases": [{"id": "a", "match": "all", "evaluators": [{"name": "records_its_trace"}]}],
        }
    )
    with reading_with(monkeypatch, core.PYTHON):
        want = sorted(repr(trace) for trace in read_traces(path, content=True))
    SEEN.clear()
    rows = _batch(suite, path, monkeypatch)
    assert len(rows) == len(want) and all(row.passed for row in rows)
    assert sorted(SEEN) == want


JUDGED = {
    "id": "judged",
    "match": "all",
    "evaluators": [{"name": "trajectory_judge", "config": {"rubric": "task_completed"}}],
}


@pytest.mark.parametrize("path", DUMPS[::4], ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_judge_check_is_asked_about_the_trace_read_traces_gives(
    path: Path, monkeypatch: pytest.MonkeyPatch, judge_server: JudgeServer
) -> None:
    """The prompts the judge model receives are those the object path builds in memory from
    ``read_traces``' traces (the judge check's prompt holds the trajectory it was given)."""
    suite = TestSuite.from_dict(
        {
            "name": "s",
            "judge": {"model": "openai:gpt-test", "base_url": judge_server.openai_url},
            "cases": [JUDGED],
        }
    )
    settings = run_judge_settings(suite, {"cache": False})
    with reading_with(monkeypatch, core.PYTHON), judging(settings):
        plans = CasePlans()
        for trace in read_traces(path, content=True):
            evaluate_cases(suite.cases_for(trace), trace, plans=plans)
    want = sorted(received.prompt for received in judge_server.requests)
    assert want, "the object path asked the judge nothing"
    before = judge_server.count
    rows = _batch(suite, path, monkeypatch, judge=settings)
    got = sorted(received.prompt for received in judge_server.requests[before:])
    assert len(rows) == len(want)
    assert got == want
