"""One-call setup, TOOLTRAIL_* configuration and the opentelemetry-instrument entry point."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from fixtures import ROOT, refund_case, suite_yaml
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tooltrail.convert import read_traces
from tooltrail.live import ENVIRONMENT, LiveConfig, install, install_from_environment, tool

#: The refund policy cut to the one call ``run_agent`` makes.
SUITE_YAML = suite_yaml(refund_case("match", required_tools=["issue_refund"]), name="refund")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


def run_agent(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span(
        "invoke_agent refund_agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "refund_agent"},
    ):
        with tool("issue_refund", {"order_id": "ORD-7731", "card_number": "4111"}, tracer=tracer):
            pass


def test_install_puts_the_existing_processors_behind_tagging_and_redaction() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    installation = install(provider=provider)
    assert installation is not None and installation.buffer is None
    run_agent(provider)
    tool_span = next(s for s in exporter.get_finished_spans() if "tool_name" in s.attributes)
    assert json.loads(tool_span.attributes["tool_args"]) == {
        "card_number": "[REDACTED]",
        "order_id": "ORD-7731",
    }
    assert "4111" not in tool_span.attributes["gen_ai.tool.call.arguments"]


def test_install_writes_the_dump_and_scores_each_trace(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE_YAML)
    provider = TracerProvider()
    installation = install(
        provider=provider,
        out=str(tmp_path / "dump.otlp.pb"),
        suite=str(suite),
        results=str(tmp_path / "results.jsonl"),
    )
    assert installation is not None and installation.file_sink is not None
    run_agent(provider)
    provider.shutdown()
    [trace] = read_traces(str(tmp_path / "dump.otlp.pb"))
    assert [c.name for c in trace.tool_calls] == ["issue_refund"]
    assert (tmp_path / "dump.otlp.pb").read_bytes()[:1] != b"{"  # protobuf, from the suffix
    [line] = (tmp_path / "results.jsonl").read_text().splitlines()
    assert json.loads(line)["passed"] is True
    assert installation.stats() is not None and installation.stats().traces_complete == 1


def test_installing_twice_keeps_the_first_installation() -> None:
    provider = TracerProvider()
    first = install(provider=provider)
    assert install(provider=provider) is first


def test_tooltrail_enabled_false_turns_install_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLTRAIL_ENABLED", "false")
    assert install(provider=TracerProvider()) is None


def test_environment_variables_configure_the_pipeline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TOOLTRAIL_OUT", str(tmp_path / "env.otlp.jsonl"))
    monkeypatch.setenv("TOOLTRAIL_REDACT_KEYS", "order_id")
    monkeypatch.setenv("TOOLTRAIL_GRACE_MS", "0")
    provider = TracerProvider()
    installation = install(provider=provider)
    assert installation is not None and installation.buffer is not None
    assert installation.buffer.grace_s == 0
    run_agent(provider)
    provider.shutdown()
    [trace] = read_traces(str(tmp_path / "env.otlp.jsonl"))
    assert trace.tool_calls[0].args == {"order_id": "[REDACTED]", "card_number": "[REDACTED]"}


def test_settings_passed_to_install_win_over_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TOOLTRAIL_MAX_TRACES", "7")
    assert LiveConfig.from_env().max_traces == 7
    assert LiveConfig.from_env(max_traces=3).max_traces == 3


def test_lists_are_json_arrays_or_comma_separated() -> None:
    config = LiveConfig.from_env(
        {
            "TOOLTRAIL_REDACT_KEYS": "a, b,,c",
            "TOOLTRAIL_REDACT_VALUE_PATTERNS": r'["\\d{4,}", "x,y"]',
        }
    )
    assert config.redact_keys == ("a", "b", "c")
    assert config.redact_value_patterns == (r"\d{4,}", "x,y")


@pytest.mark.parametrize(
    ("name", "value", "field"),
    [
        ("TOOLTRAIL_MAX_TRACES", "many", "max_traces"),
        ("TOOLTRAIL_GRACE_MS", "-1", "grace_ms"),
        ("TOOLTRAIL_ENABLED", "maybe", "enabled"),
        ("TOOLTRAIL_OUT_FORMAT", "xml", "out_format"),
        ("TOOLTRAIL_REDACT_KEY_PATTERNS", "([", "redact_key_patterns"),
        ("TOOLTRAIL_MAX_VALUE_CHARS", "3", "max_value_chars"),
    ],
)
def test_a_bad_value_warns_naming_the_variable_and_keeps_the_default(
    caplog: pytest.LogCaptureFixture, name: str, value: str, field: str
) -> None:
    with caplog.at_level(logging.WARNING, logger="tooltrail.live.config"):
        config = LiveConfig.from_env({name: value})
    assert getattr(config, field) == getattr(LiveConfig(), field)
    assert name in caplog.text and repr(value) in caplog.text


def test_an_unknown_setting_is_refused() -> None:
    with pytest.raises(TypeError, match="grace_s"):
        LiveConfig.from_env(grace_s=1)


def test_every_environment_variable_is_documented() -> None:
    docs = (ROOT / "docs" / "live.md").read_text()
    assert [name for name in ENVIRONMENT if f"`{name}`" not in docs] == []


def test_the_entry_point_is_registered_for_opentelemetry_instrument() -> None:
    [point] = [
        p for p in entry_points(group="opentelemetry_post_instrument") if p.name == "tooltrail"
    ]
    assert point.load() is install_from_environment


def test_the_entry_point_installs_on_the_sdk_configured_provider_when_enabled(
    tmp_path: Path,
) -> None:
    """What opentelemetry-instrument does: the SDK configurator, then post-instrument hooks."""
    script = textwrap.dedent(
        """
        from importlib.metadata import entry_points
        from opentelemetry import trace
        from opentelemetry.sdk._configuration import _OTelSDKConfigurator
        _OTelSDKConfigurator().configure()
        for point in entry_points(group="opentelemetry_post_instrument"):
            point.load()()
        from tooltrail.live import tool
        with trace.get_tracer("app").start_as_current_span("invoke_agent a"):
            with tool("issue_refund", {"amount": 5, "password": "pw"}):
                pass
        trace.get_tracer_provider().shutdown()
        """
    )
    for enabled in ("true", "false"):
        out = tmp_path / f"auto-{enabled}.otlp.jsonl"
        env = {
            **os.environ,
            "OTEL_TRACES_EXPORTER": "console",
            "OTEL_METRICS_EXPORTER": "none",
            "OTEL_LOGS_EXPORTER": "none",
            "TOOLTRAIL_ENABLED": enabled,
            "TOOLTRAIL_OUT": str(out),
        }
        done = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        if enabled == "true":
            assert '"tool_args": "{\\"amount\\":5,\\"password\\":\\"[REDACTED]\\"}"' in done.stdout
            [trace] = read_traces(str(out))
            assert trace.tool_calls[0].args == {"amount": 5, "password": "[REDACTED]"}
        else:
            assert "tool_args" not in done.stdout and not out.exists()
