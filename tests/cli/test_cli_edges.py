"""The CLI's edges: impossible configuration refused, exit codes that cannot pass on zero rows,
unreadable inputs, relative paths on a Dask cluster, a closed stdin, one error prefix."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fixtures import recorded_refund_case, suite_yaml
from test_batch_support import SEED_RUNS, jsonl, record, write

from tooltrail.checks.registry import Registry
from tooltrail.cli import main
from tooltrail.model import EvalSpan, EvalTrace
from tooltrail.report import render_text
from tooltrail.results import EvaluationSample
from tooltrail.score import evaluate_suite
from tooltrail.suite import SuiteError, TestSuite

#: Line 7 of its file is ``- {name: tool_call_precision, threshold: 1.0}``.
SUITE = suite_yaml(
    recorded_refund_case(
        "match", "required_tools", evaluators=[{"name": "tool_call_precision", "threshold": 1.0}]
    ),
    name="refund-agent",
)
#: The console script, from the venv running the tests.
TOOLTRAIL = str(Path(sys.executable).with_name("tooltrail"))


@pytest.fixture()
def suite(tmp_path: Path) -> str:
    path = tmp_path / "suite.yaml"
    path.write_text(SUITE)
    return str(path)


@pytest.fixture()
def correct_run(tmp_path: Path) -> str:
    """One run that passes SUITE."""
    return write(tmp_path / "ok.jsonl", jsonl(record(SEED_RUNS[:1])))


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["eval", "--workers", "1", "--quiet", *args])


def stderr_lines(result: Result | subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line]


# --- impossible configuration ----------------------------------------------------------------


@pytest.mark.parametrize("threshold", ["1.5", "-0.1", ".nan"])
def test_an_evaluator_threshold_outside_0_1_is_a_file_error_with_its_line_and_path(
    tmp_path: Path, correct_run: str, threshold: str
) -> None:
    path = tmp_path / "impossible.yaml"
    path.write_text(SUITE.replace("threshold: 1.0", f"threshold: {threshold}"))
    result = run(str(path), correct_run)
    assert result.exit_code == 2
    assert stderr_lines(result) == [
        f"tooltrail eval: {path}:7: cases[0].evaluators[0].threshold: must be between 0 and 1, "
        f"got {float(threshold.replace('.nan', 'nan'))!r}"
    ]


def test_a_threshold_outside_0_1_built_in_python_fails_its_case_with_the_reason() -> None:
    from tooltrail.suite import EvaluatorConfig, TestCase

    case = TestCase(
        id="c",
        required_tools=["a"],  # precision 1/1 = 1.0: no threshold above 1 is ever met
        evaluators=[EvaluatorConfig("tool_call_precision", threshold=1.5)],
    )
    trace = EvalTrace(trace_id="t", spans=[EvalSpan(tool_name="a", attributes={"tool_args": {}})])
    scores = Registry.with_builtins().run(case.evaluators[0], trace, case)
    assert [(s.passed, s.error) for s in scores] == [(False, "ConfigError")]
    assert "threshold must be between 0 and 1, not 1.5" in scores[0].explanation


def test_an_unknown_scorer_fails_its_case_alone_with_a_did_you_mean_in_the_report(
    tmp_path: Path,
) -> None:
    """Which scorers exist depends on the plug-ins where the suite runs: the suite loads, the
    case naming a scorer this registry lacks fails, with the nearest installed name."""
    path = tmp_path / "plugin.yaml"
    path.write_text(
        "name: s\ncases:\n"
        "  - id: uses-plugin\n    evaluators: [{name: refund_polcy}]\n"
        "  - id: plain\n    required_tools: [a]\n"
    )
    suite = TestSuite.load(path)
    plugins = Registry.with_builtins()
    plugins.register("refund_policy", lambda trace, case, config: [])
    trace = EvalTrace(trace_id="t", spans=[EvalSpan(tool_name="a", attributes={"tool_args": {}})])
    report = evaluate_suite(
        suite,
        [EvaluationSample("uses-plugin", trace=trace), EvaluationSample("plain", trace=trace)],
        registry=plugins,
    )
    assert [(r.case_id, r.passed) for r in report.cases] == [
        ("uses-plugin", False),
        ("plain", True),
    ]
    (score,) = report.cases[0].scores
    assert score.error == "ConfigError"
    assert "Unknown scorer 'refund_polcy' (did you mean 'refund_policy'?)" in score.explanation
    assert "did you mean 'refund_policy'?" in render_text(report)


# --- exit codes that cannot pass vacuously -----------------------------------------------------


def test_an_empty_file_exits_3_with_one_line(suite: str, tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.jsonl", b"")
    result = run(suite, empty)
    assert result.exit_code == 3
    assert stderr_lines(result) == [
        "tooltrail eval: no trace was evaluated (0 traces read, 0 unmatched); "
        "pass --allow-empty to accept this"
    ]


def test_an_empty_file_without_quiet_still_prints_one_line(suite: str, tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.jsonl", b"")
    result = CliRunner().invoke(main, ["eval", "--workers", "1", suite, empty])
    assert result.exit_code == 3
    assert len(stderr_lines(result)) == 1


def test_allow_empty_accepts_an_empty_input(suite: str, tmp_path: Path) -> None:
    empty = write(tmp_path / "empty.jsonl", b"")
    assert run(suite, empty, "--allow-empty").exit_code == 0


def test_traces_no_case_selects_exit_3(tmp_path: Path, correct_run: str) -> None:
    path = tmp_path / "other-agent.yaml"
    path.write_text(SUITE.replace("agent_name: refund-agent", "agent_name: billing-agent"))
    result = run(str(path), correct_run)
    assert result.exit_code == 3
    assert stderr_lines(result)[-1] == (
        "tooltrail eval: no trace was evaluated (1 traces read, 1 unmatched); "
        "pass --allow-empty to accept this"
    )
    assert run(str(path), correct_run, "--allow-empty").exit_code == 0


def test_an_evaluated_trace_still_exits_0(suite: str, correct_run: str) -> None:
    result = run(suite, correct_run)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""


@pytest.fixture()
def unlistable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A directory ``os.walk`` cannot list. The tests run as root, and root lists a chmod 000
    directory anyway, so listing it is made to fail the way it fails for another user: its
    ``os.scandir`` (what ``os.walk`` lists with) raises PermissionError. In-process only:
    the CLI runs in this process (``CliRunner``, ``--workers 1``)."""
    locked = tmp_path / "locked"
    locked.mkdir()
    write(locked / "runs.jsonl", jsonl(record(SEED_RUNS[:1])))
    real_scandir = os.scandir

    def scandir(path: str | os.PathLike[str] = ".") -> object:
        if os.fspath(path) == str(locked):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return locked


