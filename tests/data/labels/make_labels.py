"""Write refund_labels.csv and refund_labels.json: the verdicts a person gives three checks of
the refund suite on 48 recorded runs of the corpus, read off what each scenario's script did
(its ``*.truth.json``), never off what a check said. See README.md.

Run from the repository root: ``python tests/data/labels/make_labels.py``.
``tests/report/test_labels_agreement.py`` checks that the files are what this writes.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "corpus"
#: Every framework folder of the corpus that recorded all six refund scenarios with content.
FRAMEWORKS = (
    "google-adk",
    "mlflow-genai-semconv",
    "pydantic-ai",
    "pydantic-ai-logfire",
    "strands",
    "strands-latest-semconv",
    "traceloop",
    "vercel-ai",
)
#: The refund agent's scenarios (one trace each) whose outcome the policy decides plainly.
SCENARIOS = (
    "a_refund_ok",
    "b_refund_skip_verify",
    "c_refund_wrong_amount",
    "f_tool_error_retry",
    "f2_tool_error_fatal",
    "g_parallel_calls",
)
THE_REFUND = {"order_id": "ORD-7731", "amount": 49.99}


def run_files() -> list[Path]:
    """The 48 recorded runs, framework by framework, scenario by scenario."""
    return [CORPUS / f / f"{s}.otlp.jsonl" for f in FRAMEWORKS for s in SCENARIOS]


def verdicts(truth: dict[str, Any]) -> dict[str, tuple[bool, str]]:
    """What the script did, as a verdict (and why) per check."""
    calls = truth["calls"]
    tools = [c["tool"] for c in calls]
    refunds = [c for c in calls if c["tool"] == "issue_refund"]
    issued = [c for c in refunds if c["status"] == "ok" and c["args"] == THE_REFUND]
    verified = "verify_identity" in tools
    first_refund = tools.index("issue_refund") if refunds else len(tools)
    verified_first = verified and tools.index("verify_identity") < first_refund
    wrong = [c for c in refunds if c["args"] != THE_REFUND]
    if not verified_first:
        policy = (False, "refunds without verifying the customer's identity first")
    elif wrong:
        policy = (False, f"refunds {wrong[0]['args']['amount']}, not 49.99")
    elif not issued:
        policy = (False, "no refund went through")
    else:
        policy = (True, "verifies, then refunds 49.99 once")
    return {
        "refund_policy": policy,
        "required_tool:verify_identity": (
            (True, "calls verify_identity") if verified else (False, "never calls verify_identity")
        ),
        "tool_arg_values:issue_refund": (
            (True, "a refund of 49.99 for ORD-7731 went through")
            if issued
            else (False, "no successful issue_refund(ORD-7731, 49.99)")
        ),
    }


def labels() -> list[dict[str, str]]:
    rows = []
    for path in run_files():
        truth = json.loads(
            path.with_name(path.name.replace(".otlp.jsonl", ".truth.json")).read_text()
        )
        (trace_id,) = truth["trace_ids"]
        run = f"{truth['framework']} {truth['scenario']}"
        for check, (passed, why) in verdicts(truth).items():
            rows.append(
                {
                    "trace_id": trace_id,
                    "check": check,
                    "verdict": "pass" if passed else "fail",
                    "notes": f"{run}: {why}",
                }
            )
    return rows


def csv_text() -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, ["trace_id", "check", "verdict", "notes"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(labels())
    return out.getvalue()


def json_text() -> str:
    return json.dumps(labels(), indent=2) + "\n"


if __name__ == "__main__":
    (HERE / "refund_labels.csv").write_text(csv_text())
    (HERE / "refund_labels.json").write_text(json_text())
