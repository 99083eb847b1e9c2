"""Whether a trace records a run of an agent: a trace that only creates one does not.

The GenAI conventions have an agent-creation operation (``create_agent``). AutoGen and
OpenLLMetry's LangChain instrumentation make its span when an agent is built, a trace of its
own, before any run. Such a trace is still read (``convert`` prints it), but it has no turn
and a suite's policies do not select it (``suite.TestSuite.cases_for``): it is no failing
run. The rule is ``dialects/rules.json`` ``roles.not_a_run``; it is applied once a trace is
built, whichever engine built it (``convert.collect.TraceCollector.build``).
"""

from __future__ import annotations

from tooltrail.dialects import rules
from tooltrail.model import NOT_A_RUN, EvalTrace

_NOT_A_RUN = rules.row("roles", "not_a_run", encoding="text")
_KEY = _NOT_A_RUN["key"]
_CREATING = frozenset(_NOT_A_RUN["values"])


def mark_if_not_a_run(trace: EvalTrace) -> None:
    """Mark ``trace`` when its root span creates an agent and it holds no call, agent span or
    reply: no turn (``turn_count`` 0, no ``turns``), and ``metadata["not_a_run"]`` says why."""
    if trace.tool_calls or trace.agent_spans or trace.output is not None:
        return
    metadata = trace.metadata
    labels = metadata.get("attributes")
    operation = labels.get(_KEY) if isinstance(labels, dict) else None
    if operation not in _CREATING:
        return
    metadata["turn_count"] = 0
    metadata[NOT_A_RUN] = f"the trace only records {operation} (an agent built, not run)"
    trace.turns = []
