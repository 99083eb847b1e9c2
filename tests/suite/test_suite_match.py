"""Policy selectors: Match.selects reads the converter's metadata keys; cases_for pairs cases."""

import pytest
from fixtures import CORPUS

from tooltrail import EvalTrace, Match, SuiteError, TestCase, TestSuite
from tooltrail.convert import read_traces


def traced(**metadata):
    return EvalTrace("t", metadata=metadata)


REFUND = traced(
    **{
        "service.name": "refund-svc",
        "agent_name": "refund_agent",
        "root_span_name": "invoke_agent refund_agent",
        "attributes": {"deployment.environment": "prod", "retries": 2, "beta": True},
    }
)


def test_all_selects_every_trace():
    assert Match(all=True).selects(EvalTrace("t"))


def test_each_selector_compares_its_metadata_key():
    assert Match(service_name="refund-svc").selects(REFUND)
    assert not Match(service_name="booking-svc").selects(REFUND)
    assert Match(agent_name="refund_agent").selects(REFUND)
    assert not Match(agent_name="refund").selects(REFUND)
    assert Match(root_span_name="invoke_agent refund_agent").selects(REFUND)
    assert not Match(root_span_name="invoke_agent").selects(REFUND)


def test_selectors_combine_with_and():
    assert Match(service_name="refund-svc", agent_name="refund_agent").selects(REFUND)
    assert not Match(service_name="refund-svc", agent_name="other").selects(REFUND)


def test_attributes_compare_with_value_equality():
    assert Match(attributes={"deployment.environment": "prod", "retries": 2.0}).selects(REFUND)
    assert not Match(attributes={"retries": "2"}).selects(REFUND)
    assert not Match(attributes={"beta": 1}).selects(REFUND)
    assert not Match(attributes={"missing": None}).selects(REFUND)


def test_a_trace_without_the_metadata_is_not_selected():
    assert not Match(service_name="refund-svc").selects(EvalTrace("t"))
    assert not Match(attributes={"a": 1}).selects(EvalTrace("t"))


def test_a_match_without_selectors_is_an_error():
    with pytest.raises(SuiteError, match="match needs"):
        Match()


def test_selects_converted_corpus_traces_by_their_real_metadata():
    (trace,) = read_traces(str(CORPUS / "pydantic-ai" / "a_refund_ok.otlp.jsonl"))
    assert Match(service_name="corpus-pydantic-ai", agent_name="refund_agent").selects(trace)
    assert Match(attributes={"gen_ai.agent.name": "refund_agent"}).selects(trace)
    assert not Match(service_name="corpus-strands").selects(trace)


def test_cases_for_pairs_policies_and_tagged_cases():
    policy = TestCase(id="policy", match=Match(service_name="refund-svc"), forbidden_tools=["x"])
    tagged = TestCase(id="refund-1", required_tools=["a"])
    other = TestCase(id="refund-2", required_tools=["a"])
    suite = TestSuite("s", cases=[policy, tagged, other])
    trace = traced(**{"service.name": "refund-svc", "case_id": "refund-1"})
    assert [c.id for c in suite.cases_for(trace)] == ["policy", "refund-1"]
    assert suite.cases_for(EvalTrace("t")) == []


def test_to_dict_gives_the_yaml_form():
    assert Match(all=True).to_dict() == "all"
    assert Match(agent_name="a", attributes={"k": 1}).to_dict() == {
        "agent_name": "a",
        "attributes": {"k": 1},
    }
