"""``tooltrail suggest``: a draft suite from recorded runs that loads strictly, passes on the
runs it came from, and (learnt from the refund example's passing run) fails its three bad runs
for the reasons the README shows; never a rule an input run breaks; trace text and secrets
kept out of the file's structure."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from fixtures import CORPUS, REFUND_DUMP, ROOT
from hypothesis import given
from hypothesis import strategies as st

from tooltrail.checks.suggest import suggest_cases
from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.score import evaluate_cases
from tooltrail.suite import TestSuite
from tooltrail.suite.draft import render_draft, yaml_scalar

FRAMEWORKS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir() and any(p.glob("*.otlp.jsonl")))


def suggest(tmp_path: Path, *args: str, code: int = 0) -> Path:
    """``tooltrail suggest ARGS --out FILE`` in this process; the file."""
    out = tmp_path / "suggested.yaml"
    result = CliRunner().invoke(main, ["suggest", *args, "--out", str(out), "--force"])
    assert result.exit_code == code, result.output
    return out


def failures_by_run(suite: TestSuite, traces: list[EvalTrace]) -> dict[str, list[str]]:
    """Each run's (its ``tooltrail.case_id`` tag, else its trace id) failing score names."""
    found: dict[str, list[str]] = {}
    for trace in traces:
        cases = suite.cases_for(trace)
        assert cases, f"no case selects {trace.trace_id}"
        results = evaluate_cases(cases, trace)
        run = str(trace.metadata.get("case_id") or trace.trace_id)
        found[run] = [s.name for r in results for s in r.failures]
    return found


