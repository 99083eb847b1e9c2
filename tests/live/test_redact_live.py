"""Issue 22 in the agent process: ``tooltrail.live.install`` with a dump, inline evaluation and
explanations on. Secrets in nested shapes reach neither the dump nor the results file (whose
explanations quote the call). Failed before the fix: the processor passed the nested shapes on,
and the inline evaluator's explanations quoted them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from tooltrail.live import ENVIRONMENT, install, tool

SECRETS = ("pw-white-space-1", "pw-literal-2", "pw-key-value-3", "pw-deep-4")
ARGS = {
    "user": "alice",
    "payload": " " + json.dumps({"password": SECRETS[0]}),
    "legacy": repr({"api_key": SECRETS[1]}),
    "query": f"user=alice&password={SECRETS[2]}",
    "deep": {"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": json.dumps({"ssn": SECRETS[3]})}}}}}}}},
}
SUITE = """\
name: logins
cases:
  - id: login
    match: all
    expected_tool_arguments:
      login: {user: bob}
"""


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TOOLTRAIL_EVALUATION_EXPLANATIONS", "true")


def test_live_dump_and_inline_results_hold_no_nested_secret(tmp_path: Path) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    dump, results = tmp_path / "dump.otlp.jsonl", tmp_path / "results.jsonl"
    provider = TracerProvider()
    install(provider=provider, out=str(dump), suite=str(suite), results=str(results))
    tracer = provider.get_tracer("agent")
    with tracer.start_as_current_span(
        "invoke_agent login_agent",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "login_agent"},
    ):
        with tool("login", ARGS, tracer=tracer):
            pass
    provider.shutdown()
    [line] = results.read_text(encoding="utf-8").splitlines()
    [explanation] = [s["explanation"] for r in json.loads(line)["results"] for s in r["scores"]]
    assert "alice" in explanation and "[REDACTED]" in explanation
    for where, text in (("dump", dump.read_text(encoding="utf-8")), ("results", line)):
        assert "alice" in text
        for secret in SECRETS:
            assert secret not in text, (secret, where)
