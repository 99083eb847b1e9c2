"""Replies, turns and call order as a person reads them, on shapes real frameworks emit.

The fixtures in tests/data/realworld/ are OTLP/JSON written from each format's documentation
and source (Google ADK's ``telemetry/tracing.py``, the GenAI semantic conventions' agent and
inference spans, the OpenAI Agents GenAI instrumentation); each names its shape in its spans.
agentevals' OTLP corpus (../shared/external/agentevals-otlp, another project's data, never
copied here) is run in ``tests/convert/test_external_corpus.py``.
"""

from __future__ import annotations

from fixtures import DATA

from tooltrail import dialects
from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace

REALWORLD = DATA / "realworld"


def _one(name: str) -> EvalTrace:
    traces = list(read_traces([str(REALWORLD / name)], group="conversation"))
    assert len(traces) == 1
    return traces[0]


# --- the final reply -------------------------------------------------------------------------


def test_adk_reply_is_the_last_response_text_of_call_llm() -> None:
    """ADK puts the model's response only in ``call_llm``'s ``gcp.vertex.agent.llm_response``:
    the reply is the text of the last response that asked for no tool call, without the
    parts marked ``thought`` (reasoning) and without the earlier response's text that came
    with a function call."""
    trace = _one("adk_call_llm_reply.json")
    assert trace.output == "It is sunny in Paris."
    assert [(c.name, c.args) for c in trace.tool_calls] == [("get_weather", {"city": "Paris"})]


def test_adk_call_llm_is_a_model_span_and_invocation_a_workflow() -> None:
    class Span:
        def __init__(self, name: str) -> None:
            self.name, self.attributes, self.events = name, {}, ()

    assert dialects.classify(Span("call_llm"))[0] == dialects.ROLE_MODEL
    assert dialects.classify(Span("invocation"))[0] == dialects.ROLE_WORKFLOW


def test_adk_response_text_and_function_calls() -> None:
    class Span:
        name = "call_llm"
        events = ()
        attributes = {
            "gcp.vertex.agent.llm_response": (
                '{"content":{"role":"model","parts":[{"text":"why","thought":true},'
                '{"text":"Checking."},{"function_call":{"name":"f","args":{"a":1},"id":"x"}},'
                '{"function_call":{"name":"g"}}]}}'
            )
        }

    calls, reply = dialects.model_output(Span())
    assert reply == "Checking."
    assert [(c.name, c.args, c.call_id, c.position) for c in calls] == [
        ("f", {"a": 1}, "x", 0),
        ("g", {}, None, 1),  # made without arguments: the response lists none
    ]
    assert calls[0].source == "model:gcp.vertex.agent.llm_response"


def test_elided_content_is_never_a_reply() -> None:
    """``<elided>`` (content capture off in the GenAI instrumentations) is a placeholder."""
    trace = _one("openai_agents_handoff_two_turns.json")
    assert trace.output == "Order 43 is refunded too."
    assert (
        dialects.model_reply(
            type(
                "S",
                (),
                {
                    "name": "chat",
                    "events": (),
                    "attributes": {
                        "gen_ai.output.messages": '[{"role":"assistant","parts":'
                        '[{"type":"text","content":"<elided>"}]}]'
                    },
                },
            )()
        )
        is None
    )


# --- turns ------------------------------------------------------------------------------------


def test_a_transfer_under_one_workflow_is_one_turn() -> None:
    """ADK 2.x ``invoke_workflow`` runs the coordinator, then (``transfer_to_agent``) the
    billing agent: two sibling agent spans, one user message, one turn."""
    trace = _one("adk_workflow_transfer.json")
    assert trace.turn_count == 1
    assert [(c.name, c.turn) for c in trace.tool_calls] == [
        ("transfer_to_agent", 1),
        ("issue_refund", 1),
    ]
    assert trace.output == "Your refund for order 42 has been issued."
    assert trace.metadata["agent_name"] == "coordinator"