def test_an_unreadable_directory_is_a_skipped_input_named_on_stderr(
    suite: str, unlistable: Path
) -> None:
    result = run(suite, str(unlistable))
    assert result.exit_code == 3
    assert stderr_lines(result) == [  # one line: the reason names the directory
        "tooltrail eval: no trace was evaluated (0 traces read, 0 unmatched, 1 skipped): "
        f"{unlistable}: cannot list this directory (Permission denied): its files were skipped"
        "; pass --allow-empty to accept this",
    ]


def test_an_unreadable_subdirectory_skips_its_files_and_the_rest_is_evaluated(
    suite: str, unlistable: Path, tmp_path: Path
) -> None:
    write(tmp_path / "ok.jsonl", jsonl(record(SEED_RUNS[:1])))
    result = run(suite, str(tmp_path))
    assert result.exit_code == 3  # input skipped, nothing failed
    assert "1/1 runs passed" in result.stdout
    assert stderr_lines(result) == [
        f"{unlistable}: cannot list this directory (Permission denied): its files were skipped"
    ]


def test_convert_reports_an_unreadable_directory_as_skipped_input(unlistable: Path) -> None:
    result = CliRunner().invoke(main, ["convert", str(unlistable)])
    assert result.exit_code == 1  # convert's "some input skipped", not a usage error
    assert stderr_lines(result) == [
        f"{unlistable}: cannot list this directory (Permission denied): its files were skipped"
    ]


# --- --dask with relative paths ----------------------------------------------------------------


@pytest.fixture(scope="module")
def dask_cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """A real local Dask cluster whose worker process starts in another working directory, as
    workers on other machines do; listening on loopback only."""
    distributed = pytest.importorskip("distributed")
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    here = os.getcwd()
    os.chdir(elsewhere)
    try:
        cluster = distributed.LocalCluster(
            n_workers=1,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=None,
        )
    finally:
        os.chdir(here)
    with cluster:
        yield cluster


