"""A scripted refund agent instrumented with tooltrail live: no model, no network.

The four recorded runs of the refund story (correct, skipped-verification, wrong-amount,
looping) are replayed by a scripted agent whose tools use ``tooltrail.live.tool``. Each run is
an OpenTelemetry GenAI trace: an ``invoke_agent refund_agent`` root span (tagged with
``tooltrail.case_id`` = the run's name, its reply recorded as GenAI output messages) and one
``execute_tool`` child per call. tooltrail writes every complete trace to an OTLP file and
scores it inline against the policy in ``examples/refund/suite.yaml``:

    python examples/instrumented_agent.py [--out PATH]

``tooltrail eval`` on the written file later gives the same verdicts.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from tooltrail import EvalTrace
from tooltrail.live import install, tool
from tooltrail.report import render_text
from tooltrail.results import CaseResult, EvaluationReport
from tooltrail.suite import TestSuite

SUITE = Path(__file__).parent / "refund" / "suite.yaml"
DEFAULT_OUT = "refund-agent.tooltrail-dump.otlp.jsonl"
USER = "I want a refund for order ORD-7731."
REPLY = "Your refund of $49.99 for order ORD-7731 has been issued."
ORDERS = {"ORD-7731": {"customer_id": "C-118", "total": 49.99, "status": "delivered"}}

provider = TracerProvider(resource=Resource.create({"service.name": "refund-agent"}))
tracer = provider.get_tracer("refund-agent")


@tool(tracer=tracer)
def lookup_order(order_id: str) -> dict[str, object]:
    """Find an order by id."""
    return ORDERS[order_id]


@tool(tracer=tracer)
def verify_identity(customer_id: str) -> bool:
    """Check that the customer is who they say they are."""
    return customer_id == "C-118"


@tool(tracer=tracer)
def web_search(query: str) -> list[str]:
    """Search the web."""
    return ["Refunds are issued to the original payment method."]


@tool(tracer=tracer)
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an amount on an order."""
    return f"refund issued for {order_id}"


#: What the scripted agent does in each recorded run.
SCRIPTS: dict[str, Callable[[], None]] = {
    "correct": lambda: (
        lookup_order("ORD-7731"),
        verify_identity("C-118"),
        issue_refund("ORD-7731", 49.99),
    ),
    "skipped-verification": lambda: (
        lookup_order("ORD-7731"),
        issue_refund("ORD-7731", 49.99),
    ),
    "wrong-amount": lambda: (
        lookup_order("ORD-7731"),
        verify_identity("C-118"),
        issue_refund("ORD-7731", 499.9),
    ),
    "looping": lambda: (
        lookup_order("ORD-7731"),
        lookup_order("ORD-7731"),
        lookup_order("ORD-7731"),
        verify_identity("C-118"),
        web_search(query="refund policy"),
        issue_refund(order_id="ORD-7731", amount=49.99),
    ),
}


def messages(role: str, text: str) -> str:
    """GenAI semantic-convention messages (JSON) holding one text part."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def run_agent(run: str) -> str:
    """One agent invocation: a GenAI agent span around the run's scripted tool calls."""
    with tracer.start_as_current_span(
        "invoke_agent refund_agent",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "refund_agent",
            "gen_ai.input.messages": messages("user", USER),
            "tooltrail.case_id": run,
        },
    ) as span:
        SCRIPTS[run]()
        span.set_attribute("gen_ai.output.messages", messages("assistant", REPLY))
    return REPLY


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        default=DEFAULT_OUT,
        help=f"OTLP dump to write (default {DEFAULT_OUT}; overwritten)",
    )
    args = parser.parse_args(argv)
    open(args.out, "wb").close()  # a fresh dump per run of the example

    suite = TestSuite.load(SUITE)
    verdicts: dict[str, CaseResult] = {}
    lock = threading.Lock()

    def keep(trace: EvalTrace, results: list[CaseResult]) -> None:
        """Inline results arrive on tooltrail's worker thread, one trace at a time."""
        run = str(trace.metadata.get("case_id"))
        with lock:
            for result in results:
                result.label = run
                verdicts[run] = result

    install(provider=provider, suite=suite, out=args.out, on_result=keep, enabled=True)
    for run in SCRIPTS:
        run_agent(run)
    provider.shutdown()  # delivers every held trace to the file and the evaluator

    report = EvaluationReport.from_results(
        suite, [verdicts[run] for run in SCRIPTS if run in verdicts]
    )
    sys.stdout.write(render_text(report))
    sys.stdout.write(f"\ntraces written to {args.out}\n")
    return 0 if len(verdicts) == len(SCRIPTS) else 1


if __name__ == "__main__":
    sys.exit(main())
