"""Ten recorded runs of one refund case by a flaky scripted agent: no model, no network.

The agent verifies the customer's identity in a run when a seeded draw says so
(``random.Random(1)``, below 0.7), so every recording holds the same outcomes: runs 2, 3 and 8
skip the verification, 7 of 10 pass. Each run is a GenAI trace tagged ``tooltrail.case_id:
refund``, written by tooltrail's live path to an OTLP file; ``tooltrail eval
examples/trials/suite.yaml`` then reports the runs' figures (docs/eval.md, Repeated trials):

    python examples/trials/record_runs.py [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

from tooltrail.live import install, tool

DEFAULT_OUT = Path(__file__).parent / "runs.otlp.jsonl"
SEED, RATE, RUNS = 1, 0.7, 10
USER = "I want a refund for order ORD-7731."
REPLY = "Your refund of $49.99 for order ORD-7731 has been issued."

provider = TracerProvider(resource=Resource.create({"service.name": "refund-agent"}))
tracer = provider.get_tracer("refund-agent")


@tool(tracer=tracer)
def lookup_order(order_id: str) -> dict[str, object]:
    """Find an order by id."""
    return {"customer_id": "C-118", "total": 49.99}


@tool(tracer=tracer)
def verify_identity(customer_id: str) -> bool:
    """Check that the customer is who they say they are."""
    return True


@tool(tracer=tracer)
def issue_refund(order_id: str, amount: float) -> str:
    """Refund an amount on an order."""
    return f"refund issued for {order_id}"


def messages(role: str, text: str) -> str:
    """GenAI semantic-convention messages (JSON) holding one text part."""
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def run_agent(verifies: bool) -> None:
    """One run: a GenAI agent span around the calls, tagged with the case it is a run of."""
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "refund_agent",
        "gen_ai.input.messages": messages("user", USER),
        "gen_ai.output.messages": messages("assistant", REPLY),
        "tooltrail.case_id": "refund",
    }
    with tracer.start_as_current_span("invoke_agent refund_agent", attributes=attributes):
        lookup_order("ORD-7731")
        if verifies:
            verify_identity("C-118")
        issue_refund("ORD-7731", 49.99)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="OTLP dump to write (overwritten)")
    args = parser.parse_args(argv)
    open(args.out, "wb").close()  # a fresh dump per recording
    install(provider=provider, out=args.out, enabled=True)
    draw = random.Random(SEED)
    for _ in range(RUNS):
        run_agent(draw.random() < RATE)
    provider.shutdown()  # delivers every held trace to the file
    print(f"{RUNS} runs written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
