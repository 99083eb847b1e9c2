"""Suite files: every key read, strict keys with did-you-mean, errors naming file, line and key."""

import json
import textwrap

import pytest

from tooltrail import (
    EvalSpan,
    EvalTrace,
    EvaluationSample,
    Gate,
    Match,
    SuiteError,
    TestSuite,
    ToolCallArgs,
    default_registry,
    evaluate_suite,
)

FULL = """\
name: refund-agent
version: "1.0"
description: The refund agent's trajectory policy.
gate:
  min_pass_rate: 0.9
  min_metric_pass_rate: {required_tool: 1.0}
  max_failed_cases: 1
cases:
  - id: refund
    name: Refund a delivered order
    input: I want a refund for order ORD-7731.
    tags: [refund, smoke]
    match: {service_name: refund-svc, attributes: {deployment.environment: prod}}
    expected_contains: ["$49.99", ORD-7731]
    required_tools: [lookup_order, verify_identity, issue_refund]
    forbidden_tools: [web_search]
    required_tool_order: [lookup_order, verify_identity, issue_refund]
    expected_tool_arguments:
      issue_refund: {order_id: ORD-7731, amount: 49.99}
    required_tool_arguments:
      issue_refund: [order_id, amount]
    max_turns: 3
    ignore_failed_calls: true
    metadata: {owner: payments}
    evaluators:
      - name: tool_call_precision
        threshold: 1.0
        config: {allowed_tools: [lookup_order, verify_identity, issue_refund]}
      - name: no_redundant_tool_calls
        threshold: 1.0
        required: false
  - id: booking
    runs: 3
    threshold: 0.8
    turns:
      - user: Book a table for 10am.
        expect:
          tool_calls_include: [create_booking]
          tool_calls_args:
            - {tool: create_booking, args: {time: 10am}}
      - user: Make it 11am.
        expect:
          tool_calls_include: [update_booking]
          tool_calls_exclude: [create_booking]
          tool_calls_ordered: true
          tool_calls_args:
            - {tool: update_booking, args: {time: 11am}, mode: exact}
"""


