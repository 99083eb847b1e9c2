"""``tooltrail eval SUITE PATH...`` and ``tooltrail gate REPORT.json --gate FILE``.

``eval`` evaluates every trace of OTLP dumps against a suite's cases and prints a report;
``gate`` checks a report written earlier. Exit codes: 0 all cases pass (or the gate passes),
1 failures (or the gate failed), 2 usage or suite error, 3 input records were skipped and
nothing failed, or no trace was evaluated at all (an empty or unreadable input, or no trace
any case selects) unless ``--allow-empty``: a CI gate never passes on zero rows; 75 the gate
is inconclusive (a repeated case's interval straddles its threshold, nothing failed: rerun);
130 interrupted (SIGINT), with what was evaluated so far. Diagnostics
go to stderr as ``file:line: reason``; the report goes to stdout or ``--out``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import orjson

from tooltrail.batch import (
    BatchResult,
    DaskUnavailableError,
    InputError,
    UnmatchedTrace,
    run_batch,
)
from tooltrail.checks import default_registry
from tooltrail.checks.plugins import ENV_PLUGINS, load_plugins
from tooltrail.checks.reference import load_references, with_references
from tooltrail.checks.timelimit import DEFAULT_CHECK_TIMEOUT_S
from tooltrail.cli.error_lines import fail, standard_input
from tooltrail.cli.gates import gate_exit_code, load_gate, with_kappa_floor
from tooltrail.cli.judge_flags import judge_options, judge_overrides
from tooltrail.cli.progress import eval_progress, progress_wanted
from tooltrail.cli.report import FormatChoice, write_file_or_stdout, write_rich_report
from tooltrail.convert import read_traces
from tooltrail.gc_pause import gc_paused
from tooltrail.labels import LabelSet, read_labels
from tooltrail.otlp import Diagnostic
from tooltrail.report import Gate, GateResult
from tooltrail.report.text import write_text_summarizing
from tooltrail.results import EvaluationReport, ReportError, Summarizer, Summary
from tooltrail.score import check_judge, run_judge_settings
from tooltrail.settings import redaction_from_env
from tooltrail.suite import SuiteError, TestSuite

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement
    from tooltrail.report.trajectory import Trajectory

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_SKIPPED = 0, 1, 2, 3
#: Stopped by SIGINT (Ctrl-C): 128 + the signal's number, as a shell reports it.
EXIT_INTERRUPTED = 130
#: Diagnostics printed before the rest are only counted.
MAX_DIAGNOSTICS_SHOWN = 100


@click.command("eval")
@click.argument("suite_path", metavar="SUITE", type=click.Path(exists=True, dir_okay=False))
@click.argument("paths", metavar="PATH...", nargs=-1, required=True)
@click.option(
    "--group",
    type=click.Choice(["trace", "conversation"]),
    default="trace",
    show_default=True,
    help="Evaluate each trace, or each conversation (all its turns) as one trajectory.",
)
@click.option(
    "--format",
    "fmt",
    type=FormatChoice(),
    default="text",
    show_default=True,
    help="Report format (html: one self-contained page with the failing runs' timelines).",
)
@click.option("--out", type=click.Path(dir_okay=False), help="Write the report here, not stdout.")
@click.option(
    "--gate",
    "gate_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Gate file (min_pass_rate, min_metric_pass_rate, max_failed_cases, "
    "min_judge_kappa); default: the suite's gate keys.",
)
@click.option(
    "--labels",
    "labels_path",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="Human verdicts (CSV or JSON: trace_id or case_id, check, verdict, notes): every "
    "report adds each labelled check's agreement with them (accuracy, Cohen's kappa, the "
    "confusion matrix, the disagreeing runs).",
)
@click.option(
    "--min-judge-kappa",
    type=click.FloatRange(min=-1, max=1),
    metavar="KAPPA",
    help="Gate floor on Cohen's kappa of every labelled judge check (needs --labels); over "
    "the gate file's min_judge_kappa.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Local worker processes [default: all cores].",
)
@click.option(
    "--dask",
    "dask_address",
    metavar="ADDRESS",
    help="Run on this Dask scheduler (tcp://host:8786) instead of local processes.",
)
@click.option("--show-unmatched", is_flag=True, help="List the traces no case selected.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Exit 0 when no trace was evaluated (empty input, or no trace any case selects); "
    "without it that is exit 3.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no summary line.")
@click.option(
    "--trajectories/--no-trajectories",
    default=None,
    help="Read the input again for the trajectories of the failing rows and a sample of "
    "passing ones (arguments redacted), for html and json [default: on for html only].",
)
@click.option(
    "--chunk-mb",
    type=click.IntRange(min=1),
    help="Cut large uncompressed dumps into tasks of about this many megabytes "
    "[default: about four per worker, at most 32].",
)
@click.option(
    "--annotate",
    "annotate_path",
    metavar="OUT",
    type=click.Path(dir_okay=False),
    help="Write the scores as gen_ai.evaluation.result events to this OTLP logs file "
    "(explanations only with TOOLTRAIL_EVALUATION_EXPLANATIONS=true).",
)
@click.option(
    "--annotate-traces",
    "annotate_traces_path",
    metavar="OUT",
    type=click.Path(dir_okay=False),
    help="Write a copy of the evaluated traces with one tooltrail.evaluation span per case.",
)
@click.option(
    "--check-timeout",
    type=click.FloatRange(min=0, min_open=True),
    metavar="SECONDS",
    help="Time limit of each plug-in check; a check past it fails its case with an error "
    f"[default: the suite's check_timeout, else {DEFAULT_CHECK_TIMEOUT_S:g}].",
)
@click.option(
    "--reference",
    "reference_path",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="OTLP file of recorded good runs: each trace is the reference trajectory of the cases "
    "that would evaluate it (its tooltrail.case_id tag, or a case's match:), for "
    "trajectory_match; it replaces the case's own reference.",
)
@click.option(
    "--plugin",
    "plugins",
    metavar="MODULE",
    multiple=True,
    help=f"Import this module's TOOLTRAIL_CHECKS (name -> check), on top of installed "
    f"plug-ins (entry points 'tooltrail.checks') and {ENV_PLUGINS}. Repeatable.",
)
@judge_options
def eval_command(
    suite_path: str,
    paths: tuple[str, ...],
    group: str,
    fmt: str,
    out: str | None,
    gate_path: str | None,
    labels_path: str | None,
    min_judge_kappa: float | None,
    workers: int | None,
    dask_address: str | None,
    show_unmatched: bool,
    allow_empty: bool,
    quiet: bool,
    trajectories: bool | None,
    chunk_mb: int | None,
    annotate_path: str | None,
    annotate_traces_path: str | None,
    check_timeout: float | None,
    reference_path: str | None,
    plugins: tuple[str, ...],
    judge_model: str | None = None,
    judge_cache_path: Path | None = None,
    no_judge_cache: bool = False,
    judge_concurrency: int | None = None,
    judge_budget: float | None = None,
) -> None:
    """Evaluate the traces in OTLP dumps (files, directories, globs, - for stdin) against SUITE.

    A case with `match:` applies to every trace it selects; a case without applies to traces
    tagged with its id (tooltrail.case_id). Each (case, trace) evaluation is one report row.
    """
    # A suite, gate, labels file, plug-in or judge setting that cannot work is a
    # ``ConfigError``: the command line prints it as one line, exit 2 (``cli._Commands``).
    suite = TestSuite.load(suite_path)
    if check_timeout is not None:
        suite = suite.with_check_timeout(check_timeout)
    load_plugins(plugins)
    default_registry().check(suite)
    suite = load_references(suite)
    if reference_path is not None:
        suite = _with_reference(suite, reference_path, group)
    gate = with_kappa_floor(Gate.load(gate_path) if gate_path else suite.gate, min_judge_kappa)
    labels = read_labels(labels_path) if labels_path is not None else None
    judge = run_judge_settings(
        suite,
        judge_overrides(
            judge_model, judge_cache_path, no_judge_cache, judge_concurrency, judge_budget
        ),
    )
    if judge is not None:
        check_judge(judge)
    done = _Done()
    with _on_interrupt(done), ExitStack() as cleanup:
        with _stdin_spooled(paths) as (inputs, stdin_copy):
            try:
                wanted = progress_wanted(quiet)
                with eval_progress(inputs, enabled=wanted) as (on_progress, on_outcome):
                    batch = run_batch(
                        suite,
                        inputs,
                        group=group,  # type: ignore[arg-type]
                        workers=workers,
                        dask_address=dask_address,
                        chunk_bytes=chunk_mb << 20 if chunk_mb else None,
                        on_progress=done.counting(on_progress),
                        judge=judge,
                        on_outcome=on_outcome,
                    )
                cleanup.callback(batch.close)  # rows spilled to disk: removed however this ends
            except (InputError, DaskUnavailableError) as exc:
                fail("eval", str(exc))
            except OSError as exc:
                if dask_address:
                    fail("eval", f"cannot use the Dask scheduler at {dask_address}: {exc}")
                raise
            if annotate_path or annotate_traces_path:
                _annotate(suite, inputs, batch, group, annotate_path, annotate_traces_path)
            rich = fmt in ("html", "json")
            wanted = fmt == "html" if trajectories is None else trajectories
            found = _trajectories(inputs, batch, group) if rich and wanted else None
        # The summary and the report walk every row (read back from disk past ``spill_rows``)
        # and make no reference cycles: with the collector on, it rescanned each block of
        # rows as it was read, a quarter of the report's CPU time (``gc_pause``).
        with gc_paused():
            agreement = _agreement(batch, labels)
            try:
                report, gate_result = _report(suite, batch, gate, fmt, out, found, agreement)
            except OSError as exc:
                fail("eval", f"cannot write the report to {out}: {exc.strerror or exc}")
        nothing = len(batch.results) == 0 and not allow_empty
        if not (nothing and len(batch.diagnostics) == 1):  # else the one line names it
            _print_diagnostics(batch.diagnostics, stdin_copy)
        _print_unmatched(batch.unmatched, show_unmatched)
        if agreement is not None and agreement.unmatched_count:
            click.echo(
                f"tooltrail eval: {agreement.unmatched_count} of {agreement.labels} labels in "
                f"{agreement.source} matched no score (the report lists them)",
                err=True,
            )
        if nothing:
            fail("eval", _nothing_evaluated(batch), EXIT_SKIPPED)
        if batch.group_count == 0:
            click.echo(f"tooltrail eval: warning: no traces found in {' '.join(paths)}", err=True)
        if gate_result is not None:
            _print_gate(gate_result)
        if not quiet:
            click.echo(_summary(batch), err=True)
        sys.exit(exit_code(report, gate_result, batch.diagnostics))


def _with_reference(suite: TestSuite, path: str, group: str) -> TestSuite:
    """``suite`` whose cases take their reference from the recorded traces of ``path``
    (``checks.reference.with_references``); a record that cannot be read, or a file with no
    trace, is a ``SuiteError``: a gate must not pass against half a reference."""
    diagnostics: list[Diagnostic] = []
    traces = list(read_traces(path, group=group, diagnostics=diagnostics, two_pass=False))  # type: ignore[arg-type]
    if diagnostics:
        raise SuiteError(f"reference {diagnostics[0]}")
    if not traces:
        raise SuiteError(f"reference {path} holds no trace")
    suite, notes = with_references(suite, traces, path)
    for note in notes:
        click.echo(f"tooltrail eval: {note}", err=True)
    return suite


@click.command("gate")
@click.argument("report_path", metavar="REPORT.json", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--gate",
    "gate_path",
    metavar="FILE",
    type=click.Path(exists=True, dir_okay=False),
    help="Gate file, or a suite file with gate keys (as for eval --gate).  [required]",
)
@click.option(  # the option's first name, kept working
    "--config", "config_path", hidden=True, type=click.Path(exists=True, dir_okay=False)
)
def gate_command(report_path: str, gate_path: str | None, config_path: str | None) -> None:
    """Check a JSON report made earlier (tooltrail eval --format json) against a gate."""
    if gate_path is not None and config_path is not None and gate_path != config_path:
        raise click.UsageError("--config is the old name of --gate: give one of them")
    gate_path = gate_path or config_path
    if gate_path is None:
        raise click.UsageError("Missing option '--gate'.")
    try:
        with open(report_path, "rb") as handle:
            data = orjson.loads(handle.read())
        report = EvaluationReport.from_dict(data)
    except (orjson.JSONDecodeError, ReportError) as exc:
        fail("gate", f"{report_path}: {exc}")
    try:
        gate = load_gate(gate_path)
    except SuiteError as exc:
        fail("gate", str(exc))
    from tooltrail.agreement import Agreement

    try:
        agreement = Agreement.from_dict(data["agreement"]) if "agreement" in data else None
    except ValueError as exc:
        fail("gate", f"{report_path}: agreement: {exc}")
    result = gate.check(report, agreement)
    click.echo(f"gate: {result.verdict}")
    for reason in result.reasons:
        click.echo(f"    {reason}")
    sys.exit(gate_exit_code(result, EXIT_OK, EXIT_FAILED))


def exit_code(
    report: EvaluationReport, gate: GateResult | None, diagnostics: Sequence[Diagnostic]
) -> int:
    """0 all pass (or the gate passes), 1 failures or gate failed, 75 the gate inconclusive,
    3 records skipped."""
    clean = EXIT_SKIPPED if diagnostics else EXIT_OK
    if gate is not None:
        return gate_exit_code(gate, clean, EXIT_FAILED)
    return EXIT_FAILED if not report.passed else clean


def _nothing_evaluated(batch: BatchResult) -> str:
    """The one line that says why an empty run is not a pass (naming the one input problem
    when there is exactly one, as for an unreadable directory)."""
    skipped = f", {len(batch.diagnostics)} skipped" if batch.diagnostics else ""
    because = f": {batch.diagnostics[0]}" if len(batch.diagnostics) == 1 else ""
    return (
        f"no trace was evaluated ({batch.group_count} traces read, {len(batch.unmatched)} "
        f"unmatched{skipped}){because}; pass --allow-empty to accept this"
    )


def _report(
    suite: TestSuite,
    batch: BatchResult,
    gate: Gate | None,
    fmt: str,
    out: str | None,
    trajectories: Mapping[int, Trajectory] | None,
    agreement: Agreement | None = None,
) -> tuple[EvaluationReport, GateResult | None]:
    """Write the report of ``batch`` in ``fmt``, with the agreement with labels when given;
    return it and the gate's verdict on it (and on the agreement).

    Each walk of rows read back from disk unpickles them again, so the summary is counted on
    the report's own walk where the format allows: the text report writes its rows before its
    roll-up (``write_text_summarizing``); the HTML page lists a bounded set of rows, found
    with the summary (``list_rows``) before the page is written. JSON, JUnit and Markdown open
    with the summary (JUnit: its counts): the summary's walk, then theirs."""
    cases = {case.id: case for case in suite.cases}
    if fmt == "text":
        summarizer = Summarizer(cases)
        longest = batch.longest_label()
        write_file_or_stdout(
            out,
            lambda sink: write_text_summarizing(
                batch.results, summarizer, longest, sink, agreement=agreement
            ),
        )
        report = _with_summary(suite, batch, summarizer.summary())
        return report, gate.check(report, agreement) if gate is not None else None
    if fmt == "html":
        from tooltrail.report.html import list_rows, write_html

        summarizer = Summarizer(cases)
        listing = list_rows(batch.results, trajectories=trajectories, summarizer=summarizer)
        report = _with_summary(suite, batch, summarizer.summary())
        verdict = gate.check(report, agreement) if gate is not None else None
        write_file_or_stdout(
            out,
            lambda sink: write_html(
                report,
                sink,
                trajectories=trajectories,
                gate=verdict,
                listing=listing,
                agreement=agreement,
            ),
        )
        return report, verdict
    report = EvaluationReport.from_results(suite, batch.results)
    gate_result = gate.check(report, agreement) if gate is not None else None
    write_rich_report(
        report, fmt, out, trajectories=trajectories, gate=gate_result, agreement=agreement
    )
    return report, gate_result


