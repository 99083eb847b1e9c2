"""Compare tooltrail's reading of a fixture with a truth file of agentevals' OTLP corpus.

The corpus lives in ``../shared/external/agentevals-otlp`` (never copied here). Its README fixes
the comparison rules: arguments compare after parsing JSON text and unwrapping ``{"result": X}``,
with ``{}``, ``""`` and ``[]`` read as nothing; texts compare after stripping whitespace.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixtures import EXTERNAL


def fixtures() -> list[Path]:
    """Every fixture with a truth file, in a stable order."""
    if not EXTERNAL.is_dir():
        return []
    return sorted(
        p.with_name(p.name[: -len(".truth.json")] + ".json") for p in EXTERNAL.rglob("*.truth.json")
    )


def fixture_id(path: Path) -> str:
    return str(path.relative_to(EXTERNAL).with_suffix(""))


def nothing_or(value: Any) -> Any:
    """A value as the truth's rules compare it."""
    if isinstance(value, (str, bytes)):
        text = value.strip() if isinstance(value, str) else value.decode().strip()
        if text[:1] in ("{", "[", '"') or text in ("true", "false", "null") or _number(text):
            try:
                value = json.loads(text)
            except ValueError:
                value = text
        else:
            value = text
    if isinstance(value, dict) and set(value) == {"result"}:
        value = nothing_or(value["result"])
    if value in ({}, "", []):
        return None
    return value


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _text(value: Any) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


@dataclass
class Verdict:
    fixture: str
    calls: bool = False
    turns: bool = False
    reply: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def right(self) -> bool:
        return self.calls and self.turns and self.reply


#: Where tooltrail deliberately differs from a truth file (docs/convert.md, "Differences from
#: other readers"): the order of parallel calls. These truths order the calls of one model
#: response by their spans' start times (microseconds apart); tooltrail keeps the order the
#: model asked for them in its ``gen_ai.output.messages``, read from the same telemetry. Each
#: entry gives, for the truth's calls in its order, their positions in the model's order.
MODEL_ORDER: dict[str, list[int]] = {
    "kagent/v1.0.0-alpha9/adk_go_1turn": [1, 0],
    "kagent/v1.0.0-alpha9/adk_go_2turn": [1, 0, 2],
}


def judge(fixture: str, truth: dict[str, Any], traces: list[Any]) -> Verdict:
    """How ``traces`` (the fixture read with ``group="conversation"``) meet ``truth``.

    A truth describes the turns of its whole file. Traces that name no conversation stay
    apart in tooltrail (a dump holds many unrelated traces), so when the truth names no
    session key, the trajectories read are compared one after the other, in input order.
    """
    verdict = Verdict(fixture)
    turns = truth["turns"]
    if len(traces) != 1 and (not traces or "session_key" in truth):
        verdict.problems.append(f"{len(traces)} conversations, expected 1")
        return verdict
    want_calls = [
        (c["name"], nothing_or(c.get("args")), bool(c.get("is_error")))
        for t in turns
        for c in t.get("tool_calls", [])
    ]
    if fixture in MODEL_ORDER:
        positions = MODEL_ORDER[fixture]
        model_order: list[Any] = [None] * len(want_calls)
        for call, position in zip(want_calls, positions, strict=True):
            model_order[position] = call
        want_calls = model_order
    extra = bool(truth.get("extra_turns_allowed"))
    got_all = [
        (c.name, nothing_or(c.args), c.status == "error") for t in traces for c in t.tool_calls
    ]
    got_calls = got_all
    if extra:  # only the listed turns are compared: the calls of turns with those user texts
        got_calls = [c for c in got_all if c in want_calls]
    verdict.calls = got_calls == want_calls
    if not verdict.calls:
        verdict.problems.append(f"calls {got_calls} != {want_calls}")
    count = sum(t.turn_count or 0 for t in traces)
    verdict.turns = count >= len(turns) if extra else count == len(turns)
    if not verdict.turns:
        verdict.problems.append(f"turns {count} != {len(turns)}")
    want_reply = _text(turns[-1].get("final_text")) if turns else None
    replies = [_text(t.output) for t in traces]
    # with extra turns allowed, the listed last turn may be any trajectory's last
    verdict.reply = want_reply in replies if extra else replies[-1] == want_reply
    if not verdict.reply:
        verdict.problems.append(f"reply {replies!r:.160} != {want_reply!r:.120}")
    return verdict


def load_truth(path: Path) -> dict[str, Any]:
    return json.loads(path.with_name(path.stem + ".truth.json").read_text())


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def split_fixture(path: Path, out: Path, framing: str) -> list[Path]:
    """The fixture's spans and log records as two files, the way a collector's file exporter
    writes them: ``framing`` ``"jsonl"`` (one OTLP/JSON line each) or ``"pb"`` (length-prefixed
    protobuf requests). A fixture without log records gives one file."""
    doc = json.loads(path.read_text())
    parts = [("traces", "resourceSpans"), ("logs", "resourceLogs")]
    written = []
    for name, key in parts:
        if not doc.get(key):
            continue
        target = out / f"{path.stem}.{name}.{'jsonl' if framing == 'jsonl' else 'pb'}"
        part = {key: doc[key]}
        if framing == "jsonl":
            target.write_text(json.dumps(part) + "\n")
        else:
            target.write_bytes(_framed_protobuf(part, name))
        written.append(target)
    return written


def _framed_protobuf(part: dict[str, Any], signal: str) -> bytes:
    import base64

    from google.protobuf import json_format
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    def base64_ids(value: Any) -> Any:  # OTLP/JSON writes ids in hex, protobuf JSON in base64
        if isinstance(value, dict):
            return {
                k: base64.b64encode(bytes.fromhex(v)).decode()
                if k in _ID_KEYS and isinstance(v, str)
                else base64_ids(v)
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [base64_ids(v) for v in value]
        return value

    message = ExportTraceServiceRequest() if signal == "traces" else ExportLogsServiceRequest()
    json_format.ParseDict(base64_ids(part), message, ignore_unknown_fields=True)
    data = message.SerializeToString()
    return len(data).to_bytes(4, "big") + data
