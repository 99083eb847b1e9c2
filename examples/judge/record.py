"""Record the judge example's two runs of a booking agent into runs.otlp.jsonl.

Each run is one GenAI agent span (the user's message in, the reply out) around its tool spans
(arguments and results), as an instrumented agent records them with content capture on. The
"good" run books the slot the user chose; the "wrong-slot" run books another one and says it
booked the right one: a matcher cannot tell, a judge can.

    python examples/judge/record.py
"""

from __future__ import annotations

import json
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tooltrail.otlp import json_line

OUT = Path(__file__).with_name("runs.otlp.jsonl")
USER = "Book me the 10am slot tomorrow, my card is on file."
RUNS = {
    "good": ("10am", "Booked: tomorrow at 10am, confirmation BK-2291."),
    "wrong-slot": ("7am", "Booked: tomorrow at 10am, confirmation BK-2292."),
}


def messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def record() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "booking-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("booking-agent")
    for run, (slot, reply) in RUNS.items():
        with tracer.start_as_current_span(
            "invoke_agent booking_agent",
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "booking_agent",
                "gen_ai.input.messages": messages("user", USER),
                "tooltrail.case_id": run,
            },
        ) as agent:
            calls = [
                ("find_slots", {"date": "tomorrow"}, {"slots": ["7am", "10am", "2pm"]}),
                ("book_slot", {"date": "tomorrow", "time": slot, "card_number": "4111111111111111"},
                 {"status": "booked", "time": slot}),
            ]  # fmt: skip
            for n, (tool, args, result) in enumerate(calls, 1):
                with tracer.start_as_current_span(
                    f"execute_tool {tool}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": tool,
                        "gen_ai.tool.call.id": f"call-{n}",
                        "gen_ai.tool.call.arguments": json.dumps(args),
                        "gen_ai.tool.call.result": json.dumps(result),
                    },
                ):
                    pass
            agent.set_attribute("gen_ai.output.messages", messages("assistant", reply))
    provider.shutdown()
    OUT.write_bytes(
        b"".join(json_line(encode_spans([span])) for span in exporter.get_finished_spans())
    )


if __name__ == "__main__":
    record()