def _agreement(batch: BatchResult, labels: LabelSet | None) -> Agreement | None:
    """The rows' agreement with ``labels`` (one more walk over the rows, only with
    ``--labels``), the labels' notes redacted with the report's rules."""
    if labels is None:
        return None
    # Imported only with --labels: the agreement's module loads the judge checks' names.
    from tooltrail.agreement import measure

    return measure(batch.results, labels, redaction=redaction_from_env())


def _with_summary(suite: TestSuite, batch: BatchResult, summary: Summary) -> EvaluationReport:
    return EvaluationReport(
        suite_name=suite.name, suite_version=suite.version, cases=batch.results, summary=summary
    )


def _print_diagnostics(diagnostics: Sequence[Diagnostic], stdin_copy: str | None) -> None:
    for diagnostic in diagnostics[:MAX_DIAGNOSTICS_SHOWN]:
        text = str(diagnostic)
        if stdin_copy is not None:
            text = text.replace(stdin_copy, "-")
        click.echo(text, err=True)
    hidden = len(diagnostics) - MAX_DIAGNOSTICS_SHOWN
    if hidden > 0:
        click.echo(f"... and {hidden} more skipped records or values", err=True)


def _print_unmatched(unmatched: Sequence[UnmatchedTrace], show: bool) -> None:
    if not unmatched:
        return
    noun = "trace" if len(unmatched) == 1 else "traces"
    if not show:
        click.echo(
            f"{len(unmatched)} {noun} matched no case (--show-unmatched lists them)", err=True
        )
        return
    click.echo(f"{len(unmatched)} {noun} matched no case:", err=True)
    for trace in unmatched:
        click.echo(f"    {trace.describe()}", err=True)


