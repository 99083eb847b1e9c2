"""The labelled set of tests/data/labels (48 recorded refund runs of the corpus, labelled by
their scenario scripts) and a scripted judge of the refund policy that agrees and disagrees
with those labels in a known pattern, so every figure of the agreement is known by hand.

The judge (``JUDGE_PATTERN``) passes every ``a_refund_ok`` and ``g_parallel_calls`` run, fails
every ``b_refund_skip_verify`` and ``f2_tool_error_fatal`` run, fails the ``f_tool_error_retry``
runs of the first two frameworks (and passes the other six), and passes the
``c_refund_wrong_amount`` runs of the first four frameworks (and fails the other four). The
labels pass a, f and g and fail b, c and f2, so for ``refund_policy``:

    true positive 22, false negative 2, false positive 4, true negative 20 (48 runs)
    accuracy 42/48 = 87.5%, chance agreement (24*26 + 24*22)/48**2 = 1/2,
    kappa (7/8 - 1/2) / (1 - 1/2) = 3/4, true positive rate 22/24, true negative rate 20/24.

The deterministic checks are not scripted; their labels say what the scripts did, so
``required_tool:verify_identity`` agrees on all 48 runs (kappa 1) and
``tool_arg_values:issue_refund`` passes the eight ``f2_tool_error_fatal`` runs, whose only
refund call failed, which the labels fail: TP 32, FN 0, FP 8, TN 8, kappa 4/7.

``run_eval`` runs ``tooltrail eval`` in a child process with ``--labels``, one worker and one
judge request at a time, so the scripted answers go to the runs in the files' order (each
verdict's reasoning names its run, and ``assert_judged_in_order`` checks it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fixtures import ROOT
from judge_server import JudgeServer, Reply, verdict

LABELS_DIR = ROOT / "tests" / "data" / "labels"
LABELS_CSV = LABELS_DIR / "refund_labels.csv"
LABELS_JSON = LABELS_DIR / "refund_labels.json"
JUDGED_SUITE = LABELS_DIR / "refund.yaml"
CHECKS_SUITE = LABELS_DIR / "checks.yaml"
sys.path.insert(0, str(LABELS_DIR))
import make_labels  # noqa: E402  (the generator of the labels: the runs and their order)

sys.path.remove(str(LABELS_DIR))


@dataclass(frozen=True)
class Run:
    framework: str
    scenario: str
    trace_id: str
    path: Path

    @property
    def name(self) -> str:
        return f"{self.framework} {self.scenario}"


def _runs() -> list[Run]:
    found = []
    for path in make_labels.run_files():
        truth = json.loads(
            path.with_name(path.name.replace(".otlp.jsonl", ".truth.json")).read_text()
        )
        found.append(Run(truth["framework"], truth["scenario"], truth["trace_ids"][0], path))
    return found


RUNS = _runs()
FRAMEWORKS = make_labels.FRAMEWORKS


def judge_passes(run: Run) -> bool:
    """The scripted judge's verdict on ``run`` (the module docstring's pattern)."""
    place = FRAMEWORKS.index(run.framework)
    return {
        "a_refund_ok": True,
        "g_parallel_calls": True,
        "b_refund_skip_verify": False,
        "f2_tool_error_fatal": False,
        "f_tool_error_retry": place >= 2,
        "c_refund_wrong_amount": place < 4,
    }[run.scenario]


def human_passes(run: Run) -> bool:
    return run.scenario in ("a_refund_ok", "f_tool_error_retry", "g_parallel_calls")


#: The runs where the judge and the labels differ: 2 false negatives and 4 false positives.
DISAGREEING = [run for run in RUNS if judge_passes(run) != human_passes(run)]


def judge_replies(samples: int = 1, split: frozenset[str] = frozenset()) -> list[Reply]:
    """The answers for the runs in order, ``samples`` per run; for a scenario in ``split``
    the last sample of each run says the opposite (a 2-1 majority with 3 samples)."""
    replies = []
    for run in RUNS:
        passed = judge_passes(run)
        for n in range(samples):
            flipped = run.scenario in split and n == samples - 1
            replies.append(verdict(passed != flipped, reasoning=run.name))
    return replies


def run_eval(
    server: JudgeServer | None,
    *flags: str,
    suite: Path = JUDGED_SUITE,
    labels: Path | None = LABELS_CSV,
) -> tuple[int, str, str]:
    """``tooltrail eval SUITE <the 48 runs> --labels LABELS ...`` in a child process: exit
    code, stdout, stderr."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    if server is not None:
        env["OPENAI_BASE_URL"] = server.openai_url
    command = [
        sys.executable,
        "-c",
        "from tooltrail.cli import main; main()",
        "eval",
        str(suite),
        *(str(run.path) for run in RUNS),
        "--workers",
        "1",
        "--quiet",
    ]
    if labels is not None:
        command += ["--labels", str(labels)]
    if server is not None:
        command += [
            "--judge-model",
            "openai:gpt-test",
            "--no-judge-cache",
            "--judge-concurrency",
            "1",
        ]
    done = subprocess.run(
        [*command, *flags], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    return done.returncode, done.stdout, done.stderr


def assert_judged_in_order(report: dict[str, Any]) -> None:
    """Each row's policy verdict is the one scripted for its run (its reasoning names it)."""
    by_trace = {run.trace_id: run for run in RUNS}
    assert [row["trace_id"] for row in report["cases"]] == [run.trace_id for run in RUNS]
    for row in report["cases"]:
        run = by_trace[row["trace_id"]]
        (policy,) = [s for s in row["scores"] if s["name"] == "refund_policy"]
        assert policy["explanation"].endswith(f"(policy_followed): {run.name}"), policy
        assert policy["passed"] is judge_passes(run)
