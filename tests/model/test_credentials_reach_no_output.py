"""Issue 33, item 2, done when: credentials of every shape, put in random places of the
arguments, results, user messages and replies of generated runs, reach no output, while
ordinary ids and a Luhn-invalid digit run stay readable.

Each example writes its runs to an OTLP dump and sends them through every path that lets
trace content out: ``tooltrail eval`` in each report format (text, JSON with trajectories,
JUnit, Markdown, HTML), its evaluation events (``--annotate``, explanations on) and annotated
trace copy (``--annotate-traces``); the judge checks' requests as the scripted OpenAI-compatible
server on loopback receives them (the real ``openai`` SDK); ``tooltrail convert --content``;
and ``tooltrail serve`` with ``--dump``, ``--forward`` (to a loopback OTLP/HTTP endpoint) and a
results file with explanations. No output may hold the secret part of any credential; the
explanation of the failing ``tool_arg_values`` check still quotes the ordinary argument values
(docs/checks.md), and the dumps, prompts and converted content still carry them."""

from __future__ import annotations

import json
import string
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from credential_examples import SEPARATORS, Credential, credentials, luhn_digit
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from judge_server import JudgeServer
from serve_helpers import post
from serve_traces import PROTOBUF, body_of, new_span_id, new_trace_id
from test_serve_secrets import ForwardTarget

from tooltrail.cli import main
from tooltrail.otlp import OtlpFileWriter, Span
from tooltrail.serve import ServeConfig, start_in_thread

SUITE = """\
name: credentials
judge: {model: "openai:gpt-test", retries: 0}
cases:
  - id: support
    match: {agent_name: support_agent}
    expected_tool_arguments:
      update_account: {ref: never-this}
    evaluators:
      - name: llm_judge
        config: {rubric: The reply confirms the update.}
      - name: tool_args_judge
        config: {tool: update_account, rubric: The account reference is plausible.}
      - name: trajectory_judge
        config: {rubric: task_completed}
"""
FORMATS = ("text", "json", "junit", "markdown", "html")


@dataclass
class Run:
    """One generated run: its spans, the credentials it holds, and its ordinary values."""

    spans: list[Span]
    secrets: list[Credential]
    ordinary: list[str]


_WORDS = st.lists(
    st.sampled_from(["please", "update", "my", "account", "done", "the", "key", "is"]),
    max_size=3,
).map(" ".join)


@st.composite
def with_secrets(draw: st.DrawFn, found: list[Credential]) -> str:
    """Text of ordinary words holding zero to two credentials, each between separators."""
    pieces = [draw(_WORDS)]
    for credential in draw(st.lists(credentials(), max_size=2)):
        found.append(credential)
        pieces += [draw(st.sampled_from(SEPARATORS)), credential.text]
        pieces += [draw(st.sampled_from(SEPARATORS)), draw(_WORDS)]
    return "".join(pieces)


def messages(role: str, content: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": content}]}])


@st.composite
def runs(draw: st.DrawFn) -> Run:
    """An agent run (GenAI conventions): the user's message and the reply on the agent span,
    one or two ``update_account`` calls with arguments and results, credentials anywhere."""
    found: list[Credential] = []
    order_id = "ORD-" + draw(st.text(string.digits, min_size=4, max_size=6))
    body = "4" + draw(st.text(string.digits, min_size=14, max_size=14))
    not_a_card = body + str((int(luhn_digit(body)) + 1) % 10)  # fails the Luhn check
    trace_id, root = new_trace_id(), new_span_id()
    user = f"{draw(with_secrets(found))} about {order_id}"
    reply = f"{draw(with_secrets(found))} (ref {order_id})"
    spans = [
        Span(
            trace_id=trace_id,
            span_id=root,
            name="invoke_agent support_agent",
            start_ns=1_000,
            end_ns=9_000,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "support_agent",
                "gen_ai.input.messages": messages("user", user),
                "gen_ai.output.messages": messages("assistant", reply),
            },
        )
    ]
    for i in range(draw(st.integers(1, 2))):
        args: dict[str, object] = {"ref": order_id, "order": not_a_card}
        for key in draw(st.lists(st.sampled_from(["note", "header", "memo"]), unique=True)):
            value = draw(with_secrets(found))
            shape = draw(st.sampled_from(["text", "list", "json", "object"]))
            args[key] = {
                "text": value,
                "list": [value, order_id],
                "json": json.dumps({"inner": value}),
                "object": {"inner": value, "n": 3},
            }[shape]
        if draw(st.booleans()):
            card = draw(credentials().filter(lambda c: c.shape == "card_number"))
            if " " not in card.text:
                args["card"] = int(card.text)  # a card number as a JSON number
                found.append(card)
        result = {"status": "updated", "detail": draw(with_secrets(found))}
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=new_span_id(),
                parent_span_id=root,
                name="execute_tool update_account",
                start_ns=2_000 + 10 * i,
                end_ns=3_000 + 10 * i,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "update_account",
                    "gen_ai.tool.call.id": f"call-{i}",
                    "gen_ai.tool.call.arguments": json.dumps(args),
                    "gen_ai.tool.call.result": json.dumps(result),
                },
            )
        )
    return Run(spans=spans, secrets=found, ordinary=[order_id, not_a_card])


