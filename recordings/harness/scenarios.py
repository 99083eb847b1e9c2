"""The scenarios every framework is recorded in, their tools, and their truth.

A scenario is turns of a user message and the model's scripted steps. The tools are plain
Python functions that log every execution (arguments, result or error); the truth file is made
from the script and that log, so it says what happened, not what any reader makes of it.

Scenarios (names as in the shared corpus):
- ``a_refund_ok``: lookup_order -> verify_identity -> issue_refund(49.99) -> reply;
- ``f_tool_error_retry``: issue_refund fails once (the tool raises), the model retries it;
- ``g_parallel_calls``: two get_weather calls in one model response;
- ``e_two_turns``: search_flights in turn 1, book_flight in turn 2, a reply each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from harness.model_server import Call, Calls, Reply, Step


class ToolFailed(RuntimeError):
    """What a failing tool raises (its message is the truth's ``error``)."""


@dataclass
class Execution:
    tool: str
    args: dict[str, Any]
    result: Any = None
    error: str | None = None


@dataclass
class ToolBox:
    """The scenario's tools. ``functions()`` gives plain typed functions with docstrings, as
    every framework can wrap; each execution is logged in ``executions``."""

    fail_first: set[str] = field(default_factory=set)
    executions: list[Execution] = field(default_factory=list)

    def _run(self, tool: str, args: dict[str, Any], result: Any) -> Any:
        if tool in self.fail_first:
            self.fail_first.discard(tool)
            message = "payment gateway timeout, please retry"
            self.executions.append(Execution(tool, args, error=message))
            raise ToolFailed(message)
        self.executions.append(Execution(tool, args, result=result))
        return result

    def functions(self) -> dict[str, Callable[..., Any]]:
        box = self

        def lookup_order(order_id: str) -> dict[str, Any]:
            """Look up an order by its id."""
            return box._run(
                "lookup_order",
                {"order_id": order_id},
                {
                    "order_id": order_id,
                    "amount": 49.99,
                    "currency": "USD",
                    "customer_id": "C-118",
                    "status": "delivered",
                },
            )

        def verify_identity(customer_id: str) -> dict[str, Any]:
            """Verify the identity of a customer."""
            return box._run(
                "verify_identity",
                {"customer_id": customer_id},
                {"customer_id": customer_id, "verified": True},
            )

        def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
            """Issue a refund of an amount for an order."""
            return box._run(
                "issue_refund",
                {"order_id": order_id, "amount": amount},
                {"refund_id": "RF-5521", "status": "issued", "amount": amount},
            )

        def get_weather(city: str) -> dict[str, Any]:
            """Get the weather forecast of a city."""
            temps = {"Paris": 21, "London": 14}
            return box._run(
                "get_weather",
                {"city": city},
                {"city": city, "forecast": "sunny", "temp_c": temps.get(city, 18), "alert": None},
            )

        def search_flights(origin: str, destination: str, date: str) -> dict[str, Any]:
            """Search flights between two cities on a date."""
            return box._run(
                "search_flights",
                {"origin": origin, "destination": destination, "date": date},
                {"flights": [{"flight": "TT100", "price": 129.5, "seats": 4}]},
            )

        def book_flight(flight: str, passenger: str) -> dict[str, Any]:
            """Book a seat on a flight for a passenger."""
            return box._run(
                "book_flight",
                {"flight": flight, "passenger": passenger},
                {"booking": "BK-77", "confirmed": True},
            )

        return {
            f.__name__: f
            for f in (
                lookup_order,
                verify_identity,
                issue_refund,
                get_weather,
                search_flights,
                book_flight,
            )
        }


@dataclass(frozen=True)
class TurnScript:
    user: str
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    turns: tuple[TurnScript, ...]
    tools: tuple[str, ...]
    fail_first: frozenset[str] = frozenset()

    def steps(self) -> list[Step]:
        return [step for turn in self.turns for step in turn.steps]

    def toolbox(self) -> ToolBox:
        return ToolBox(fail_first=set(self.fail_first))


def _c(name: str, call_id: str, **args: Any) -> Call:
    return Call(name=name, args=args, call_id=call_id)


REFUND_USER = "I want a refund for order ORD-7731, I'm customer C-118."
REFUND_REPLY = "Your refund of $49.99 for order ORD-7731 has been issued."
REFUND_TOOLS = ("lookup_order", "verify_identity", "issue_refund")

SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "a_refund_ok",
            "lookup_order -> verify_identity -> issue_refund(49.99), then the reply",
            (
                TurnScript(
                    REFUND_USER,
                    (
                        Calls((_c("lookup_order", "call_a1", order_id="ORD-7731"),)),
                        Calls((_c("verify_identity", "call_a2", customer_id="C-118"),)),
                        Calls((_c("issue_refund", "call_a3", order_id="ORD-7731", amount=49.99),)),
                        Reply(REFUND_REPLY),
                    ),
                ),
            ),
            REFUND_TOOLS,
        ),
        Scenario(
            "f_tool_error_retry",
            "issue_refund raises on its first attempt; the model retries it with the same "
            "arguments and a new call id, and it succeeds",
            (
                TurnScript(
                    REFUND_USER,
                    (
                        Calls((_c("lookup_order", "call_f1", order_id="ORD-7731"),)),
                        Calls((_c("verify_identity", "call_f2", customer_id="C-118"),)),
                        Calls((_c("issue_refund", "call_f3", order_id="ORD-7731", amount=49.99),)),
                        Calls((_c("issue_refund", "call_f4", order_id="ORD-7731", amount=49.99),)),
                        Reply(REFUND_REPLY),
                    ),
                ),
            ),
            REFUND_TOOLS,
            frozenset({"issue_refund"}),
        ),
        Scenario(
            "g_parallel_calls",
            "two get_weather calls asked for in one model response",
            (
                TurnScript(
                    "What's the weather in Paris and in London today?",
                    (
                        Calls(
                            (
                                _c("get_weather", "call_g1", city="Paris"),
                                _c("get_weather", "call_g2", city="London"),
                            )
                        ),
                        Reply("Paris: sunny, 21 C. London: sunny, 14 C."),
                    ),
                ),
            ),
            ("get_weather",),
        ),
        Scenario(
            "e_two_turns",
            "turn 1 searches flights and answers; turn 2 books the flight and answers",
            (
                TurnScript(
                    "Find me a flight from Paris to Rome on 2026-12-20.",
                    (
                        Calls(
                            (
                                _c(
                                    "search_flights",
                                    "call_e1",
                                    origin="Paris",
                                    destination="Rome",
                                    date="2026-12-20",
                                ),
                            )
                        ),
                        Reply("Flight TT100 costs $129.50 and has 4 seats left."),
                    ),
                ),
                TurnScript(
                    "Book TT100 for Ada Lovelace, please.",
                    (
                        Calls(
                            (
                                _c(
                                    "book_flight",
                                    "call_e2",
                                    flight="TT100",
                                    passenger="Ada Lovelace",
                                ),
                            )
                        ),
                        Reply("Booked: TT100 for Ada Lovelace, booking BK-77."),
                    ),
                ),
            ),
            ("search_flights", "book_flight"),
        ),
    )
}


