"""Benchmark: what ``tooltrail eval`` spends per trace after a trace is built, phase by phase.

The traces of a dump are read first with ``read_traces`` (not timed). Then, as the batch pass
does them, each timed in CPU seconds (the machine is shared: wall time measures the neighbours
too), the best of ``--repeat`` runs:

- ``checks``: ``suite.cases_for``, ``evaluate_cases`` with one task's ``CasePlans``, each row
  labelled and compacted (``RowCompactor``), as ``batch.tasks`` does per trace;
- ``spill``: the rows written to a ``RowSpill`` in outcomes of 1,000 groups, as the driver
  does with every outcome once past ``spill_rows``;
- ``read back``: the spilled rows read back in order (``SpilledRows``), once;
- ``text report``: the text report of those rows written to a file and their summary, in one
  walk, as ``tooltrail eval`` makes them (``write_text_summarizing``);
- ``summary``, ``json report`` (not in ``--callgrind``): for the other formats, the summary
  walks the rows first (``EvaluationReport.from_results``), then the report (another walk).

``--callgrind`` counts instructions instead, whatever the machine's load: a fresh process
per phase runs the phases up to and including it once, untimed (``--phase NAME``), under
``valgrind --tool=callgrind``; the difference between two counts is one phase's instructions.
Usage: ``python benchmarks/bench_rows.py DUMP SUITE [--repeat 3] [--callgrind]``.
"""

from __future__ import annotations

import argparse
import gc
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

from tooltrail.batch.compact import RowCompactor
from tooltrail.batch.matching import row_label
from tooltrail.batch.outcomes import GroupOutcome
from tooltrail.batch.spill import RowSpill, SpilledRows
from tooltrail.checks import default_registry
from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace
from tooltrail.report.json import write_json
from tooltrail.report.text import write_text_summarizing
from tooltrail.results import EvaluationReport, Summarizer
from tooltrail.score import CasePlans, evaluate_cases
from tooltrail.settings import redaction_from_env
from tooltrail.suite import TestSuite

PHASES = ("setup", "checks", "spill", "read back", "text report")
#: Groups per outcome handed to the spill (a chunk's worth).
OUTCOME_GROUPS = 1000


def evaluate(suite: TestSuite, traces: list[EvalTrace]) -> list[GroupOutcome]:
    """Each trace's rows, as ``batch.tasks._evaluate_groups_with`` makes them."""
    plans = CasePlans(default_registry())
    redaction = redaction_from_env()
    compactor = RowCompactor()
    outcomes = []
    for n, trace in enumerate(traces):
        outcome = GroupOutcome(trace.trace_id, (trace.trace_id,), (0, n))
        cases = suite.cases_for(trace)
        results = evaluate_cases(cases, trace, redaction=redaction, plans=plans)
        for case, result in zip(cases, results, strict=True):
            result.label = row_label(case, trace, suite)
            compactor.row(result)
        outcome.results = results
        outcomes.append(outcome)
    return outcomes


def spill(outcomes: list[GroupOutcome]) -> Any:
    """The rows through a ``RowSpill``, and back as ``SpilledRows`` (not yet read)."""
    rows = RowSpill()
    placed = []
    for at in range(0, len(outcomes), OUTCOME_GROUPS):
        placed.extend(rows.add(outcomes[at : at + OUTCOME_GROUPS]).placed(lambda key: True))
    return rows.rows(placed, [])


def text_report(suite: TestSuite, rows: SpilledRows) -> EvaluationReport:
    """The text report and the summary in one walk, as ``cli.eval`` makes them."""
    summarizer = Summarizer({case.id: case for case in suite.cases})
    with tempfile.TemporaryFile("w", encoding="utf-8") as out:
        write_text_summarizing(rows, summarizer, rows.longest_label, out)
    return EvaluationReport(suite.name, suite.version, rows, summarizer.summary())


def json_report(report: EvaluationReport) -> None:
    with tempfile.TemporaryFile("w", encoding="utf-8") as out:
        write_json(report, out)


def cpu(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The least CPU time of ``repeat`` runs of ``fn``, and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        gc.disable()  # as the batch pass runs (``gc_pause``)
        try:
            start = time.process_time()
            result = fn()
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
    return best, result


def instructions(dump: str, suite: str, phase: str) -> tuple[int, int]:
    """Instructions callgrind counts for a process running the phases up to ``phase``, and
    the number of traces it read."""
    with tempfile.TemporaryDirectory() as directory:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={directory}/cg.out"]
            + [sys.executable, __file__, dump, suite, "--phase", phase],
            capture_output=True,
            text=True,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"valgrind failed: {done.stderr[-2000:]}")
    return int(found.group(1)), int(done.stdout.split()[0])


def callgrind(dump: str, suite: str) -> None:
    """Instructions per trace of each phase (the difference of two fresh processes' counts)."""
    before, traces = instructions(dump, suite, PHASES[0])
    print(f"{traces} traces; instructions per trace of each phase (callgrind)")
    total = 0
    for phase in PHASES[1:]:
        count, _ = instructions(dump, suite, phase)
        total += count - before
        print(f"{phase:12s} {(count - before) / traces:12,.0f}")
        before = count
    print(f"{'total':12s} {total / traces:12,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump")
    parser.add_argument("suite")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--phase", choices=PHASES, help="run up to this phase once, untimed")
    parser.add_argument("--callgrind", action="store_true", help="count instructions instead")
    options = parser.parse_args()
    if options.callgrind:
        callgrind(options.dump, options.suite)
        return
    suite = TestSuite.load(options.suite)
    gc.disable()
    traces = list(read_traces(options.dump))
    gc.enable()
    repeat = 1 if options.phase else options.repeat
    steps: list[tuple[str, Callable[[Any], Any]]] = [
        ("checks", lambda _: evaluate(suite, traces)),
        ("spill", spill),
        ("read back", lambda rows: (rows, sum(1 for _ in rows))),
        ("text report", lambda done: text_report(suite, done[0])),
        ("summary", lambda report: EvaluationReport.from_results(suite, report.cases)),
        ("json report", json_report),
    ]
    last = PHASES.index(options.phase) if options.phase else len(steps)
    if options.phase:
        print(f"{len(traces)} traces; phases up to {options.phase}, once")
    else:
        print(f"{len(traces)} traces; CPU s per phase (best of {repeat})")
    value: Any = None
    total = 0.0
    for number, (name, step) in enumerate(steps, start=1):
        if number > last:
            break
        seconds, value = cpu(lambda step=step, value=value: step(value), repeat)
        total += seconds
        print(f"{name:12s} {seconds:7.3f} s {seconds / len(traces) * 1e6:8.2f} us/trace")
        if number == len(PHASES) - 1:  # a text report's run; then what the other formats add
            print(f"{'total':12s} {total:7.3f} s {total / len(traces) * 1e6:8.2f} us/trace")


if __name__ == "__main__":
    main()
