"""The CI gate: floors on pass rate, per-metric pass rates and failed cases."""

import pytest

from tooltrail import CaseResult, EvaluationReport, Gate, Score, SuiteError, TestCase, TestSuite

SUITE = TestSuite("s", cases=[TestCase(id="c", required_tools=["a"])])


def report(*rows):
    """Rows given as lists of (metric, passed)."""
    results = [
        CaseResult("c", all(p for _, p in row), [Score(m, m, float(p), p, "") for m, p in row])
        for row in rows
    ]
    return EvaluationReport.from_results(SUITE, results)


THREE_OF_FOUR = report(
    [("required_tool", True)],
    [("required_tool", True)],
    [("required_tool", True)],
    [("required_tool", False), ("tool_order", True)],
)


def test_an_empty_gate_passes():
    assert Gate().check(THREE_OF_FOUR).passed


def test_a_pass_rate_equal_to_its_floor_passes():
    assert Gate(min_pass_rate=0.75).check(THREE_OF_FOUR).passed


def test_a_pass_rate_below_its_floor_fails_with_a_reason():
    result = Gate(min_pass_rate=0.8).check(THREE_OF_FOUR)
    assert not result.passed
    assert result.reasons == ["pass rate 3/4 (75.00%) is below the minimum 80.00%"]


def test_metric_floors_apply_per_metric():
    gate = Gate(min_metric_pass_rate={"required_tool": 0.75, "tool_order": 1.0})
    assert gate.check(THREE_OF_FOUR).passed
    result = Gate(min_metric_pass_rate={"required_tool": 1.0}).check(THREE_OF_FOUR)
    assert result.reasons == [
        "metric 'required_tool' pass rate 3/4 (75.00%) is below the minimum 100.00%"
    ]


def test_a_metric_named_in_the_gate_but_absent_fails():
    result = Gate(min_metric_pass_rate={"tool_args": 0.0}).check(THREE_OF_FOUR)
    assert result.reasons == ["metric 'tool_args' is named in the gate but absent from the report"]


def test_max_failed_cases_is_inclusive():
    assert Gate(max_failed_cases=1).check(THREE_OF_FOUR).passed
    result = Gate(max_failed_cases=0).check(THREE_OF_FOUR)
    assert result.reasons == ["1 failed cases exceed the maximum of 0"]


def test_every_broken_floor_is_reported():
    result = Gate(min_pass_rate=1.0, max_failed_cases=0).check(THREE_OF_FOUR)
    assert len(result.reasons) == 2
    assert not result


def test_a_gate_over_no_cases_fails_its_pass_rate():
    result = Gate(min_pass_rate=0.0).check(report())
    assert result.reasons == ["no cases were evaluated, so the pass rate cannot be checked"]


def test_float_floors_do_not_drift():
    rows = [[("m", True)]] * 7 + [[("m", False)]] * 3
    assert Gate(min_pass_rate=0.7, min_metric_pass_rate={"m": 0.7}).check(report(*rows)).passed


def test_a_gate_loads_from_yaml_top_level_or_under_gate(tmp_path):
    flat = tmp_path / "gate.yaml"
    flat.write_text(
        "min_pass_rate: 0.9\nmin_metric_pass_rate:\n  required_tool: 1.0\nmax_failed_cases: 2\n"
    )
    nested = tmp_path / "nested.json"
    nested.write_text(
        '{"gate": {"min_pass_rate": 0.9, "min_metric_pass_rate": {"required_tool": 1},'
        ' "max_failed_cases": 2}}'
    )
    expected = Gate(0.9, {"required_tool": 1.0}, 2)
    assert Gate.load(flat) == expected
    assert Gate.load(nested) == expected


def test_a_misspelled_gate_key_names_file_line_and_hint(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text("min_pass_rate: 0.9\nmax_failed_case: 2\n")
    with pytest.raises(SuiteError) as info:
        Gate.load(path)
    assert (info.value.path, info.value.line, info.value.key_path) == (
        str(path),
        2,
        "max_failed_case",
    )
    assert "did you mean 'max_failed_cases'?" in str(info.value)


def test_a_floor_outside_zero_to_one_is_refused():
    with pytest.raises(SuiteError, match="between 0 and 1"):
        Gate.from_mapping({"min_pass_rate": 90})


def test_a_gate_without_floors_in_a_file_is_refused():
    with pytest.raises(SuiteError, match="needs at least one"):
        Gate.from_mapping({})