def test_dask_workers_elsewhere_read_relative_paths(
    dask_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    write(work / "runs.jsonl", jsonl(record(SEED_RUNS[:1])))
    (work / "suite.yaml").write_text(SUITE)
    monkeypatch.chdir(work)
    result = CliRunner().invoke(
        main,
        ["eval", "--quiet", "--dask", dask_cluster.scheduler_address, "suite.yaml", "runs.jsonl"],
    )
    assert result.exit_code == 0, result.stderr
    assert "1/1 runs passed" in result.stdout


def test_a_file_a_dask_worker_cannot_open_names_the_host_and_the_file(
    dask_cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver plans over a file the worker then cannot see (here: removed once planned)."""
    from tooltrail.batch import driver, run_batch

    runs = Path(write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS[:1]))))
    plan = driver.plan_chunks

    def plan_then_remove(*args, **kwargs):  # type: ignore[no-untyped-def]
        chunks = plan(*args, **kwargs)
        runs.unlink()
        return chunks

    monkeypatch.setattr(driver, "plan_chunks", plan_then_remove)
    result = run_batch(
        TestSuite.load(write(tmp_path / "s.yaml", SUITE.encode())),
        [str(runs)],
        dask_address=dask_cluster.scheduler_address,
    )
    assert [str(d) for d in result.diagnostics] == [
        f"{runs}: cannot open on host {socket.gethostname()}: No such file or directory"
    ]


# --- a closed standard input -------------------------------------------------------------------


@pytest.mark.parametrize("command", ["eval SUITE -", "convert -"])
def test_a_closed_stdin_is_a_usage_error_not_a_traceback(suite: str, command: str) -> None:
    """``<&-`` closes fd 0 before tooltrail starts (``stdin=DEVNULL`` would be an open, empty
    stdin): Python then has no ``sys.stdin`` at all."""
    line = f"{TOOLTRAIL} {command.replace('SUITE', suite)} <&-"
    result = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2, result.stderr
    name = command.split()[0]
    assert stderr_lines(result) == [
        f"tooltrail {name}: standard input is closed: '-' has nothing to read"
    ]


# --- one error prefix, one gate option name ----------------------------------------------------


def test_a_suite_error_has_the_command_prefix(tmp_path: Path, correct_run: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("name: s\ncases: []\n")
    result = run(str(path), correct_run)
    assert result.exit_code == 2
    assert stderr_lines(result) == [
        f"tooltrail eval: {path}:2: cases: expected a non-empty list of cases"
    ]


@pytest.mark.parametrize(
    ("args", "prefix"),
    [
        (["eval", "--bogus"], "tooltrail eval: "),
        (["convert"], "tooltrail convert: "),
        (["serve", "--no-grpc", "--no-http"], "tooltrail serve: "),
        (["gate", "r.json"], "tooltrail gate: "),
    ],
)
def test_usage_errors_of_every_command_have_its_prefix(args: list[str], prefix: str) -> None:
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert stderr_lines(result)[-1].startswith(prefix), result.stderr
    assert "Error:" not in result.stderr


def test_the_gate_file_option_is_gate_in_eval_and_gate(tmp_path: Path, correct_run: str) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    gate = tmp_path / "gate.yaml"
    gate.write_text("max_failed_cases: 0\n")
    report = tmp_path / "report.json"
    made = run(str(suite), correct_run, "--format", "json", "--out", str(report))
    assert made.exit_code == 0, made.stderr
    for option in ("--gate", "--config"):  # --config: the old spelling, still accepted
        result = CliRunner().invoke(main, ["gate", str(report), option, str(gate)])
        assert (result.exit_code, result.stdout) == (0, "gate: PASS\n"), result.stderr
    help_text = CliRunner().invoke(main, ["gate", "--help"]).stdout
    assert "--gate FILE" in help_text and "--config" not in help_text


def test_a_gate_file_that_is_not_one_has_the_gate_prefix(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    report.write_text("{}")
    gate = tmp_path / "gate.yaml"
    gate.write_text("max_failed_cases: 0\n")
    result = CliRunner().invoke(main, ["gate", str(report), "--gate", str(gate)])
    assert result.exit_code == 2
    assert stderr_lines(result)[0].startswith(f"tooltrail gate: {report}: ")


def test_a_suite_error_is_raised_by_testsuite_load_too(tmp_path: Path) -> None:
    path = tmp_path / "impossible.yaml"
    path.write_text(SUITE.replace("threshold: 1.0", "threshold: 2"))
    with pytest.raises(SuiteError) as info:
        TestSuite.load(path)
    assert (info.value.line, info.value.key_path) == (7, "cases[0].evaluators[0].threshold")
