"""The refund policy and the seed's refund runs, declared once for every test that uses them.

The policy is the case of ``examples/refund/suite.yaml`` as a suite file's mapping
(``REFUND_POLICY``). A test takes it as a case mapping (``refund_case``), a ``TestCase``
(``refund_test_case``), a ``TestSuite`` (``refund_suite``) or a suite file's text
(``suite_yaml``), each with the keyword changes its assertions depend on spelled out at the
call. The runs are the seed's four: ``SEED_CALLS``, the tool calls of each, in call order.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tooltrail.suite import TestCase, TestSuite

ROOT = Path(__file__).resolve().parents[1]
#: The recorded files the tests read: the corpus, hand-written dialects, logs, stores.
DATA = ROOT / "tests" / "data"
#: Real traces of real instrumentations, one folder per library (tests/data/corpus/README.md).
CORPUS = DATA / "corpus"
#: Recordings (``DATA / "recorded"``) whose reading is known to be wrong, and how. The tests
#: that hold a recording to its truth mark these strict xfails: each fails now, and the fix
#: that makes it pass must remove it from here.
RECORDED_GAPS = {
    "langgraph-openinference": "LangGraph's `agent` node span, once per model request, is "
    "read as a turn; the parallel calls' tool spans carry no call id and are paired by order",
    "langchain-openllmetry-events": "With content as events, LangChain's tool messages carry no "
    "call id: the results are not joined to their calls and a handled failure is not read",
    "crewai-openinference": "CrewAI's user message is its task's templated prompt (`Current "
    "Task: ...` inside CrewAI's instructions); the task's own description (the TaskOutput of the "
    "AGENT span's `output.value`, `crew_tasks` on the root) is not read as the turn's input",
}
#: The project's shared folder beside the checkout (read, never copied here): its corpus of
#: recorded runs (``SHARED_CORPUS``) and the peers' fixtures (``EXTERNAL``); tests that read
#: them skip where it is absent.
SHARED = ROOT.parent / "shared"
SHARED_CORPUS = SHARED / "corpus"
EXTERNAL = SHARED / "external" / "agentevals-otlp"
#: The refund example: its agent's recorded runs and its policy, as ``tooltrail eval`` reads them.
REFUND_DUMP = ROOT / "examples" / "refund" / "runs.otlp.jsonl"
REFUND_SUITE = ROOT / "examples" / "refund" / "suite.yaml"

#: What the refund agent answers when it has refunded.
REPLY = "Your refund of $49.99 for order ORD-7731 has been issued."

#: The refund policy: reply with the amount and the order, call the three tools in order,
#: refund 49.99 on ORD-7731, no call outside the three and none repeated.
REFUND_POLICY: dict[str, Any] = {
    "id": "refund",
    "name": "Refund a delivered order",
    "match": {"agent_name": "refund_agent"},
    "expected_contains": ["$49.99", "ORD-7731"],
    "required_tools": ["lookup_order", "verify_identity", "issue_refund"],
    "required_tool_order": ["lookup_order", "verify_identity", "issue_refund"],
    "expected_tool_arguments": {"issue_refund": {"order_id": "ORD-7731", "amount": 49.99}},
    "evaluators": [
        {"name": "tool_call_precision", "threshold": 1.0},
        {"name": "no_redundant_tool_calls", "threshold": 1.0},
    ],
}

#: How the batch and CLI tests check the runs ``test_batch_support.record`` makes (agent
#: ``refund-agent``): one phrase of the reply, the amount alone, no evaluator.
RECORDED: dict[str, Any] = {
    "name": None,
    "match": {"agent_name": "refund-agent"},
    "expected_contains": ["$49.99"],
    "expected_tool_arguments": {"issue_refund": {"amount": 49.99}},
    "evaluators": None,
}


def refund_case(*keys: str, **changes: Any) -> dict[str, Any]:
    """The refund policy as a suite file's case: all of ``REFUND_POLICY``, or its ``id`` and
    ``keys`` alone; then ``changes`` (a key changed to ``None`` is left out)."""
    return _case(REFUND_POLICY, keys, changes)


def recorded_refund_case(*keys: str, **changes: Any) -> dict[str, Any]:
    """``refund_case`` of the policy as the recorded runs are checked (``RECORDED``)."""
    return _case({**REFUND_POLICY, **RECORDED}, keys, changes)


def _case(policy: dict[str, Any], keys: tuple[str, ...], changes: dict[str, Any]) -> dict[str, Any]:
    unknown = set(keys) - set(policy)
    if unknown:
        raise KeyError(f"not keys of the refund policy: {sorted(unknown)}")
    kept = {key: value for key, value in policy.items() if not keys or key == "id" or key in keys}
    case = copy.deepcopy({**kept, **changes})
    return {key: value for key, value in case.items() if value is not None}


def refund_test_case(*keys: str, **changes: Any) -> TestCase:
    """``refund_case(*keys, **changes)`` read as a suite file's case is read."""
    return refund_suite(refund_case(*keys, **changes)).cases[0]


def refund_suite(*cases: dict[str, Any], name: str = "refunds", **fields: Any) -> TestSuite:
    """The suite ``name`` of ``cases`` and the suite-level ``fields`` (version, gate, ...)."""
    return TestSuite.from_dict({"name": name, **fields, "cases": list(cases)})


def suite_yaml(*cases: dict[str, Any], name: str, **fields: Any) -> str:
    """The text of a suite file holding ``name``, ``fields`` and ``cases``: one key a line in
    that order, lists and mappings of plain values on one line (``[a, b]``, ``{k: v}``)."""
    document = {"name": name, **fields, "cases": list(cases)}
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=100)


#: The seed's four runs: the tool calls of each, ``(tool, arguments)`` in call order.
LOOKUP = ("lookup_order", {"order_id": "ORD-7731"})
VERIFY = ("verify_identity", {"customer_id": "C-118"})
REFUND = ("issue_refund", {"order_id": "ORD-7731", "amount": 49.99})
SEED_CALLS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "correct": [LOOKUP, VERIFY, REFUND],
    "skipped-verification": [LOOKUP, REFUND],
    "wrong-amount": [LOOKUP, VERIFY, ("issue_refund", {"order_id": "ORD-7731", "amount": 499.9})],
    "looping": [LOOKUP, LOOKUP, LOOKUP, VERIFY, ("web_search", {"query": "refund policy"}), REFUND],
}


def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> None:
    """Wait for ``condition`` to hold, polling; fail naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)
