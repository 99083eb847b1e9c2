"""Issue 35, done-when 4: ``collector-config/sampling.yaml``'s tail-sampling pipeline, held to
the traces ``tooltrail serve --forward-verdicts`` (and the live ``verdict_exporter``) really
forward: every forwarded root carries ``tooltrail.verdict``, and the file's two policies, run
by a model of the collector's (``tests/tail_sampling_model.py``, its limits documented there),
keep every failing trace and their share of the others.

The forwarded traces are received by a second real ``tooltrail serve`` (no suite, ``--dump``)
and read back from its dump, so what is checked is what went over the wire."""

from __future__ import annotations

import json
from collections import defaultdict
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures import wait_until
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from serve_helpers import post, write_suite
from serve_traces import PROTOBUF, agent_trace, body_of, new_span_id
from tail_sampling_model import (
    MODELLED,
    Probabilistic,
    StringAttribute,
    TraceData,
    fnv1a_64,
    policies_of,
    probabilistic_threshold,
    sampled,
)

from tooltrail.live import install, tool
from tooltrail.otlp import Span, read_spans
from tooltrail.pipeline.verdicts import FAILED_CHECKS, VERDICT
from tooltrail.serve import ServeConfig, start_in_thread
from tooltrail.suite import TestSuite

CONFIG = Path(__file__).resolve().parents[2] / "collector-config" / "sampling.yaml"
SUITE = """\
name: refunds
cases:
  - id: refund
    match: all
    required_tools: [issue_refund]
"""
TRACES = 400
#: Documented settings of the count connector's metric definitions and their attributes.
COUNT_METRIC_KEYS = {"description", "conditions", "attributes"}
COUNT_ATTRIBUTE_KEYS = {"key", "default_value"}


def config() -> dict[str, Any]:
    with CONFIG.open(encoding="utf-8") as f:
        return yaml.safe_load(f)


def policies() -> list[Any]:
    return policies_of(config()["processors"]["tail_sampling"])


def spans_of(trace_id: str, failing: bool) -> list[Span]:
    tool = "lookup_order" if failing else "issue_refund"
    return agent_trace(
        trace_id,
        tool_attributes=[
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": tool,
                "gen_ai.tool.call.arguments": json.dumps({"order_id": "ORD-1"}),
            }
        ],
    )


def trace_data(spans: list[Span]) -> TraceData:
    return TraceData(spans[0].trace_id, [(s.resource, s.attributes) for s in spans])


def test_the_config_samples_by_verdict_and_counts_evaluations() -> None:
    loaded = config()
    pipelines = loaded["service"]["pipelines"]
    judged = pipelines["traces/judged"]
    assert "tail_sampling" in judged["processors"]
    # The judged traces come in on a receiver of their own and never go back to tooltrail.
    assert judged["receivers"] == ["otlp/judged"]
    assert "otlphttp/tooltrail" not in judged["exporters"]
    assert pipelines["traces/agents"]["exporters"] == ["otlphttp/tooltrail"]
    assert "otlp/judged" not in pipelines["traces/agents"]["receivers"]
    port = loaded["receivers"]["otlp/judged"]["protocols"]["http"]["endpoint"].rsplit(":", 1)[1]
    assert f"--forward http://collector:{port} --forward-verdicts" in CONFIG.read_text()
    # The policies are the two the model covers, with documented settings only.
    entries = loaded["processors"]["tail_sampling"]["policies"]
    assert [e["type"] for e in entries] == ["string_attribute", "probabilistic"]
    for entry in entries:
        assert set(entry[entry["type"]]) <= MODELLED[entry["type"]]
    failing, share = policies()
    assert isinstance(failing, StringAttribute) and failing.key == VERDICT
    assert set(failing.values) == {"fail", "error"} and not failing.regex
    assert isinstance(share, Probabilistic) and 0 < share.percentage < 100
    # Evaluation events become counts by check and label (a pass rate per check).
    metrics = loaded["connectors"]["count"]["logs"]
    for definition in metrics.values():
        assert set(definition) <= COUNT_METRIC_KEYS
        keys = [a["key"] for a in definition["attributes"]]
        assert {"gen_ai.evaluation.name", "gen_ai.evaluation.score.label"} <= set(keys)
        for attribute in definition["attributes"]:
            assert set(attribute) <= COUNT_ATTRIBUTE_KEYS
    assert "count" in pipelines["logs"]["exporters"]
    assert any("count" in p["receivers"] for p in pipelines.values())


def test_the_model_follows_the_collectors_hash_and_matching() -> None:
    # FNV-1a 64 test vectors (the processor hashes salt + trace id bytes with it).
    assert fnv1a_64(b"") == 0xCBF29CE484222325 and fnv1a_64(b"a") == 0xAF63DC4C8601EC8C
    assert probabilistic_threshold(100) == (1 << 64) - 1 and probabilistic_threshold(0) == 0
    keep = StringAttribute("k", "tooltrail.verdict", ("fail", "error"))
    trace = "ab" * 16
    assert keep.samples(TraceData(trace, [({}, {"tooltrail.verdict": "fail"})]))
    assert keep.samples(TraceData(trace, [({"tooltrail.verdict": "error"}, {})]))  # resource
    assert not keep.samples(TraceData(trace, [({}, {"tooltrail.verdict": "pass"})]))
    assert not keep.samples(TraceData(trace, [({}, {"tooltrail.verdict": ["fail"]})]))
    share = [
        Probabilistic("p", 10).samples(TraceData(sha256(str(n).encode()).hexdigest()[:32], []))
        for n in range(4000)
    ]
    assert 320 < sum(share) < 480