def write(tmp_path, text, name="suite.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def load_error(tmp_path, text, name="suite.yaml"):
    """The error of loading a suite file and checking it against the registry, as every
    command that runs a suite does."""
    path = write(tmp_path, text, name)
    with pytest.raises(SuiteError) as info:
        default_registry().check(TestSuite.load(path))
    return path, info.value


def test_every_key_of_a_yaml_suite_is_read(tmp_path):
    suite = TestSuite.load(write(tmp_path, FULL))
    assert (suite.name, suite.version) == ("refund-agent", "1.0")
    assert suite.gate == Gate(0.9, {"required_tool": 1.0}, 1)
    refund, booking = suite.cases
    assert refund.title == "Refund a delivered order"
    assert refund.input == "I want a refund for order ORD-7731."
    assert refund.tags == ["refund", "smoke"]
    assert refund.match == Match(
        service_name="refund-svc", attributes={"deployment.environment": "prod"}
    )
    assert refund.expected_contains == ["$49.99", "ORD-7731"]
    assert refund.forbidden_tools == ["web_search"]
    assert refund.required_tool_order == ["lookup_order", "verify_identity", "issue_refund"]
    assert refund.expected_tool_arguments == {
        "issue_refund": {"order_id": "ORD-7731", "amount": 49.99}
    }
    assert refund.required_tool_arguments == {"issue_refund": ["order_id", "amount"]}
    assert (refund.max_turns, refund.ignore_failed_calls) == (3, True)
    assert refund.metadata == {"owner": "payments"}
    precision, redundancy = refund.evaluators
    assert precision.config == {
        "allowed_tools": ["lookup_order", "verify_identity", "issue_refund"]
    }
    assert (redundancy.threshold, redundancy.required) == (1.0, False)
    assert (booking.runs, booking.threshold) == (3, 0.8)
    turn1, turn2 = booking.turns
    assert turn1.user == "Book a table for 10am."
    assert turn1.expect.tool_calls_args == [ToolCallArgs("create_booking", {"time": "10am"})]
    assert turn2.expect.tool_calls_exclude == ["create_booking"]
    assert turn2.expect.tool_calls_ordered is True
    assert turn2.expect.tool_calls_args[0].mode == "exact"


def test_a_json_suite_reads_the_same(tmp_path):
    import yaml

    data = yaml.safe_load(FULL)
    yaml_suite = TestSuite.load(write(tmp_path, FULL))
    json_suite = TestSuite.load(write(tmp_path, json.dumps(data), "suite.json"))
    assert json_suite == yaml_suite


def test_a_loaded_suite_evaluates(tmp_path):
    suite = TestSuite.load(
        write(
            tmp_path,
            """\
        name: s
        cases:
          - id: refund
            required_tools: [lookup_order]
            evaluators: [no_redundant_tool_calls]
        """,
        )
    )
    trace = EvalTrace("t", spans=[EvalSpan("lookup_order", {"tool_args": {"order_id": "A"}})])
    report = evaluate_suite(suite, [EvaluationSample("refund", None, trace)])
    assert report.cases[0].passed
    assert [s.name for s in report.cases[0].scores] == [
        "required_tool:lookup_order",
        "no_redundant_tool_calls",
    ]


def test_a_misspelled_case_key_names_file_line_key_path_and_the_fix(tmp_path):
    path, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - id: a
            required_tools: [x]
            forbiden_tools: [y]
        """,
    )
    assert (error.path, error.line, error.key_path) == (str(path), 5, "cases[0].forbiden_tools")
    assert "did you mean 'forbidden_tools'?" in str(error)
    assert str(error).startswith(f"{path}:5: cases[0].forbiden_tools: unknown key")


def test_a_misspelled_scorer_config_key_is_an_error_not_silently_dropped(tmp_path):
    path, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - id: a
            evaluators:
              - name: tool_call_precision
                config:
                  allowed_tool: [x]
        """,
    )
    assert error.key_path == "cases[0].evaluators[0].config.allowed_tool"
    assert error.line == 7
    assert "did you mean 'allowed_tools'?" in str(error)


def test_a_near_miss_of_a_builtin_scorer_name_is_an_error(tmp_path):
    _, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - id: a
            evaluators: [{name: tool_call_precison}]
        """,
    )
    assert error.key_path == "cases[0].evaluators[0].name"
    assert "did you mean 'tool_call_precision'?" in str(error)


def test_a_custom_scorer_name_is_accepted_and_checked_when_run(tmp_path):
    suite = TestSuite.load(
        write(
            tmp_path,
            """\
        name: s
        cases:
          - id: a
            evaluators: [{name: politeness, config: {min: 3}}]
        """,
        )
    )
    assert suite.cases[0].evaluators[0].config == {"min": 3}


def test_a_case_with_no_expectation_is_an_error(tmp_path):
    _, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - id: a
            name: nothing to check
        """,
    )
    assert (error.line, error.key_path) == (3, "cases[0]")
    assert "no expectation" in str(error)


def test_a_string_where_a_list_belongs_is_an_error(tmp_path):
    _, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - {id: a, required_tools: lookup_order}
        """,
    )
    assert error.key_path == "cases[0].required_tools"
    assert "write a list" in str(error)


def test_duplicate_case_ids_are_an_error(tmp_path):
    _, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - {id: a, required_tools: [x]}
          - {id: a, required_tools: [y]}
        """,
    )
    assert (error.line, error.key_path) == (4, "cases[1].id")


