"""The refund example's dump (examples/refund/runs.otlp.jsonl) with runs changed: a tool call's
arguments, a run's case-id tag. Real OTLP/JSON lines, edited as data, read by the real reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fixtures import REFUND_DUMP, REFUND_SUITE

__all__ = ["REFUND_DUMP", "REFUND_SUITE", "refund_variant"]

ARG_KEYS = ("gen_ai.tool.call.arguments", "tool_args")


def _spans(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        span
        for resource in document.get("resourceSpans", [])
        for scope in resource.get("scopeSpans", [])
        for span in scope.get("spans", [])
    ]


def _case_id(spans: list[dict[str, Any]]) -> str | None:
    for span in spans:
        for attribute in span.get("attributes", []):
            if attribute["key"] == "tooltrail.case_id":
                return str(attribute["value"]["stringValue"])
    return None


def refund_variant(
    out: Path,
    *,
    arguments: dict[tuple[str, str], dict[str, Any]] | None = None,
    rename: dict[str, str] | None = None,
) -> Path:
    """Write the refund dump to ``out`` with ``arguments[(run, tool)]`` as that run's call
    arguments and ``rename[run]`` as that run's ``tooltrail.case_id`` tag (its row label)."""
    arguments = arguments or {}
    rename = rename or {}
    lines = []
    for line in REFUND_DUMP.read_text().splitlines():
        document = json.loads(line)
        spans = _spans(document)
        run = _case_id(spans)
        for span in spans:
            tool = span["name"].removeprefix("execute_tool ")
            for attribute in span.get("attributes", []):
                if attribute["key"] in ARG_KEYS and (run, tool) in arguments:
                    text = json.dumps(arguments[(run, tool)])
                    attribute["value"] = {"stringValue": text}
                if attribute["key"] == "tooltrail.case_id" and run in rename:
                    attribute["value"] = {"stringValue": rename[run]}
        lines.append(json.dumps(document))
    out.write_text("\n".join(lines) + "\n")
    return out
