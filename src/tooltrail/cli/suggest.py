"""``tooltrail suggest PATH... [--run ID]... [--reference TRACE] [--out FILE]``: a draft suite
from recorded runs.

Reads the runs as ``tooltrail eval`` does and writes a suite file (YAML, on stdout or
``--out``) whose every rule each run keeps (``checks.suggest``), a comment on each saying how
many runs support it (``suite.draft``). The draft is read back with the strict suite loader
before it is written: a draft that loads is the only kind written.
Exit codes: 0 written, 1 written but some input records were skipped (reported on stderr
as ``file:line: reason``), 2 usage error (a path that names nothing, no run to learn from, a
``--run`` or ``--reference`` that names no input run, ``--out`` exists without ``--force``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

import click
import yaml

from tooltrail.checks.suggest import SuggestError, suggest_cases
from tooltrail.cli.error_lines import error_line, fail, standard_input
from tooltrail.convert import GROUPS, read_traces
from tooltrail.hints import did_you_mean
from tooltrail.model import EvalTrace
from tooltrail.otlp import Diagnostic, expand_paths
from tooltrail.suite import SuiteError, TestSuite
from tooltrail.suite.draft import render_draft

EXIT_OK, EXIT_SKIPPED, EXIT_USAGE = 0, 1, 2


@click.command("suggest")
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@click.option(
    "--run",
    "runs",
    metavar="ID",
    multiple=True,
    help="Learn only from this run: a trace id, or the tooltrail.case_id a run is tagged with. "
    "Repeatable [default: every run].",
)
@click.option(
    "--reference",
    metavar="TRACE",
    help="Also gate on this run's calls (its trace id): a reference trajectory for "
    "trajectory_match, in the strictest mode every run meets.",
)
@click.option(
    "--group",
    type=click.Choice(GROUPS),
    default="trace",
    show_default=True,
    help="A run is a trace, or a conversation (all its turns).",
)
@click.option("--name", default="suggested", show_default=True, help="The suite's name.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the suite here, not stdout.",
)
@click.option("--force", is_flag=True, help="Replace --out when it exists.")
def suggest_command(
    paths: Sequence[str],
    runs: tuple[str, ...],
    reference: str | None,
    group: str,
    name: str,
    out: Path | None,
    force: bool,
) -> None:
    """Write a draft suite from recorded runs: the rules every run keeps, each with a comment
    saying how many runs support it."""
    if out is not None and out.exists() and not force:
        fail("suggest", f"{out} exists; pass --force to replace it")
    missing: list[Diagnostic] = []
    for _ in expand_paths([p for p in paths if p != "-"], missing, unreadable=[]):
        pass
    if missing:
        for diagnostic in missing:
            click.echo(error_line("suggest", str(diagnostic)), err=True)
        sys.exit(EXIT_USAGE)
    if "-" in paths:
        standard_input("suggest")
    diagnostics: list[Diagnostic] = []
    traces = list(read_traces(list(paths), group=group, diagnostics=diagnostics))  # type: ignore[arg-type]
    for diagnostic in diagnostics:
        click.echo(str(diagnostic), err=True)
    chosen = _chosen(traces, runs)
    from tooltrail.settings import redaction_from_env

    try:
        suggestion = suggest_cases(chosen, reference=reference, redaction=redaction_from_env())
    except SuggestError as exc:
        fail("suggest", str(exc))
    text = render_draft(
        suggestion.cases,
        name=name,
        runs=suggestion.runs,
        header=_header(suggestion.runs, len(traces), bool(runs), reference is not None),
    )
    try:
        TestSuite.from_dict(yaml.safe_load(text), source="the draft")
    except SuiteError as exc:  # a bug here, never the user's: say so, write nothing
        fail("suggest", f"the draft does not load ({exc}); please report this", 1)
    for note in dict.fromkeys(suggestion.notes):
        click.echo(f"tooltrail suggest: note: {note}", err=True)
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            fail("suggest", f"cannot write {out}: {exc.strerror or exc}")
        click.echo(
            f"tooltrail suggest: wrote {out}: {len(suggestion.cases)} case(s) from "
            f"{suggestion.runs} run(s); review it, then: tooltrail eval {out} PATH...",
            err=True,
        )
    sys.exit(EXIT_SKIPPED if diagnostics else EXIT_OK)


def _chosen(traces: list[EvalTrace], runs: Sequence[str]) -> list[EvalTrace]:
    """The runs ``--run`` names (by trace id or ``tooltrail.case_id`` tag), every run without
    it; a ``--run`` that names none is a usage error with a did-you-mean hint."""
    if not runs:
        return traces
    known = {t.trace_id for t in traces} | {
        str(t.metadata["case_id"]) for t in traces if t.metadata.get("case_id") is not None
    }
    for wanted in runs:
        if wanted not in known:
            fail("suggest", f"--run {wanted!r} names no input run{did_you_mean(wanted, known)}")
    wanted_set = set(runs)
    return [
        t
        for t in traces
        if t.trace_id in wanted_set or str(t.metadata.get("case_id")) in wanted_set
    ]


def _header(used: int, read: int, picked: bool, referenced: bool) -> list[str]:
    """The draft's opening comment: where it comes from and what to do with it."""
    runs = f"{used} recorded run{'' if used == 1 else 's'}"
    source = f"{runs} (of {read} read)" if picked else runs
    lines = [
        f"A draft suite from {source}, written by `tooltrail suggest`.",
        "Every rule holds for every run it was learnt from; each comment says how many.",
        "Review it before you gate on it: a rule seen in few runs may be chance, and what",
        "no run did wrong (a tool that must never run, a budget) cannot be seen here.",
    ]
    if referenced:
        lines.append("trajectory_match compares each run with the reference run's calls.")
    return lines