def test_a_duplicate_yaml_key_is_an_error(tmp_path):
    _, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - id: a
            required_tools: [x]
            required_tools: [y]
        """,
    )
    assert error.line == 5
    assert "duplicate key 'required_tools' (first on line 4)" in str(error)


def test_missing_required_keys_are_named(tmp_path):
    _, error = load_error(tmp_path, "cases: [{id: a, required_tools: [x]}]\n")
    assert "missing required key 'name'" in str(error)
    _, error = load_error(tmp_path, "name: s\ncases: [{required_tools: [x]}]\n")
    assert error.key_path == "cases[0]"
    assert "missing required key 'id'" in str(error)


def test_out_of_range_numbers_are_errors(tmp_path):
    _, error = load_error(
        tmp_path, "name: s\ncases: [{id: a, required_tools: [x], threshold: 1.5}]\n"
    )
    assert error.key_path == "cases[0].threshold"
    _, error = load_error(tmp_path, "name: s\ncases: [{id: a, required_tools: [x], runs: 0}]\n")
    assert error.key_path == "cases[0].runs"
    _, error = load_error(tmp_path, "name: s\ncases: [{id: a, max_turns: true}]\n")
    assert error.key_path == "cases[0].max_turns"


def test_a_bad_argument_mode_is_an_error_with_a_hint(tmp_path):
    _, error = load_error(
        tmp_path,
        """\
        name: s
        cases:
          - id: a
            turns:
              - expect:
                  tool_calls_args: [{tool: t, args: {}, mode: exactly}]
        """,
    )
    assert error.key_path == "cases[0].turns[0].expect.tool_calls_args[0].mode"
    assert "did you mean 'exact'?" in str(error)


def test_invalid_yaml_names_the_line(tmp_path):
    path, error = load_error(tmp_path, "name: s\ncases:\n  - id: [unclosed\n")
    assert error.path == str(path)
    assert error.line is not None
    assert "invalid YAML" in str(error)


def test_invalid_json_names_the_line(tmp_path):
    _, error = load_error(tmp_path, '{"name": "s",\n "cases": [}\n', "suite.json")
    assert (error.line, "invalid JSON" in str(error)) == (2, True)


def test_a_missing_file_is_a_suite_error(tmp_path):
    with pytest.raises(SuiteError, match="cannot read file"):
        TestSuite.load(tmp_path / "nope.yaml")


def test_yaml_tags_for_python_objects_are_refused(tmp_path):
    _, error = load_error(tmp_path, "name: !!python/object/apply:os.system [echo hi]\ncases: []\n")
    assert "invalid YAML" in str(error)


def test_an_alias_bomb_is_refused(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 8):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 10)}]")
    lines.append("name: s")
    lines.append("cases: [{id: a, required_tools: *a7}]")
    _, error = load_error(tmp_path, "\n".join(lines) + "\n")
    assert "expands to more than" in str(error)


def test_anchors_and_merge_keys_share_expectations(tmp_path):
    suite = TestSuite.load(
        write(
            tmp_path,
            """\
        name: s
        cases:
          - &base {id: a, required_tools: [x, y]}
          - {<<: *base, id: b}
        """,
        )
    )
    assert [c.required_tools for c in suite.cases] == [["x", "y"], ["x", "y"]]


def test_match_all_and_match_mappings(tmp_path):
    suite = TestSuite.load(
        write(
            tmp_path,
            """\
        name: s
        cases:
          - {id: a, match: all, required_tools: [x]}
          - id: b
            match: {agent_name: refund_agent, root_span_name: invoke_agent refund_agent}
            required_tools: [x]
        """,
        )
    )
    assert suite.cases[0].match == Match(all=True)
    assert suite.cases[1].match == Match(
        agent_name="refund_agent", root_span_name="invoke_agent refund_agent"
    )


def test_an_empty_match_is_an_error(tmp_path):
    _, error = load_error(tmp_path, "name: s\ncases: [{id: a, match: {}, required_tools: [x]}]\n")
    assert error.key_path == "cases[0].match"
    _, error = load_error(
        tmp_path, "name: s\ncases: [{id: a, match: everything, required_tools: [x]}]\n"
    )
    assert "expected `all`" in str(error)


def test_from_dict_applies_the_same_checks():
    with pytest.raises(SuiteError, match="did you mean 'required_tools'"):
        TestSuite.from_dict({"name": "s", "cases": [{"id": "a", "required_tool": ["x"]}]})


def test_the_example_suite_shape_from_the_docs_loads(tmp_path):
    """docs/core.md shows a YAML suite with every key; it must stay loadable."""
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "core.md").read_text("utf-8")
    block = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    suite = TestSuite.load(write(tmp_path, block))
    assert suite.cases