def test_a_wrapper_model_span_and_the_provider_span_inside_it_ask_once() -> None:
    """``call_llm`` and the ``generate_content`` span inside it record the same response:
    its tool call is one call (the tool span's), never a second call without a span."""
    trace = _one("adk_workflow_transfer.json")
    transfers = [c for c in trace.tool_calls if c.name == "transfer_to_agent"]
    assert len(transfers) == 1
    assert transfers[0].call_id == "call-t"


def test_adk_runner_invocation_keeps_delegated_agents_in_its_turn() -> None:
    """ADK 1.x: the runner's ``invocation`` span (one per user message) runs two agents."""
    trace = _one("adk_invocation_transfer.json")
    assert trace.turn_count == 1
    assert [(c.name, c.turn) for c in trace.tool_calls] == [("transfer_to_agent", 1)]
    assert trace.output == "Refund issued."


def test_handoffs_stay_in_their_turn_and_turns_span_traces() -> None:
    """OpenAI Agents: each user message is a workflow (its own trace) running triage, then
    billing after a handoff; the handoff has no tool span but the model asked for it as a
    tool call, so it is a call of the trajectory."""
    trace = _one("openai_agents_handoff_two_turns.json")
    assert trace.turn_count == 2
    assert [(c.name, c.args, c.turn, c.source) for c in trace.tool_calls] == [
        ("transfer_to_billing", {}, 1, "model:gen_ai.output.messages"),
        ("transfer_to_billing", {}, 2, "model:gen_ai.output.messages"),
    ]
    assert trace.metadata["agent_name"] == "triage"


def test_damaged_ancestry_splits_nothing() -> None:
    """A span that is its own parent, two spans parenting each other, and an agent whose
    parent never arrived but runs inside the trace's turn: one turn, every call read, the
    reply of the last model response."""
    trace = _one("damaged_ancestry.json")
    assert trace.turn_count == 1
    assert [(c.name, c.turn) for c in trace.tool_calls] == [("lookup", 1), ("ping", 1)]
    assert trace.output == "All done."


# --- order and arguments -----------------------------------------------------------------------


def test_parallel_calls_keep_the_order_the_model_asked_for() -> None:
    """ADK's ``llm_response`` asks for London, then Paris (no call ids in it); the tool spans
    start microseconds apart the other way round. The model's order wins, and each call is
    paired with the request of the same arguments."""
    trace = _one("adk_parallel_order.json")
    assert [c.args for c in trace.tool_calls] == [{"city": "London"}, {"city": "Paris"}]
    assert trace.output == "London is rainy; Paris is sunny."


def test_empty_arguments_are_empty_and_missing_ones_unknown() -> None:
    """``{}`` recorded is a call without arguments; nothing recorded is ``None``."""
    trace = _one("damaged_ancestry.json")
    assert {c.name: c.args for c in trace.tool_calls} == {"lookup": {}, "ping": None}


# --- agentevals' OTLP corpus --------------------------------------------------------------------

#: Fixtures other work covers: trace-store downloads and content carried in log records.
OTHER_WORK = {
    "hand/details_event_log_debug",
    "hand/openai_v2_logs_no_span_id_single",
    "hand/openai_v2_logs_span_id",
}
#: The truth orders the two parallel calls by span start (microseconds apart); the model's
#: response (gen_ai.output.messages, and the history of the next model call) lists them the
#: other way round, and tooltrail keeps the model's order.
START_ORDER_TRUTH = {"kagent/v1.0.0-alpha9/adk_go_1turn", "kagent/v1.0.0-alpha9/adk_go_2turn"}
#: Two traces naming no conversation: the truth takes every span of the file as one session;
#: tooltrail keeps a trace that names no conversation alone (as its corpus requires).
FILE_IS_SESSION_TRUTH = {"hand/adk_cycle_poisons_batch", "hand/self_parent", "hand/two_span_cycle"}