@pytest.fixture(scope="module")
def judge() -> Iterator[JudgeServer]:
    """The scripted judge on loopback, for the module (every example's requests are kept);
    the SDK sees a test key and its base URL, and a verdict cache under a temporary dir."""
    with pytest.MonkeyPatch.context() as env, tempfile.TemporaryDirectory() as cache:
        for name in ("OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
            env.delenv(name, raising=False)
        server = JudgeServer().start()
        env.setenv("OPENAI_API_KEY", "test-key")
        env.setenv("OPENAI_BASE_URL", server.openai_url)
        env.setenv("NO_PROXY", "127.0.0.1,localhost")
        env.setenv("XDG_CACHE_HOME", cache)
        env.setenv("TOOLTRAIL_EVALUATION_EXPLANATIONS", "true")
        for name in ("TOOLTRAIL_REDACT_DEFAULT_CREDENTIALS", "TOOLTRAIL_REDACT_CREDENTIALS_OFF"):
            env.delenv(name, raising=False)
        try:
            yield server
        finally:
            server.stop()


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code in (0, 1), result.output
    return result.output


def eval_outputs(suite: Path, dump: Path, out: Path) -> dict[str, str]:
    """Every file ``tooltrail eval`` writes, by what it is."""
    outputs: dict[str, str] = {}
    for fmt in FORMATS:
        report = out / f"report.{fmt}"
        extra = ["--trajectories"] if fmt == "json" else []
        if fmt == "text":  # one run also writes the events and the annotated traces
            extra = ["--annotate", str(out / "events.jsonl")]
            extra += ["--annotate-traces", str(out / "annotated.jsonl")]
        cli("eval", str(suite), str(dump), "--workers", "1", "-q", "--no-judge-cache",
            "--format", fmt, "--out", str(report), *extra)  # fmt: skip
        outputs[f"eval --format {fmt}"] = report.read_text(encoding="utf-8")
    outputs["evaluation events"] = (out / "events.jsonl").read_text(encoding="utf-8")
    outputs["annotated traces"] = (out / "annotated.jsonl").read_text(encoding="utf-8")
    return outputs


def serve_outputs(suite: Path, spans: list[Span], out: Path) -> dict[str, str]:
    """What ``tooltrail serve`` dumps, forwards and writes as results for these spans."""
    target = ForwardTarget()
    receiver = start_in_thread(
        ServeConfig(
            suite=suite,
            grpc_port=None,
            http_port=0,
            grace=0.05,
            dump=out / "dump.jsonl",
            forward=target.endpoint,
            results=out / "results.jsonl",
            explanations=True,
        )
    )
    try:
        assert receiver.http_port is not None
        status, _, _ = post(receiver.http_port, body_of(spans), PROTOBUF)
        assert status == 200
    finally:
        stats = receiver.stop()
        target.stop()
    assert stats["traces_forwarded"] == len({s.trace_id for s in spans})
    return {
        "serve --dump": (out / "dump.jsonl").read_text(encoding="utf-8"),
        "serve --forward": b"".join(target.bodies).decode("utf-8", "replace"),
        "serve --results": (out / "results.jsonl").read_text(encoding="utf-8"),
    }


@settings(
    max_examples=8,
    deadline=None,
    # An example runs every output path (seconds): a failure is reported as found, unshrunk.
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(batch=st.lists(runs(), min_size=1, max_size=3))
def test_no_credential_reaches_any_output(judge: JudgeServer, batch: list[Run]) -> None:
    spans = [span for run in batch for span in run.spans]
    secrets = [credential for run in batch for credential in run.secrets]
    ordinary = [value for run in batch for value in run.ordinary]
    asked = judge.count
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory)
        suite = out / "suite.yaml"
        suite.write_text(SUITE, encoding="utf-8")
        dump = out / "runs.otlp.jsonl"
        with OtlpFileWriter(dump) as writer:
            writer.write_spans(spans)
        outputs = eval_outputs(suite, dump, out)
        outputs["convert --content"] = cli("convert", "--content", str(dump))
        outputs.update(serve_outputs(suite, spans, out))
    requests = judge.requests[asked:]
    outputs["judge requests"] = "\n".join(json.dumps(r.body) for r in requests)
    assert len(requests) >= 3  # the three judges asked (verdicts of this batch not cached)

    for where, text in outputs.items():
        for credential in secrets:
            shown = [core for core in credential.cores if core in text]
            assert shown == [], f"{credential.shape} {credential.text!r} in {where}"
    # What is not a credential is still shown: the explanation quotes the arguments in one
    # pass, and the content goes on.
    for where, text in outputs.items():
        if where in ("evaluation events", "serve --results") or where.startswith("eval"):
            assert "was called with" in text, where
        for value in ordinary:
            assert value in text, f"{value!r} missing from {where}"