def _print_gate(result: GateResult) -> None:
    click.echo(f"gate: {result.verdict}", err=True)
    for reason in result.reasons:
        click.echo(f"    {reason}", err=True)


def _summary(batch: BatchResult) -> str:
    rows = len(batch.results)
    text = (
        f"{batch.group_count} traces read ({batch.span_count} spans), {rows} rows evaluated, "
        f"{len(batch.unmatched)} unmatched, {len(batch.diagnostics)} skipped"
    )
    if batch.merged_count:
        text += f", {batch.merged_count} merged across files or chunks"
    if batch.reading_paths:  # which path decoded the input (docs/core-path.md)
        text += f"; read with {' and '.join(batch.reading_paths)}"
    return text


class _Done:
    """What the batch pass finished before an interrupt: counted from its progress calls."""

    def __init__(self) -> None:
        self.chunks = 0
        self.traces = 0
        self.spans = 0

    def counting(self, forward: Any) -> Callable[[int, int, int], None]:
        """A progress callback that counts, then calls ``forward`` (the progress bar)."""

        def update(groups: int, spans: int, read: int) -> None:
            self.chunks += 1
            self.traces += groups
            self.spans += spans
            if forward is not None:
                forward(groups, spans, read)

        return update

    def interrupted(self) -> str:
        return (
            f"interrupted (SIGINT) after {self.chunks} finished chunks: {self.traces} traces "
            f"read ({self.spans} spans) and evaluated; no complete report"
        )