def readme_reasons() -> dict[str, list[str]]:
    """The failing checks of each refund run, as the README's "Two commands" output shows."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1]
    block = section.split("```text\n", 1)[1].split("```", 1)[0]
    reasons: dict[str, list[str]] = {}
    run = None
    for line in block.splitlines():
        verdict = re.match(r"^(\S+)\s+(PASS|FAIL)$", line)
        if verdict:
            run = verdict.group(1)
            reasons[run] = []
        elif line.startswith("    ") and run is not None:
            reasons[run].append(line.strip().split(": ", 1)[0])
    return reasons


def test_the_refund_draft_from_the_passing_run_fails_the_bad_runs_as_the_readme_shows(
    tmp_path: Path,
) -> None:
    suite = TestSuite.load(suggest(tmp_path, str(REFUND_DUMP.parent), "--run", "correct"))
    found = failures_by_run(suite, list(read_traces(str(REFUND_DUMP))))
    expected = readme_reasons()
    assert set(expected) == set(found) == {
        "correct", "skipped-verification", "wrong-amount", "looping",
    }  # fmt: skip
    assert found["correct"] == [] == expected["correct"]
    for run in ("skipped-verification", "wrong-amount", "looping"):
        assert expected[run], run
        assert set(expected[run]) <= set(found[run]), (run, found[run])


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_draft_of_a_frameworks_runs_loads_strictly_and_passes_on_them(
    tmp_path: Path, framework: str
) -> None:
    files = sorted(str(p) for p in (CORPUS / framework).glob("*.otlp.jsonl"))
    traces = list(read_traces(files))
    captured = [t for t in traces if t.content_missing is None]
    if not captured:
        result = CliRunner().invoke(main, ["suggest", *files])
        assert result.exit_code == 2 and "no run to learn from" in result.output
        return
    suite = TestSuite.load(suggest(tmp_path, *files))
    assert suite.cases
    found = failures_by_run(suite, captured)
    assert all(names == [] for names in found.values()), found
    assert any(case.required_tools for case in suite.cases)


def test_a_reference_run_gates_in_the_strictest_mode_every_run_meets(tmp_path: Path) -> None:
    good = sorted(str(p) for p in (CORPUS / "pydantic-ai").glob("a_refund_ok*.otlp.jsonl"))
    wrong = str(CORPUS / "pydantic-ai" / "c_refund_wrong_amount.otlp.jsonl")
    (reference,) = read_traces(good)
    path = suggest(tmp_path, *good, "--reference", reference.trace_id)
    text = path.read_text(encoding="utf-8")
    assert "name: trajectory_match" in text and "mode: strict" in text and "args: exact" in text
    suite = TestSuite.load(path)
    assert failures_by_run(suite, [reference]) == {reference.trace_id: []}
    (bad,) = read_traces(wrong)
    assert "trajectory_match" in failures_by_run(suite, [bad])[bad.trace_id]


def test_a_reference_or_run_that_names_no_input_run_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["suggest", str(REFUND_DUMP), "--run", "corect"])
    assert result.exit_code == 2
    assert "--run 'corect' names no input run" in result.output and "correct" in result.output
    result = CliRunner().invoke(main, ["suggest", str(REFUND_DUMP), "--reference", "abc"])
    assert result.exit_code == 2 and "--reference 'abc'" in result.output


def test_suggest_does_not_replace_a_file_without_force(tmp_path: Path) -> None:
    out = tmp_path / "suite.yaml"
    out.write_text("mine\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["suggest", str(REFUND_DUMP), "--out", str(out)])
    assert result.exit_code == 2 and out.read_text(encoding="utf-8") == "mine\n"


# --- the invariant, on runs made up by hypothesis --------------------------------------------

TOOLS = st.sampled_from(["lookup", "refund", "search", "verify", "we\nird: #tool"])
VALUES = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([0.5, 1e-05, 49.99, True, False, None, "ORD-1", "yes", "a\n# b: c", ""]),
    st.lists(st.integers(0, 2), max_size=2),
)
ARGS = st.one_of(st.none(), st.dictionaries(st.sampled_from(["id", "amount", "q"]), VALUES))
CALLS = st.lists(st.tuples(TOOLS, ARGS), max_size=5)


def _trace(n: int, agent: str, calls: list[tuple[str, Any]]) -> EvalTrace:
    return EvalTrace(
        trace_id=f"{n:032x}",
        metadata={"agent_name": agent, "case_id": f"run{n}"},
        tool_calls=[ToolCall(name=name, args=args) for name, args in calls],
    )


@given(
    runs=st.lists(st.tuples(st.sampled_from(["a", "b: c"]), CALLS), min_size=1, max_size=5),
    with_reference=st.booleans(),
)
def test_no_rule_of_a_draft_is_broken_by_a_run_it_came_from(
    runs: list[tuple[str, list[tuple[str, Any]]]], with_reference: bool
) -> None:
    traces = [_trace(n, agent, calls) for n, (agent, calls) in enumerate(runs)]
    reference = traces[0].trace_id if with_reference else None
    suggestion = suggest_cases(traces, reference=reference)
    text = render_draft(suggestion.cases, name="x", runs=len(traces), header=["h"])
    suite = TestSuite.from_dict(yaml.safe_load(text), source="draft")
    found = failures_by_run(suite, traces)
    assert all(names == [] for names in found.values()), (found, text)


@given(st.recursive(VALUES, lambda inner: st.dictionaries(st.text(max_size=4), inner, max_size=3)))
def test_a_value_is_one_yaml_scalar_that_reads_back_equal(value: Any) -> None:
    text = yaml_scalar(value)
    assert "\n" not in text
    assert yaml.safe_load(f"k: {text}  # c") == {"k": value}


def test_secrets_are_not_written_into_the_draft(tmp_path: Path) -> None:
    secret = {"password": "hunter2", "token": "Bearer abcdefghijklmnop1234"}
    traces = [_trace(1, "a", [("login", secret)]), _trace(2, "a", [("login", dict(secret))])]
    text = render_draft(suggest_cases(traces).cases, name="x", runs=2, header=[])
    assert "hunter2" not in text and "abcdefghijklmnop1234" not in text
    (case,) = TestSuite.from_dict(yaml.safe_load(text)).cases
    assert case.required_tool_arguments == {"login": ["password", "token"]}