@pytest.fixture
def downstream(tmp_path: Path) -> Any:
    receiver = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            grpc_port=None, http_port=0, grace=0.05, dump=tmp_path / "forwarded.jsonl"
        )
    )
    yield receiver
    receiver.stop()


def test_forwarded_traces_keep_every_failure_and_a_share_of_the_rest(
    tmp_path: Path, downstream: Any
) -> None:
    results = tmp_path / "results.jsonl"
    upstream = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            results=results,
            forward=f"http://127.0.0.1:{downstream.http_port}",
            forward_verdicts=True,
        )
    )
    ids = [sha256(f"forwarded {n}".encode()).hexdigest()[:32] for n in range(TRACES)]
    failing = {t for n, t in enumerate(ids) if n % 4 == 0}
    try:
        port = upstream.http_port
        assert port is not None
        for start in range(0, TRACES, 40):
            spans = [s for t in ids[start : start + 40] for s in spans_of(t, t in failing)]
            assert post(port, body_of(spans), PROTOBUF)[0] == 200
        stats = upstream.receiver.stats
        wait_until(lambda: stats()["traces_forwarded"] == TRACES, "every trace forwarded")
    finally:
        upstream.stop()
    downstream.stop()
    verdicts = {
        line["trace_id"]: line["verdict"]
        for line in (json.loads(text) for text in results.read_text().splitlines())
    }
    by_trace: dict[str, list[Span]] = defaultdict(list)
    for span in read_spans([str(tmp_path / "forwarded.jsonl")]):
        by_trace[span.trace_id].append(span)
    assert set(by_trace) == set(ids)
    for trace_id, spans in by_trace.items():
        (root,) = [s for s in spans if not s.parent_span_id]
        assert root.attributes[VERDICT] == verdicts[trace_id]  # on every forwarded root
        assert root.attributes[VERDICT] == ("fail" if trace_id in failing else "pass")
        if trace_id in failing:
            assert list(root.attributes[FAILED_CHECKS]) == ["required_tool:issue_refund"]
        assert all(VERDICT not in s.attributes for s in spans if s.parent_span_id)
    rules = policies()
    kept = {t for t, spans in by_trace.items() if sampled(rules, trace_data(spans))}
    assert failing <= kept  # every failing trace
    passing = set(ids) - failing
    share = next(p for p in rules if isinstance(p, Probabilistic)).percentage / 100
    kept_passing = kept & passing
    assert abs(len(kept_passing) / len(passing) - share) < 0.06
    assert kept_passing == {
        t for t in passing if rules[1].samples(TraceData(t, []))
    }  # the share is the probabilistic policy's alone


def test_a_late_piece_carries_its_revised_verdict_on_its_top_span(
    tmp_path: Path, downstream: Any
) -> None:
    upstream = start_in_thread(
        ServeConfig(  # type: ignore[call-arg]
            suite=write_suite(tmp_path, SUITE),
            grpc_port=None,
            http_port=0,
            grace=0.05,
            forward=f"http://127.0.0.1:{downstream.http_port}",
            forward_verdicts=True,
        )
    )
    trace_id = "7a" * 16
    spans = spans_of(trace_id, failing=True)
    root = spans[0]
    late = Span(
        trace_id=trace_id,
        span_id=new_span_id(),
        parent_span_id=root.span_id,
        name="execute_tool issue_refund",
        start_ns=5_000,
        end_ns=6_000,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "issue_refund",
            "gen_ai.tool.call.arguments": "{}",
        },
    )
    try:
        port = upstream.http_port
        assert port is not None
        stats = upstream.receiver.stats
        assert post(port, body_of(spans), PROTOBUF)[0] == 200
        wait_until(lambda: stats()["traces_forwarded"] == 1, "the first verdict forwarded")
        assert post(port, body_of([late]), PROTOBUF)[0] == 200
        wait_until(lambda: stats()["traces_forwarded"] == 2, "the late piece forwarded")
    finally:
        upstream.stop()
    downstream.stop()
    forwarded = {s.span_id: s for s in read_spans([str(tmp_path / "forwarded.jsonl")])}
    assert forwarded[root.span_id].attributes[VERDICT] == "fail"
    assert forwarded[late.span_id].attributes[VERDICT] == "pass"  # the revision's verdict


def test_the_live_verdict_exporter_puts_the_verdict_on_every_root() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    installation = install(
        provider=provider,
        suite=TestSuite.from_dict(
            {
                "name": "refunds",
                "cases": [{"id": "refund", "match": "all", "required_tools": ["issue_refund"]}],
            }
        ),
        verdict_exporter=exporter,
        grace_ms=0,
        handle_sigterm=False,
    )
    assert installation is not None
    tracer = provider.get_tracer("agent")
    for n in range(40):
        with tracer.start_as_current_span("invoke_agent refund_agent"):
            with tool("issue_refund" if n % 2 else "lookup_order", {"n": n}, tracer=tracer):
                pass
    provider.shutdown()
    exported = exporter.get_finished_spans()
    roots = [s for s in exported if s.parent is None]
    assert len(roots) == 40 and len(exported) == 80
    assert sorted(r.attributes[VERDICT] for r in roots) == ["fail"] * 20 + ["pass"] * 20
    rules = policies()
    by_trace: dict[int, list[Any]] = defaultdict(list)
    for span in exported:
        by_trace[span.context.trace_id].append(span)
    for trace_id, spans in by_trace.items():
        data = TraceData(
            f"{trace_id:032x}", [(dict(s.resource.attributes), dict(s.attributes)) for s in spans]
        )
        root = next(s for s in spans if s.parent is None)
        if root.attributes[VERDICT] == "fail":
            assert sampled(rules, data)
