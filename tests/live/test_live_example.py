"""examples/instrumented_agent.py: the refund story, live; `tooltrail eval` agrees later."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from fixtures import ROOT

from tooltrail.cli import main as cli
from tooltrail.convert import read_traces

EXAMPLES = ROOT / "examples"


def run(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_example_prints_the_seed_verdicts_and_eval_agrees_on_its_dump(tmp_path: Path) -> None:
    seed = run(str(EXAMPLES / "refund_trajectory.py"), cwd=tmp_path)
    dump = tmp_path / "refund.otlp.jsonl"
    live = run(str(EXAMPLES / "instrumented_agent.py"), "--out", str(dump), cwd=tmp_path)
    assert live == seed + f"\ntraces written to {dump}\n"

    offline = CliRunner().invoke(
        cli, ["eval", "--workers", "1", "-q", str(EXAMPLES / "refund" / "suite.yaml"), str(dump)]
    )
    assert offline.output == seed


def test_the_dump_holds_one_genai_trace_per_run_with_its_reply(tmp_path: Path) -> None:
    run(str(EXAMPLES / "instrumented_agent.py"), cwd=tmp_path)
    dumps = list(tmp_path.glob("*.otlp.jsonl"))
    assert [p.name for p in dumps] == ["refund-agent.tooltrail-dump.otlp.jsonl"]
    traces = {t.metadata["case_id"]: t for t in read_traces(str(dumps[0]))}
    assert sorted(traces) == ["correct", "looping", "skipped-verification", "wrong-amount"]
    looping = traces["looping"]
    assert [c.name for c in looping.tool_calls] == [
        "lookup_order",
        "lookup_order",
        "lookup_order",
        "verify_identity",
        "web_search",
        "issue_refund",
    ]
    assert looping.output == "Your refund of $49.99 for order ORD-7731 has been issued."
    assert looping.metadata["agent_name"] == "refund_agent"
    assert traces["wrong-amount"].tool_calls[-1].args == {"order_id": "ORD-7731", "amount": 499.9}


def test_running_the_example_twice_leaves_one_dump_of_four_traces(tmp_path: Path) -> None:
    run(str(EXAMPLES / "instrumented_agent.py"), cwd=tmp_path)
    run(str(EXAMPLES / "instrumented_agent.py"), cwd=tmp_path)
    assert len(list(read_traces(str(tmp_path / "refund-agent.tooltrail-dump.otlp.jsonl")))) == 4