@contextmanager
def _on_interrupt(done: _Done) -> Iterator[None]:
    """Ctrl-C anywhere in the run: one line saying what was done, exit 130, no traceback."""
    try:
        yield
    except KeyboardInterrupt:
        fail("eval", done.interrupted(), EXIT_INTERRUPTED)


@contextmanager
def _stdin_spooled(paths: Sequence[str]) -> Iterator[tuple[list[str], str | None]]:
    """``-`` becomes a temporary copy of stdin, so workers can read (and re-read) it."""
    if "-" not in paths:
        yield list(paths), None
        return
    stdin = standard_input("eval")
    fd, copy = tempfile.mkstemp(prefix="tooltrail-stdin-", suffix=".otlp")
    try:
        with os.fdopen(fd, "wb") as handle:
            shutil.copyfileobj(stdin, handle)
        yield [copy if p == "-" else p for p in paths], copy
    finally:
        os.unlink(copy)


def _annotate(
    suite: TestSuite,
    inputs: Sequence[str],
    batch: BatchResult,
    group: str,
    annotate_path: str | None,
    annotate_traces_path: str | None,
) -> None:
    """``--annotate`` / ``--annotate-traces``: scores written back next to their traces."""
    from tooltrail.annotate import annotate_run
    from tooltrail.origins import Origins
    from tooltrail.scores import explanations_from_env

    try:
        annotate_run(
            inputs,
            batch.results,
            annotate=annotate_path,
            annotate_traces=annotate_traces_path,
            group=group,
            suite=suite.name or None,
            explanations=explanations_from_env(),
            origins=Origins(suite),  # the provenance of every event (docs/scores.md)
        )
    except OSError as exc:
        fail("eval", f"cannot write annotations: {exc}")


def _trajectories(inputs: Sequence[str], batch: BatchResult, group: str) -> Any:
    """The trajectories a JSON or HTML report embeds (``tooltrail.report.trajectory``)."""
    from tooltrail.report.trajectory import collect_trajectories

    try:
        return collect_trajectories(inputs, batch.results, group=group)
    except OSError as exc:
        fail("eval", f"cannot read the input again for the trajectories: {exc}")
