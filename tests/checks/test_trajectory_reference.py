"""trajectory_match against a reference trajectory: call modes x argument modes, per-tool
overrides, registered comparators, inline and recorded references, and their messages
(docs/core.md, "Reference trajectories")."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tooltrail import EvalTrace, EvaluatorConfig, TestCase, ToolCall, evaluate_trace
from tooltrail.checks import ArgsComparator, Registry
from tooltrail.checks.reference import with_references
from tooltrail.checks.registry import is_builtin
from tooltrail.convert import read_traces
from tooltrail.suite import Reference, SuiteError, TestSuite

REFUND = Path(__file__).resolve().parents[2] / "examples" / "refund"
GOLDEN_ID = "55da56e89fc4b19f37a5448ebf293b63"  # the `correct` run of runs.otlp.jsonl

#: The reference of the mode x argument-mode table: a{x: 1}, then b{y: 2}.
REF = (ToolCall(name="a", args={"x": 1}), ToolCall(name="b", args={"y": 2}))


def run(*calls: tuple[str, dict[str, Any] | None]) -> EvalTrace:
    return EvalTrace(
        "t",
        tool_calls=[
            ToolCall(name=name, args=args, span_id=f"s{i + 1}")
            for i, (name, args) in enumerate(calls)
        ],
    )


def match(
    trace: EvalTrace,
    reference: Reference | None = None,
    registry: Registry | None = None,
    **config: Any,
):  # noqa: ANN201
    case = TestCase(
        id="c",
        reference=reference if reference is not None else Reference(calls=REF),
        evaluators=[EvaluatorConfig(name="trajectory_match", config=config)],
    )
    if registry is not None:
        scores = registry.run(case.evaluators[0], trace, case)
        assert len(scores) == 1
        return scores[0]
    return evaluate_trace(case, trace).scores[-1]


ALL = {"exact", "ignore", "subset", "superset"}
#: Per mode, runs against REF and the argument modes under which each matches. The second run
#: of each has a call with an argument the reference lacks (so only `ignore` and `superset`
#: accept it), the third a call missing a reference argument (only `ignore` and `subset`).
TABLE: dict[str, list[tuple[list[tuple[str, dict[str, Any]]], set[str]]]] = {
    "strict": [
        ([("a", {"x": 1}), ("b", {"y": 2})], ALL),
        ([("a", {"x": 1}), ("b", {"y": 2, "z": 3})], {"ignore", "superset"}),
        ([("a", {}), ("b", {"y": 2})], {"ignore", "subset"}),
        ([("b", {"y": 2}), ("a", {"x": 1})], set()),  # same calls, wrong order
    ],
    "unordered": [
        ([("b", {"y": 2}), ("a", {"x": 1})], ALL),
        ([("b", {"y": 2, "z": 3}), ("a", {"x": 1})], {"ignore", "superset"}),
        ([("b", {"y": 2}), ("a", {})], {"ignore", "subset"}),
        ([("b", {"y": 2})], set()),  # a missing
    ],
    "subset": [
        ([("b", {"y": 2})], ALL),  # fewer calls are fine
        ([("b", {"y": 2, "z": 3})], {"ignore", "superset"}),
        ([("b", {})], {"ignore", "subset"}),
        ([("b", {"y": 2}), ("c", {})], set()),  # c is not in the reference
    ],
    "superset": [
        ([("c", {}), ("b", {"y": 2}), ("a", {"x": 1})], ALL),  # extra calls are fine
        ([("c", {}), ("b", {"y": 2, "z": 3}), ("a", {"x": 1})], {"ignore", "superset"}),
        ([("c", {}), ("b", {"y": 2}), ("a", {})], {"ignore", "subset"}),
        ([("a", {"x": 1})], set()),  # b missing
    ],
}


@pytest.mark.parametrize("args", sorted(ALL))
@pytest.mark.parametrize("mode", sorted(TABLE))
def test_every_mode_under_every_argument_mode(mode: str, args: str) -> None:
    for calls, accepted in TABLE[mode]:
        s = match(run(*calls), mode=mode, args=args)
        assert s.error is None, s.explanation
        assert (s.passed, s.value) == ((args in accepted), float(args in accepted)), (calls, s)


def test_the_pass_message_names_mode_and_argument_mode() -> None:
    s = match(run(("a", {"x": 1}), ("b", {"y": 2})), mode="strict")
    assert s.explanation == (
        "Tool calls ['a', 'b'] matched the reference ['a', 'b'] (strict, arguments exact)."
    )
    assert s.span_ids == ()


@pytest.mark.parametrize(
    ("mode", "calls", "difference", "span"),
    [
        ("strict", [("a", {"x": 1})], "reference call 2 'b' is missing", None),
        (
            "strict",
            [("a", {"x": 1}), ("b", {"y": 2}), ("c", {})],
            "call 3 'c' is not in the reference",
            "s3",
        ),
        (
            "strict",
            [("b", {"y": 2}), ("a", {"x": 1})],
            "out of order at call 1: 'b' where the reference has 'a'",
            "s1",
        ),
        ("strict", [("a", {"x": 1}), ("c", {})], "call 2 is 'c', the reference has 'b'", "s2"),
        (
            "strict",
            [("a", {"x": 1}), ("b", {"y": 3})],
            "call 2 'b': argument {'y': 3} where the reference has {'y': 2}",
            "s2",
        ),
        ("unordered", [("b", {"y": 2})], "reference call 1 'a' is missing", None),
        (
            "unordered",
            [("b", {"y": 2}), ("a", {"x": 1}), ("b", {"y": 2})],
            "call 3 'b' is not in the reference",
            "s3",
        ),
        (
            "unordered",
            [("b", {"y": 2}), ("a", {"x": 1, "w": 0})],
            "call 2 'a': argument {'w': 0} is not in the reference",
            "s2",
        ),
        ("subset", [("c", {})], "call 1 'c' is not in the reference", "s1"),
        ("superset", [("b", {"y": 2}), ("c", {})], "reference call 1 'a' is missing", None),
        (
            "superset",
            [("b", {"y": 2}), ("a", {})],
            "call 2 'a': argument 'x' is missing (the reference has {'x': 1})",
            "s2",
        ),
    ],
)
def test_a_failure_names_its_first_difference(
    mode: str, calls: list[tuple[str, dict[str, Any]]], difference: str, span: str | None
) -> None:
    s = match(run(*calls), mode=mode)
    names = [name for name, _ in calls]
    assert s.explanation == (
        f"Tool calls {names} did not match the reference ['a', 'b'] ({mode}, arguments exact): "
        f"{difference}."
    )
    assert (s.passed, s.value, s.error) == (False, 0.0, None)
    assert s.span_ids == ((span,) if span else ())


def test_argument_differences_are_typed_and_named() -> None:
    s = match(run(("a", {"x": True}), ("b", {"y": 2})), mode="strict")  # True is not 1
    assert s.explanation.endswith(
        "call 1 'a': argument {'x': True} where the reference has {'x': 1}."
    )
    s = match(run(("a", None), ("b", {"y": 2})), mode="strict")
    assert s.explanation.endswith("call 1 'a': its arguments were not captured.")
    s = match(run(("a", {"x": 1, "w": 0}), ("b", {"y": 2})), mode="strict", args="subset")
    assert s.explanation.endswith("call 1 'a': argument {'w': 0} is not in the reference.")


def test_a_reference_call_without_arguments_matches_any() -> None:
    reference = Reference(calls=(ToolCall(name="a"), ToolCall(name="b", args={"y": 2})))
    s = match(run(("a", {"q": "anything"}), ("b", {"y": 2})), reference, mode="strict")
    assert s.passed


def test_unordered_modes_pair_calls_by_a_maximum_matching() -> None:
    # Under `superset` arguments the first run call fits both reference calls; a first-fit
    # pairing would take the wrong one and report the second as missing.
    reference = Reference(calls=(ToolCall(name="a", args={"x": 1}), ToolCall(name="a", args={})))
    s = match(run(("a", {"x": 1}), ("a", {"z": 0})), reference, mode="unordered", args="superset")
    assert s.passed, s.explanation


def test_per_tool_overrides_win_over_the_default() -> None:
    trace = run(("a", {"x": 99}), ("b", {"y": 2}))
    assert not match(trace, mode="strict").passed
    s = match(trace, mode="strict", tool_args={"a": "ignore"})
    assert s.passed, s.explanation
    s = match(
        run(("a", {"x": 1}), ("b", {"y": 2, "z": 3})), mode="strict", tool_args={"b": "superset"}
    )
    assert s.passed
    s = match(
        run(("a", {"x": 1}), ("b", {"y": 2, "z": 3})),
        mode="strict",
        args="superset",
        tool_args={"b": "exact"},
    )
    assert s.explanation.endswith("call 2 'b': argument {'z': 3} is not in the reference.")


@dataclass(frozen=True, slots=True)
class CaseFold(ArgsComparator):
    """Equal when ``key`` is equal ignoring case; other arguments are not looked at."""

    key: str = "city"

    def compare_args(
        self, tool: str, reference: dict[str, Any] | None, actual: dict[str, Any] | None
    ) -> bool:
        return (reference or {}).get(self.key, "").casefold() == (actual or {}).get(
            self.key, ""
        ).casefold()


class Raising(ArgsComparator):
    def compare_args(self, tool: str, reference: Any, actual: Any) -> bool:
        raise ValueError("no idea")


class NotBool(ArgsComparator):
    def compare_args(self, tool: str, reference: Any, actual: Any) -> bool:
        return "yes"  # type: ignore[return-value]


def registry() -> Registry:
    found = Registry.with_builtins()
    found.register("casefold", CaseFold)
    found.register("raising", Raising)
    found.register("not_bool", NotBool)
    return found


WEATHER = Reference(calls=(ToolCall(name="weather", args={"city": "San Francisco", "units": "C"}),))


def test_a_registered_comparator_decides_for_its_tool() -> None:
    trace = run(("weather", {"city": "san francisco", "units": "F"}))
    assert not match(trace, WEATHER, registry(), mode="strict").passed
    s = match(
        trace,
        WEATHER,
        registry(),
        mode="strict",
        tool_args={"weather": {"check": "casefold", "config": {"key": "city"}}},
    )
    assert s.passed, s.explanation
    s = match(
        run(("weather", {"city": "Oakland"})),
        WEATHER,
        registry(),
        mode="strict",
        tool_args={"weather": {"check": "casefold"}},
    )
    assert s.explanation == (
        "Tool calls ['weather'] did not match the reference ['weather'] (strict, arguments "
        "exact): call 1 'weather': comparator 'casefold' rejected its arguments."
    )


def test_a_comparator_that_raises_or_answers_no_bool_is_an_error_score() -> None:
    trace = run(("weather", {"city": "Oakland"}))
    s = match(
        trace, WEATHER, registry(), mode="strict", tool_args={"weather": {"check": "raising"}}
    )
    assert (s.passed, s.error) == (False, "ValueError")
    assert s.explanation == (
        "Trajectory not matched: argument comparator 'raising' failed on 'weather': "
        "ValueError: no idea."
    )
    s = match(
        trace, WEATHER, registry(), mode="strict", tool_args={"weather": {"check": "not_bool"}}
    )
    assert (s.passed, s.error) == (False, "TypeError")
    assert "returned str, not a bool" in s.explanation


def test_a_check_running_a_comparator_runs_under_the_time_limit() -> None:
    found = registry()
    plain = found.build(EvaluatorConfig(name="trajectory_match", config={"mode": "strict"}))
    assert is_builtin(plain)
    with_plugin = found.build(
        EvaluatorConfig(
            name="trajectory_match",
            config={"mode": "strict", "tool_args": {"weather": {"check": "casefold"}}},
        )
    )
    assert not is_builtin(with_plugin)


def test_a_comparator_is_not_a_check_on_its_own() -> None:
    found = registry()
    s = found.run(EvaluatorConfig(name="casefold"), run(), TestCase(id="c", max_turns=1))[0]
    assert s.error == "ConfigError"


def test_bad_configs_are_config_errors() -> None:
    trace = run(("a", {"x": 1}))
    s = match(trace, mode="strictly")
    assert s.error == "ConfigError"
    s = match(trace, mode="strict", args="loose")
    assert s.error == "ConfigError"
    assert s.explanation == (
        "config['args']: must be one of exact, ignore, subset, superset, not 'loose'."
    )
    s = match(trace, None, registry(), mode="strict", tool_args={"a": {"check": "nope"}})
    assert s.error == "ConfigError"
    assert s.explanation == "config['tool_args']['a']['check']: no registered check 'nope'."


def test_without_any_reference_the_check_says_what_to_set() -> None:
    case = TestCase(
        id="c", evaluators=[EvaluatorConfig(name="trajectory_match", config={"mode": "strict"})]
    )
    s = evaluate_trace(case, run(("a", {}))).scores[-1]
    assert s.error == "ConfigError"
    assert s.explanation.startswith("trajectory_match needs a reference")


def test_expected_names_still_work_with_the_new_modes() -> None:
    s = match(run(("b", {"q": 1}), ("a", {})), mode="unordered", expected=["a", "b"])
    assert s.passed
    s = match(run(("b", {}), ("a", {})), mode="strict", expected=["a", "b"])
    assert s.explanation.endswith("out of order at call 1: 'b' where the reference has 'a'.")


def test_the_old_modes_compare_arguments_of_a_case_reference() -> None:
    s = match(run(("a", {"x": 1}), ("b", {"y": 3})), mode="exact")
    assert s.explanation == (
        "Tool calls ['a', 'b'] did not match the expected trajectory ['a', 'b'] exactly: "
        "call 2 'b': argument {'y': 3} where the reference has {'y': 2}."
    )
    s = match(run(("a", {"x": 1}), ("b", {"y": 3})), mode="any_order")
    assert s.value == pytest.approx(2 * 1 / 4)


def test_failed_attempts_leave_the_reference_too_when_the_case_ignores_them() -> None:
    failed = ToolCall(name="a", args={"x": 0}, status="error")
    reference = Reference(calls=(failed, *REF))
    case = TestCase(
        id="c",
        reference=reference,
        ignore_failed_calls=True,
        evaluators=[EvaluatorConfig(name="trajectory_match", config={"mode": "strict"})],
    )
    assert evaluate_trace(case, run(("a", {"x": 1}), ("b", {"y": 2}))).scores[-1].passed


# -- recorded references -------------------------------------------------------------------


def recorded_suite(
    tmp_path: Path, trace_id: str = GOLDEN_ID, name: str = "runs.otlp.jsonl"
) -> Path:
    (tmp_path / "golden").mkdir(exist_ok=True)
    shutil.copy(REFUND / "runs.otlp.jsonl", tmp_path / "golden" / "runs.otlp.jsonl")
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: s\n"
        "cases:\n"
        "  - id: refund\n"
        "    match: all\n"
        "    reference:\n"
        f"      file: golden/{name}\n"
        f"      trace_id: {trace_id}\n"
        "    evaluators:\n"
        "      - name: trajectory_match\n"
        "        config: {mode: strict}\n",
        encoding="utf-8",
    )
    return suite


def runs() -> dict[str, EvalTrace]:
    return {t.metadata["case_id"]: t for t in read_traces(REFUND / "runs.otlp.jsonl")}


def test_a_reference_from_a_recorded_file_relative_to_the_suite(tmp_path: Path) -> None:
    suite = TestSuite.load(recorded_suite(tmp_path))
    reference = suite.cases[0].reference
    assert reference is not None
    assert reference.file == str(tmp_path / "golden" / "runs.otlp.jsonl")
    found = runs()
    case = suite.cases[0]
    assert evaluate_trace(case, found["correct"]).scores[-1].passed
    s = evaluate_trace(case, found["wrong-amount"]).scores[-1]
    assert s.explanation.endswith(
        "(strict, arguments exact): call 3 'issue_refund': argument {'amount': 499.9} where the "
        "reference has {'amount': 49.99}."
    )


def test_a_recorded_reference_naming_no_trace_is_an_error_score(tmp_path: Path) -> None:
    suite = TestSuite.load(recorded_suite(tmp_path, trace_id="55da56e89fc4b19f37a5448ebf293b64"))
    s = evaluate_trace(suite.cases[0], runs()["correct"]).scores[-1]
    assert s.error == "ConfigError"
    assert "holds no trace '55da56e89fc4b19f37a5448ebf293b64'" in s.explanation
    assert "did you mean '55da56e89fc4b19f37a5448ebf293b63'" in s.explanation


def test_eval_references_map_recorded_traces_to_cases_by_tag() -> None:
    suite = TestSuite.from_dict(
        {
            "name": "s",
            "cases": [
                {
                    "id": cid,
                    "evaluators": [{"name": "trajectory_match", "config": {"mode": "strict"}}],
                }
                for cid in ("correct", "looping", "other")
            ],
        }
    )
    recorded = list(read_traces(REFUND / "runs.otlp.jsonl"))
    bound, notes = with_references(suite, recorded, "runs.otlp.jsonl")
    by_id = {case.id: case.reference for case in bound.cases}
    assert by_id["other"] is None
    assert by_id["correct"] is not None and by_id["correct"].trace_id == GOLDEN_ID
    assert [c.name for c in by_id["looping"].calls or ()][:3] == ["lookup_order"] * 3
    assert len(notes) == 2  # skipped-verification and wrong-amount name no case
    assert all("matches no case: not used" in note for note in notes)


def test_two_recorded_traces_for_one_case_are_an_error() -> None:
    suite = TestSuite.from_dict(
        {"name": "s", "cases": [{"id": "p", "match": "all", "evaluators": ["trajectory_match"]}]}
    )
    with pytest.raises(SuiteError, match="case 'p' matches two recorded traces"):
        with_references(suite, read_traces(REFUND / "runs.otlp.jsonl"), "runs.otlp.jsonl")


def test_argument_values_in_explanations_go_through_the_redaction() -> None:
    reference = Reference(calls=(ToolCall(name="login", args={"user": "bob", "password": "s3"}),))
    case = TestCase(
        id="c",
        reference=reference,
        evaluators=[EvaluatorConfig(name="trajectory_match", config={"mode": "strict"})],
    )
    differs = evaluate_trace(case, run(("login", {"user": "bob", "password": "hunter2"})))
    assert differs.scores[-1].explanation.endswith(
        "call 1 'login': argument {'password': '[REDACTED]'} where the reference has "
        "{'password': '[REDACTED]'}."
    )
    missing = evaluate_trace(case, run(("login", {"user": "bob"}))).scores[-1]
    assert missing.explanation.endswith(
        "argument 'password' is missing (the reference has {'password': '[REDACTED]'})."
    )
    extra = Reference(calls=(ToolCall(name="login", args={"user": "bob"}),))
    case = TestCase(id="c", reference=extra, evaluators=case.evaluators)
    s = evaluate_trace(case, run(("login", {"user": "bob", "password": "hunter2"}))).scores[-1]
    assert s.explanation.endswith("argument {'password': '[REDACTED]'} is not in the reference.")
    assert "hunter2" not in s.explanation
