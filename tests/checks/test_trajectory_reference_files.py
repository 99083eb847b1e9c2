"""Reference trajectories in suite files and on the command line: strict validation (file,
line, key path) and ``tooltrail eval --reference FILE`` end to end."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from test_trajectory_reference import CaseFold

from tooltrail.checks import Registry, default_registry
from tooltrail.cli import main
from tooltrail.suite import SuiteError, TestSuite

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund"
REFERENCE = REFUND.parent / "reference"
GOLDEN_ID = "55da56e89fc4b19f37a5448ebf293b63"


def suite_file(tmp_path: Path, case_lines: str) -> Path:
    shutil.copy(REFERENCE / "golden.otlp.jsonl", tmp_path / "golden.otlp.jsonl")
    path = tmp_path / "suite.yaml"
    path.write_text("name: s\ncases:\n  - id: refund\n    match: all\n" + case_lines, "utf-8")
    return path


def load_error(tmp_path: Path, case_lines: str) -> str:
    path = suite_file(tmp_path, case_lines)
    with pytest.raises(SuiteError) as caught:
        suite = TestSuite.load(path)
        default_registry().check(suite)
    return str(caught.value).replace(str(path), "suite.yaml")


EVALUATOR = "    evaluators: [trajectory_match]\n"


def test_an_inline_reference_loads_calls_with_and_without_arguments(tmp_path: Path) -> None:
    suite = TestSuite.load(
        suite_file(
            tmp_path,
            "    reference:\n"
            "      calls:\n"
            "        - lookup_order\n"
            "        - {tool: issue_refund, args: {order_id: ORD-7731, amount: 49.99}}\n"
            + EVALUATOR,
        )
    )
    reference = suite.cases[0].reference
    assert reference is not None and reference.calls is not None
    assert [(c.name, c.args) for c in reference.calls] == [
        ("lookup_order", None),
        ("issue_refund", {"order_id": "ORD-7731", "amount": 49.99}),
    ]


def test_a_comparator_config_key_it_does_not_read_is_an_error(tmp_path: Path) -> None:
    registry = Registry.with_builtins()
    registry.register("casefold", CaseFold)
    path = suite_file(
        tmp_path,
        "    reference: {calls: [a]}\n"
        "    evaluators:\n"
        "      - name: trajectory_match\n"
        "        config:\n"
        "          tool_args:\n"
        "            a: {check: casefold, config: {kye: city}}\n",
    )
    with pytest.raises(SuiteError) as caught:
        registry.check(TestSuite.load(path))
    assert str(caught.value) == (
        f"{path}:10: cases[0].evaluators[0].config.tool_args.a.config.kye: unknown config key "
        "'kye' for comparator 'casefold' (did you mean 'key'?); it reads ['key']"
    )


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        (
            "    reference: {calls: [a], trace: x}\n",
            "suite.yaml:5: cases[0].reference.trace: unknown key 'trace' (did you mean "
            "'trace_id'?); allowed keys: calls, file, trace_id",
        ),
        (
            "    reference: {calls: [a], file: golden.otlp.jsonl}\n",
            "suite.yaml:5: cases[0].reference.file: a reference has `calls` or a `file` and "
            "`trace_id`",
        ),
        (
            "    reference: {file: golden.otlp.jsonl}\n",
            "suite.yaml:5: cases[0].reference: missing key 'trace_id': a reference has "
            "`calls`, or a `file` and a `trace_id`",
        ),
        (
            "    reference:\n      file: nowhere.jsonl\n      trace_id: abc\n",
            "suite.yaml:6: cases[0].reference.file: reference file not found: {dir}/nowhere.jsonl",
        ),
        (
            "    reference:\n      calls:\n        - 5\n",
            "suite.yaml:7: cases[0].reference.calls[0]: expected a {tool, args} mapping, got "
            "int (5)",
        ),
        (
            "    reference:\n      calls:\n        - {tool: a, args: [1]}\n",
            "suite.yaml:7: cases[0].reference.calls[0].args: expected a mapping of argument "
            "values, got a list",
        ),
        (
            "    reference: {calls: [a]}\n"
            "    evaluators:\n"
            "      - name: trajectory_match\n"
            "        config: {mode: stric}\n",
            "suite.yaml:8: cases[0].evaluators[0].config.mode: must be one of exact, in_order, "
            "any_order, strict, unordered, subset, superset, not 'stric' (did you mean "
            "'strict'?)",
        ),
        (
            "    reference: {calls: [a]}\n"
            "    evaluators:\n"
            "      - name: trajectory_match\n"
            "        config:\n"
            "          args: exactly\n",
            "suite.yaml:9: cases[0].evaluators[0].config.args: must be one of exact, ignore, "
            "subset, superset, not 'exactly' (did you mean 'exact'?)",
        ),
        (
            "    reference: {calls: [a]}\n"
            "    evaluators:\n"
            "      - name: trajectory_match\n"
            "        config:\n"
            "          tool_args:\n"
            "            a: loose\n",
            "suite.yaml:10: cases[0].evaluators[0].config.tool_args.a: must be one of exact, "
            "ignore, subset, superset or {check: NAME}, not 'loose'",
        ),
        (
            "    reference: {calls: [a]}\n"
            "    evaluators:\n"
            "      - name: trajectory_match\n"
            "        config:\n"
            "          tool_args:\n"
            "            a: {check: no_such_comparator}\n",
            "suite.yaml:10: cases[0].evaluators[0].config.tool_args.a.check: no registered "
            "check 'no_such_comparator'",
        ),
        (
            "    reference: {calls: [a]}\n"
            "    evaluators:\n"
            "      - name: trajectory_match\n"
            "        config:\n"
            "          tool_args:\n"
            "            a: {check: tool_call_recall}\n",
            "suite.yaml:10: cases[0].evaluators[0].config.tool_args.a.check: check "
            "'tool_call_recall' is not an argument comparator: it has no compare_args(tool, "
            "reference, actual) method",
        ),
        (
            "    reference: {calls: [a]}\n"
            "    evaluators:\n"
            "      - name: trajectory_match\n"
            "        config:\n"
            "          tool_args:\n"
            "            a: {check: x, options: {}}\n",
            "suite.yaml:10: cases[0].evaluators[0].config.tool_args.a.options: unknown key "
            "'options'; allowed keys: check, config",
        ),
    ],
)
def test_bad_reference_input_names_file_line_and_key(
    tmp_path: Path, lines: str, error: str
) -> None:
    if "evaluators" not in lines:
        lines += EVALUATOR
    assert load_error(tmp_path, lines) == error.replace("{dir}", str(tmp_path))


def eval_cli(*args: str) -> Result:
    return CliRunner().invoke(main, ["eval", "--workers", "1", *args])


def reference_suite(tmp_path: Path) -> Path:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\n"
        "cases:\n"
        "  - id: refund\n"
        "    match: {agent_name: refund_agent}\n"
        "    evaluators:\n"
        "      - name: trajectory_match\n"
        "        config: {mode: strict, tool_args: {verify_identity: ignore}}\n",
        "utf-8",
    )
    return path


def test_eval_reference_gates_runs_against_a_recorded_good_run(tmp_path: Path) -> None:
    result = eval_cli(
        str(reference_suite(tmp_path)),
        str(REFUND / "runs.otlp.jsonl"),
        "--reference",
        str(REFERENCE / "golden.otlp.jsonl"),
    )
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "correct                PASS"
    assert lines[1] == "skipped-verification   FAIL"
    assert lines[2] == (
        "    trajectory_match: Tool calls ['lookup_order', 'issue_refund'] did not match the "
        "reference ['lookup_order', 'verify_identity', 'issue_refund'] (strict, arguments "
        "exact): call 2 is 'issue_refund', the reference has 'verify_identity'."
    )
    assert lines[4] == (
        "    trajectory_match: Tool calls ['lookup_order', 'verify_identity', 'issue_refund'] "
        "did not match the reference ['lookup_order', 'verify_identity', 'issue_refund'] "
        "(strict, arguments exact): call 3 'issue_refund': argument {'amount': 499.9} where the "
        "reference has {'amount': 49.99}."
    )
    assert "1/4 runs passed" in result.stdout


def test_eval_without_a_reference_fails_the_case_with_a_config_error(tmp_path: Path) -> None:
    result = eval_cli(str(reference_suite(tmp_path)), str(REFERENCE / "golden.otlp.jsonl"))
    assert result.exit_code == 1
    assert "trajectory_match needs a reference" in result.stdout


def test_eval_reference_with_two_runs_for_one_case_is_a_usage_error(tmp_path: Path) -> None:
    result = eval_cli(
        str(reference_suite(tmp_path)),
        str(REFERENCE / "golden.otlp.jsonl"),
        "--reference",
        str(REFUND / "runs.otlp.jsonl"),
    )
    assert result.exit_code == 2
    assert "case 'refund' matches two recorded traces" in result.stderr


def test_eval_reference_with_an_unreadable_record_is_a_usage_error(tmp_path: Path) -> None:
    broken = tmp_path / "golden.jsonl"
    broken.write_text((REFERENCE / "golden.otlp.jsonl").read_text("utf-8") + "{not json\n", "utf-8")
    result = eval_cli(
        str(reference_suite(tmp_path)), str(REFUND / "runs.otlp.jsonl"), "--reference", str(broken)
    )
    assert result.exit_code == 2
    assert f"reference {broken}:2:" in result.stderr


def test_a_suite_naming_a_missing_trace_stops_eval_before_evaluating(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path,
        f"    reference: {{file: golden.otlp.jsonl, trace_id: {GOLDEN_ID[:-1]}0}}\n" + EVALUATOR,
    )
    result = eval_cli(str(path), str(REFUND / "runs.otlp.jsonl"))
    assert result.exit_code == 2
    assert "case 'refund': reference: the reference file" in result.stderr
    assert f"holds no trace '{GOLDEN_ID[:-1]}0'" in result.stderr


def test_a_suite_reference_file_with_an_unreadable_record_stops_eval(tmp_path: Path) -> None:
    path = suite_file(
        tmp_path, f"    reference: {{file: golden.otlp.jsonl, trace_id: {GOLDEN_ID}}}\n" + EVALUATOR
    )
    with (tmp_path / "golden.otlp.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    result = eval_cli(str(path), str(REFUND / "runs.otlp.jsonl"))
    assert result.exit_code == 2
    assert (
        f"case 'refund': reference: the reference file cannot be read: "
        f"{tmp_path / 'golden.otlp.jsonl'}:2:" in result.stderr
    )


def test_the_example_suite_gates_with_its_recorded_reference() -> None:
    result = eval_cli(str(REFERENCE / "suite.yaml"), str(REFUND / "runs.otlp.jsonl"))
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0] == "correct                PASS"
    assert "trajectory_match         1/4 passed" in result.stdout
