"""The pytest plugin marks the runs it captures as test traffic (``settings.TEST_MARK`` on each
run's root span), so a receiver their spans also reach scores them fully, outside production
sampling and spend windows (``tooltrail.sampling``)."""

from __future__ import annotations

from tooltrail.pytest.capture import SpanCapture, capture_scope, scoped_provider
from tooltrail.settings import TEST_MARK


def test_a_captured_run_is_marked_as_test_traffic_on_its_root_only() -> None:
    capture = SpanCapture()
    tracer = scoped_provider(capture).get_tracer("agent")
    with capture_scope(capture):
        with tracer.start_as_current_span("invoke_agent refunds"):
            with tracer.start_as_current_span("execute_tool lookup_order"):
                pass
    spans = {span.name: span for span in capture.spans()}
    assert spans["invoke_agent refunds"].attributes[TEST_MARK] is True
    assert TEST_MARK not in spans["execute_tool lookup_order"].attributes
