"""``tooltrail eval`` and ``tooltrail gate``: exit codes, formats, gate, unmatched traces."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from fixtures import CORPUS, LOOKUP, REFUND, VERIFY, refund_case, suite_yaml
from test_batch_support import SEED_RUNS, Run, jsonl, record, write

from tooltrail.cli import main
from tooltrail.results import EvaluationReport

#: The refund policy for the recorded runs (agent ``refund-agent``).
SEED_SUITE = suite_yaml(
    refund_case(name=None, match={"agent_name": "refund-agent"}),
    name="refund-agent",
    version="1.0",
)


@pytest.fixture()
def seed(tmp_path: Path) -> tuple[str, str]:
    """The seed suite and the seed's four runs as an OTLP/JSON dump."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SEED_SUITE)
    return str(suite), write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS)))


@pytest.fixture()
def passing(tmp_path: Path) -> tuple[str, str]:
    """The seed suite and only the correct run."""
    suite = tmp_path / "suite.yaml"
    suite.write_text(SEED_SUITE)
    return str(suite), write(tmp_path / "ok.jsonl", jsonl(record(SEED_RUNS[:1])))


def run(*args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(main, ["eval", "--workers", "1", *args], input=input)


def test_every_case_passing_exits_0(passing: tuple[str, str]) -> None:
    result = run(*passing)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("correct                PASS\n")


def test_a_failing_case_exits_1(seed: tuple[str, str]) -> None:
    assert run(*seed).exit_code == 1


def test_a_corrupt_line_is_skipped_with_exit_3_and_the_rest_evaluated(
    passing: tuple[str, str], tmp_path: Path
) -> None:
    suite, dump = passing
    spans = record([Run("correct-2", [LOOKUP, VERIFY, REFUND])])
    good = Path(dump).read_bytes() + b'{"resourceSpans": [{"scopeSpans": [}\n' + jsonl(spans)
    dump = write(tmp_path / "with-garbage.jsonl", good)
    result = run(suite, dump)
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith(f"{dump}:2: ")
    assert [line.split()[0] for line in result.stdout.splitlines()[:2]] == ["correct", "correct-2"]


def test_skipped_records_with_a_failing_case_exit_1(seed: tuple[str, str], tmp_path: Path) -> None:
    suite, dump = seed
    broken = write(tmp_path / "broken.jsonl", Path(dump).read_bytes() + b"not json\n")
    result = run(suite, broken)
    assert result.exit_code == 1
    assert f"{broken}:5: " in result.stderr


def test_a_misspelled_suite_key_exits_2_naming_the_file(
    tmp_path: Path, seed: tuple[str, str]
) -> None:
    suite = tmp_path / "bad.yaml"
    suite.write_text(SEED_SUITE.replace("required_tools:", "required_tool:"))
    result = run(str(suite), seed[1])
    assert result.exit_code == 2
    assert str(suite) in result.stderr and "required_tool" in result.stderr


def test_an_input_path_that_names_nothing_exits_2(seed: tuple[str, str], tmp_path: Path) -> None:
    result = run(seed[0], str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2
    assert "nope.jsonl: no such file or directory" in result.stderr


def test_an_unknown_format_is_a_usage_error(seed: tuple[str, str]) -> None:
    assert run(*seed, "--format", "yaml").exit_code == 2


def test_text_report_ends_with_the_metric_table_and_the_pass_count(seed: tuple[str, str]) -> None:
    out = run(*seed).stdout
    assert out.endswith(
        "\n\ncontains                 8/8 passed\n"
        "no_redundant_tool_calls  3/4 passed\n"
        "required_tool            11/12 passed\n"
        "tool_arg_values          3/4 passed\n"
        "tool_call_precision      3/4 passed\n"
        "tool_order               3/4 passed\n"
        "\n"
        "1/4 runs passed\n"
    )


def test_json_report_reads_back_with_one_row_per_case_and_trace(seed: tuple[str, str]) -> None:
    report = EvaluationReport.from_dict(json.loads(run(*seed, "--format", "json").stdout))
    assert [(r.label, r.passed) for r in report.cases] == [
        ("correct", True),
        ("skipped-verification", False),
        ("wrong-amount", False),
        ("looping", False),
    ]
    assert all(len(r.trace_id or "") == 32 for r in report.cases)


def test_junit_report_parses_as_xml_with_a_testcase_per_row(seed: tuple[str, str]) -> None:
    root = ET.fromstring(run(*seed, "--format", "junit").stdout)
    cases = root.iter("testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert len(list(root.iter("testcase"))) == 4
    assert len(failed) == 3


def test_markdown_report_is_a_table_with_a_row_per_case(seed: tuple[str, str]) -> None:
    out = run(*seed, "--format", "markdown").stdout
    table = [line for line in out.splitlines() if line.startswith("|")]
    assert any("wrong-amount" in line and "FAIL" in line for line in table)
    assert any("correct" in line and "PASS" in line for line in table)


def test_out_writes_the_report_to_a_file_and_nothing_to_stdout(
    seed: tuple[str, str], tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    result = run(*seed, "--format", "json", "--out", str(out))
    assert result.stdout == ""
    assert json.loads(out.read_text())["summary"]["total_cases"] == 4


def test_unmatched_traces_are_counted_and_listed_on_request(
    tmp_path: Path, passing: tuple[str, str]
) -> None:
    suite, _ = passing
    other = record([Run("other", [LOOKUP], agent="billing-agent")], service="billing")
    dump = write(tmp_path / "mixed.jsonl", jsonl(record(SEED_RUNS[:1]) + other))
    quiet = run(suite, dump)
    assert quiet.exit_code == 0
    assert "1 trace matched no case (--show-unmatched lists them)" in quiet.stderr
    listed = run(suite, dump, "--show-unmatched")
    assert "service=billing" in listed.stderr and "root=invoke_agent billing-agent" in listed.stderr


def gate_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "gate.yaml"
    path.write_text(text)
    return str(path)


def test_a_passing_gate_exits_0_despite_failing_cases(
    seed: tuple[str, str], tmp_path: Path
) -> None:
    result = run(*seed, "--gate", gate_file(tmp_path, "min_pass_rate: 0.25\n"))
    assert result.exit_code == 0
    assert "gate: PASS" in result.stderr


def test_a_failing_gate_exits_1_even_when_every_case_passes(
    passing: tuple[str, str], tmp_path: Path
) -> None:
    gate = gate_file(tmp_path, "min_metric_pass_rate: {turn_count_threshold: 1.0}\n")
    result = run(*passing, "--gate", gate)
    assert result.exit_code == 1
    assert "metric 'turn_count_threshold' is named in the gate but absent" in result.stderr


def test_gate_keys_in_the_suite_file_apply(tmp_path: Path, seed: tuple[str, str]) -> None:
    suite = tmp_path / "gated.yaml"
    suite.write_text(SEED_SUITE + "gate:\n  max_failed_cases: 3\n")
    assert run(str(suite), seed[1]).exit_code == 0


def test_gate_command_checks_a_report_made_earlier(seed: tuple[str, str], tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    run(*seed, "--format", "json", "--out", str(report))
    runner = CliRunner()
    loose = runner.invoke(
        main, ["gate", str(report), "--config", gate_file(tmp_path, "min_pass_rate: 0.25\n")]
    )
    strict = runner.invoke(
        main, ["gate", str(report), "--config", gate_file(tmp_path, "max_failed_cases: 0\n")]
    )
    assert (loose.exit_code, strict.exit_code) == (0, 1)
    assert "3 failed cases exceed the maximum of 0" in strict.stdout


def test_gate_command_refuses_a_file_that_is_not_a_report(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"hello": 1}')
    gate = gate_file(tmp_path, "min_pass_rate: 1\n")
    result = CliRunner().invoke(main, ["gate", str(bogus), "--config", gate])
    assert result.exit_code == 2
    assert "schema_version" in result.stderr


def test_dash_reads_the_dump_from_stdin(passing: tuple[str, str]) -> None:
    suite, dump = passing
    result = run(suite, "-", input=Path(dump).read_bytes())
    assert result.exit_code == 0
    assert result.stdout.startswith("correct ")


def test_dask_without_distributed_installed_is_a_clear_usage_error(
    seed: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    result = run(*seed, "--dask", "tcp://127.0.0.1:8786", "--chunk-mb", "1")
    assert result.exit_code == 2
    assert "pip install 'tooltrail[dask]'" in result.stderr


def test_no_progress_bar_when_stderr_is_piped(seed: tuple[str, str]) -> None:
    result = run(*seed)
    assert "traces/s" not in result.stderr
    assert result.stderr.startswith("4 traces read")


def test_a_terminal_on_stderr_leaves_the_report_as_it_is(seed: tuple[str, str]) -> None:
    """The progress bar (bytes, with the counts: ``test_cli_eval_progress``) is drawn only for
    a run longer than a second; the report on stdout is the same either way."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.run(
        [sys.executable, "-c", "from tooltrail.cli import main; main()", "eval", *seed],
        stdout=subprocess.PIPE,
        stderr=follower,
        check=False,
        timeout=60,
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        seen += data
    os.close(leader)
    assert proc.returncode == 1
    assert b"traces/s" not in seen  # the bar counts bytes out of their total now
    assert proc.stdout.endswith(b"1/4 runs passed\n")


BOOKING_SUITE = """\
name: booking
cases:
  - id: booking
    match: all
    max_turns: 2
    turns:
      - user: Book a table at 10am.
        expect: {tool_calls_include: [create_booking]}
      - user: Make it 11am.
        expect: {tool_calls_include: [update_booking], tool_calls_exclude: [create_booking]}
"""


def test_group_conversation_applies_per_turn_expectations_to_whole_conversations(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "booking.yaml"
    suite.write_text(BOOKING_SUITE)
    folder = CORPUS / "google-adk"
    ok = run(
        str(suite), str(folder / "e_booking_multiturn_ok.otlp.jsonl"), "--group", "conversation"
    )
    bad = run(
        str(suite), str(folder / "e_booking_multiturn_bad.otlp.jsonl"), "--group", "conversation"
    )
    assert ok.exit_code == 0, ok.output
    assert bad.exit_code == 1
    assert "1/1 runs passed" in ok.stdout and "0/1 runs passed" in bad.stdout
    assert "turn2:" in bad.stdout and "Forbidden tool 'create_booking' was called" in bad.stdout


def test_a_gate_file_with_a_typo_is_a_usage_error_naming_the_key(
    seed: tuple[str, str], tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    run(*seed, "--format", "json", "--out", str(report))
    gate = gate_file(tmp_path, "min_pass_rat: 0.5\n")
    result = CliRunner().invoke(main, ["gate", str(report), "--config", gate])
    assert result.exit_code == 2
    assert "min_pass_rat" in result.stderr and "min_pass_rate" in result.stderr


def test_a_gate_section_of_a_suite_file_works_as_the_gate_config(
    seed: tuple[str, str], tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    run(*seed, "--format", "json", "--out", str(report))
    suite = tmp_path / "gated.yaml"
    suite.write_text(SEED_SUITE + "gate:\n  max_failed_cases: 2\n")
    result = CliRunner().invoke(main, ["gate", str(report), "--config", str(suite)])
    assert result.exit_code == 1
    assert "3 failed cases exceed the maximum of 2" in result.stdout


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """The seed suite and 160 runs: JSON and JUnit reports take more than one 64 KB write."""
    directory = tmp_path_factory.mktemp("many")
    suite = directory / "suite.yaml"
    suite.write_text(SEED_SUITE)
    runs = [Run(f"{r.name}-{n}", r.calls) for n in range(40) for r in SEED_RUNS]
    return str(suite), write(directory / "runs.jsonl", jsonl(record(runs)))


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "markdown"])
def test_every_format_streams_the_renderers_text_byte_for_byte(
    many_runs: tuple[str, str], fmt: str, tmp_path: Path
) -> None:
    from tooltrail.batch import run_batch
    from tooltrail.report import render_json, render_junit, render_markdown, render_text
    from tooltrail.suite import TestSuite

    suite_path, dump = many_runs
    suite = TestSuite.load(suite_path)
    report = EvaluationReport.from_results(suite, run_batch(suite, [dump], workers=1).results)
    render = {
        "text": render_text,
        "json": render_json,
        "junit": render_junit,
        "markdown": render_markdown,
    }[fmt]
    expected = render(report)
    assert len(expected) > 1 << 16 or fmt in ("text", "markdown")
    assert run(suite_path, dump, "--format", fmt).stdout == expected
    out = tmp_path / f"report.{fmt}"
    run(suite_path, dump, "--format", fmt, "--out", str(out))
    assert out.read_bytes() == expected.encode()
