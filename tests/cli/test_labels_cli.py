"""``tooltrail eval --labels FILE`` and the gate on kappa: a labels file is read strictly (each
problem exit 2 with file, line and field, before any trace is read); ``min_judge_kappa`` (the
gate file, a suite's ``gate:``, ``--min-judge-kappa``) fails a run whose judge agrees less
with the labels than its floor; a sampled judge's self-agreement; the agreement read back from
a JSON report by ``tooltrail gate`` and ``tooltrail report``. The judge is the real OpenAI SDK
against the scripted loopback server (``labelled_runs``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import ROOT
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401
from labelled_runs import (
    CHECKS_SUITE,
    JUDGED_SUITE,
    LABELS_CSV,
    RUNS,
    judge_replies,
    run_eval,
)

from tooltrail.cli import main

ONE_RUN = str(RUNS[0].path)
CLI = [sys.executable, "-c", "from tooltrail.cli import main; main()"]


def eval_with_labels(labels: Path, *more: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(
        main, ["eval", str(CHECKS_SUITE), ONE_RUN, "--workers", "1", "--labels", str(labels), *more]
    )
    return result.exit_code, result.stdout, result.stderr


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "content", "error"),
    [
        (
            "a.csv",
            "trace_id,check,verdikt\nt1,c,pass\n",
            "{path}:1: column 3: unknown column 'verdikt' (did you mean 'verdict'?); the "
            "columns are trace_id, case_id, check, verdict, notes",
        ),
        ("a.csv", "trace_id,check,verdict\nt1,c,pass\nt2,c,yes\n",
         "{path}:3: verdict: expected pass or fail, got 'yes'"),
        ("a.csv", "trace_id,case_id,check,verdict\n,,c,pass\n",
         "{path}:2: trace_id: empty, and so is case_id: name the run the label is about"),
        ("a.csv", "trace_id,check,verdict\nt1,,fail\n",
         "{path}:2: check: empty: name the check (a score's name, as the report shows it)"),
        ("a.csv", "trace_id,check,verdict\nt1,c,pass,extra\n",
         "{path}:2: 4 cells, but the header names 3 columns"),
        ("a.csv", "trace_id,check,verdict\nt1,c,pass\n\nt1,c,fail\n",
         "{path}:4: a second label for trace t1 check c (the first is on line 2)"),
        ("a.csv", "check,verdict\nc,pass\n",
         "{path}:1: the header needs a 'trace_id' or a 'case_id' column (or both)"),
        ("a.csv", "trace_id,check\nt1,c\n", "{path}:1: the header has no 'verdict' column"),
        ("a.csv", "trace_id,check,verdict\n", "{path}: the file holds no label"),
        ("a.csv", "", "{path}:1: the file is empty: it needs a header line"),
        (
            "a.json",
            '[\n  {"trace_id": "t1", "check": "c", "verdict": "pass"},\n'
            '  {"trace_id": "t2", "check": "c", "verdit": "fail"}\n]\n',
            "{path}:3: [1].verdit: unknown key 'verdit' (did you mean 'verdict'?); allowed "
            "keys: trace_id, case_id, check, verdict, notes",
        ),
        (
            "a.json",
            '[\n  {"trace_id": "t1", "check": "c",\n   "verdict": "pass", "note": "x"}\n]\n',
            "{path}:3: [0].note: unknown key 'note' (did you mean 'notes'?); allowed keys: "
            "trace_id, case_id, check, verdict, notes",
        ),
        (
            "a.json",
            '[{"trace_id": "t1", "check": "c",\n  "verdict": 1}]\n',
            "{path}:2: [0].verdict: expected pass, fail, true or false, got 1",
        ),
        ("a.json", '{"labels": []}\n',
         '{path}:1: a JSON labels file is a list of labels ({{"trace_id": ..., ...}})'),
        ("a.json", "[\n  {\"trace_id\": \"t1\",}\n]\n", "{path}:2: invalid JSON: "),
        ("a.txt", "trace_id,check,verdict\n",
         "{path}: a labels file ends in .csv or .json, not '.txt'"),
    ],
)  # fmt: skip
def test_a_labels_file_that_cannot_be_used_is_exit_2_naming_file_line_and_field(
    tmp_path: Path, name: str, content: str, error: str
) -> None:
    path = write(tmp_path / name, content)
    code, stdout, stderr = eval_with_labels(path)
    assert code == 2
    assert stdout == ""  # nothing was evaluated
    assert stderr.startswith(f"tooltrail eval: {error.format(path=path)}"), stderr


def test_labels_of_checks_the_suite_lacks_are_named_on_stderr_and_in_the_report(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "labels.csv",
        f"trace_id,check,verdict\n{RUNS[0].trace_id},required_tool:verify_identty,pass\n",
    )
    code, stdout, stderr = eval_with_labels(path)
    assert code == 0
    assert f"tooltrail eval: 1 of 1 labels in {path} matched no score" in stderr
    assert (
        "    required_tool:verify_identty: 1 label (line 2): no score of the run has this name "
        "(did you mean 'required_tool:verify_identity'?)\n"
    ) in stdout


def gate_file(tmp_path: Path, text: str) -> Path:
    return write(tmp_path / "gate.yaml", text)


def test_a_kappa_below_the_floor_fails_the_gate_and_one_at_the_floor_passes(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    judge_server.script(*judge_replies())
    code, _, stderr = run_eval(
        judge_server, "--gate", str(gate_file(tmp_path, "min_judge_kappa: 0.8\n"))
    )
    assert code == 1
    assert stderr.splitlines()[-2:] == [
        "gate: FAIL",
        "    judge check 'refund_policy' kappa 0.750 over 48 labelled verdicts is below the "
        "minimum 0.800",
    ]
    judge_server.script(*judge_replies())
    code, _, stderr = run_eval(judge_server, "--min-judge-kappa", "0.75")  # equal: passes
    assert code == 0, stderr  # the gate alone decides: failing rows within its floors pass
    assert stderr.splitlines()[-1] == "gate: PASS"


def test_the_flag_lays_its_floor_over_the_gate_file_and_a_json_report_is_gated_later(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    gate = gate_file(tmp_path, "min_judge_kappa: 0.9\nmax_failed_cases: 100\n")
    judge_server.script(*judge_replies())
    report = tmp_path / "report.json"
    code, _, stderr = run_eval(
        judge_server, "--gate", str(gate), "--min-judge-kappa", "0.7", "--format", "json",
        "--out", str(report),
    )  # fmt: skip
    assert code == 0, stderr
    assert json.loads(report.read_text())["gate"] == {"passed": True, "reasons": []}
    later = subprocess.run(
        [*CLI, "gate", str(report), "--gate", str(gate)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert later.returncode == 1, later.stderr
    assert later.stdout.splitlines() == [
        "gate: FAIL",
        "    judge check 'refund_policy' kappa 0.750 over 48 labelled verdicts is below the "
        "minimum 0.900",
    ]
    shown = subprocess.run(
        [*CLI, "report", str(report), "--format", "text"],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert (
        "refund_policy (judge): 48 labelled verdicts; accuracy 87.5% (42/48), kappa 0.750"
    ) in shown.stdout


def test_a_floor_per_check_holds_deterministic_checks_to_the_labels_too(tmp_path: Path) -> None:
    gate = gate_file(
        tmp_path,
        "min_judge_kappa:\n  required_tool:verify_identity: 1.0\n"
        "  tool_arg_values:issue_refund: 0.6\n  refund_policy: 0.5\n",
    )
    code, _, stderr = run_eval(None, "--gate", str(gate), suite=CHECKS_SUITE)
    assert code == 1
    assert stderr.splitlines()[-3:] == [
        "gate: FAIL",
        f"    check 'refund_policy' is named in min_judge_kappa but no label in {LABELS_CSV} "
        "matched its scores",
        "    check 'tool_arg_values:issue_refund' kappa 0.571 over 48 labelled verdicts is below "
        "the minimum 0.600",
    ]


def test_a_kappa_floor_without_labels_or_without_a_labelled_judge_fails(tmp_path: Path) -> None:
    gate = gate_file(tmp_path, "min_judge_kappa: 0.5\n")
    code, _, stderr = run_eval(None, "--gate", str(gate), suite=CHECKS_SUITE, labels=None)
    assert code == 1
    assert stderr.splitlines()[-1] == (
        "    min_judge_kappa is set, but the run was not measured against labels (--labels)"
    )
    code, _, stderr = run_eval(None, "--gate", str(gate), suite=CHECKS_SUITE)
    assert code == 1
    assert stderr.splitlines()[-1] == (
        f"    min_judge_kappa is set, but no judge check has labels in {LABELS_CSV}"
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("min_judge_kappa: 1.5\n",
         "min_judge_kappa: a kappa floor is a number from -1 to 1, got 1.5"),
        ("min_judge_kappa: high\n", "min_judge_kappa: expected a number, got a string ('high')"),
        ("min_judge_kappa: {}\n",
         "min_judge_kappa: name at least one check, or give one number for every judge"),
        ("min_judge_kappa: {refund_policy: [1]}\n",
         "min_judge_kappa.refund_policy: expected a number, got a list"),
    ],
)  # fmt: skip
def test_a_bad_kappa_floor_is_a_gate_file_error(tmp_path: Path, text: str, error: str) -> None:
    gate = gate_file(tmp_path, text)
    result = CliRunner().invoke(
        main, ["eval", str(CHECKS_SUITE), ONE_RUN, "--workers", "1", "--gate", str(gate)]
    )
    assert result.exit_code == 2
    assert result.stderr.startswith(f"tooltrail eval: {gate}:1: {error}"), result.stderr


def test_a_sampled_judge_shows_its_self_agreement_beside_its_kappa(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    suite = write(
        tmp_path / "suite.yaml",
        JUDGED_SUITE.read_text().replace(
            "config: {rubric: policy_followed, name: refund_policy}",
            "config: {rubric: policy_followed, name: refund_policy, samples: 3}",
        ),
    )
    # every a_refund_ok run: two samples pass, the third fails (agreement 2/3); the rest agree
    judge_server.script(*judge_replies(samples=3, split=frozenset({"a_refund_ok"})))
    code, stdout, stderr = run_eval(judge_server, suite=suite)
    assert code == 1, stderr
    assert judge_server.count == 3 * 48
    lines = stdout.splitlines()
    at = lines.index(
        "refund_policy (judge): 48 labelled verdicts; accuracy 87.5% (42/48), kappa 0.750, true "
        "positive rate 91.7% (22/24), true negative rate 83.3% (20/24)"
    )
    # (40 * 1 + 8 * 2/3) / 48 = 17/18
    assert lines[at + 1] == "    self-agreement 0.944 over 48 judgements of 3 samples"