def truth(
    scenario: Scenario,
    executions: list[Execution],
    *,
    framework: str,
    variant: str,
    holds: dict[str, bool],
    notes: list[str],
) -> dict[str, Any]:
    """The truth file of one recorded scenario.

    ``holds`` says what the telemetry of this variant records, as the recording script knows
    it from the instrumentation's documented settings and checked in the raw file: ``calls``,
    ``args``, ``results``, ``user``, ``reply``. ``executions`` is the tool log: each scripted
    call must have run, in order, with the scripted arguments.
    """
    pending = list(executions)
    turns = []
    flat = []
    group = 0
    for number, turn in enumerate(scenario.turns, 1):
        calls = []
        for step in turn.steps:
            if not isinstance(step, Calls):
                continue
            group += 1
            for call in step.calls:
                ran = next((e for e in pending if e.tool == call.name), None)
                if ran is None:
                    raise AssertionError(f"{scenario.name}: {call.name} never ran")
                pending.remove(ran)
                if json.dumps(ran.args, sort_keys=True) != json.dumps(call.args, sort_keys=True):
                    raise AssertionError(f"{call.name} ran with {ran.args}, not {call.args}")
                entry = {
                    "tool": call.name,
                    "args": call.args,
                    "call_id": call.call_id,
                    "status": "error" if ran.error else "ok",
                    "error": ran.error,
                    "result": ran.result,
                    "turn": number,
                    "parallel_group": group if len(step.calls) > 1 else None,
                }
                calls.append(entry)
                flat.append(entry)
        reply = next(s.text for s in reversed(turn.steps) if isinstance(s, Reply))
        turns.append({"turn": number, "user": turn.user, "reply": reply, "calls": calls})
    if pending:
        raise AssertionError(f"{scenario.name}: unscripted executions {pending}")
    return {
        "framework": framework,
        "variant": variant,
        "scenario": scenario.name,
        "description": scenario.description,
        "turn_count": len(turns),
        "turns": turns,
        "calls": flat,
        "telemetry_holds": holds,
        "notes": notes,
    }
