"""The live path speaks as ``serve`` does, through the ``tooltrail.verdicts`` logger: one line
per evaluated trace once the application gave the logger a console handler, nothing without
one, secrets redacted."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import refund_case, suite_yaml
from opentelemetry.sdk.trace import TracerProvider

from tooltrail.live import ENVIRONMENT, install, tool
from tooltrail.pipeline.console import VERDICTS_LOGGER

SUITE_YAML = suite_yaml(
    refund_case(
        "match",
        required_tools=["issue_refund"],
        expected_tool_arguments={"issue_refund": {"order_id": "ORD-7731"}},
    ),
    name="refund",
)
LINE = re.compile(r"^\d\d:\d\d:\d\d [0-9a-f]{32} refund (PASS|FAIL)\b")


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def console() -> Iterator[Lines]:
    """A console handler on the verdicts logger at INFO, as ``logging.basicConfig`` gives."""
    logger = logging.getLogger(VERDICTS_LOGGER)
    handler, level = Lines(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _run(tmp_path: Path, order_id: str) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE_YAML, encoding="utf-8")
    provider = TracerProvider()
    install(provider=provider, suite=str(suite), grace_ms=0)
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span(
        "invoke_agent refund_agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"},
    ):
        with tool("issue_refund", {"order_id": order_id}, tracer=tracer):
            pass
    provider.shutdown()


def test_live_writes_a_verdict_line_per_trace_to_a_console_handler(
    console: Lines, tmp_path: Path
) -> None:
    _run(tmp_path, "ORD-1 password=hunter2\n\x1b[2K12:00:00 forged line")
    _run(tmp_path, "ORD-7731")
    assert len(console.lines) == 2, console.lines
    failed, passed = console.lines
    found = LINE.match(failed)
    assert found is not None and found.group(1) == "FAIL"
    assert "tool_arg_values:issue_refund: Tool 'issue_refund' was called with" in failed
    assert "hunter2" not in failed and "[REDACTED]" in failed
    assert "\n" not in failed and "\x1b" not in failed
    assert LINE.match(passed) is not None and passed.endswith(" PASS")


def test_live_says_nothing_without_a_handler(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert not logging.getLogger(VERDICTS_LOGGER).isEnabledFor(logging.INFO)
    _run(tmp_path, "ORD-7731")
    assert [r for r in caplog.records if r.name == VERDICTS_LOGGER] == []
