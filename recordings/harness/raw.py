"""The raw OTLP/JSON files a recording wrote, read back without tooltrail: what the recording
scripts check their ``telemetry_holds`` against."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def spans_of(folder: Path, scenario: str) -> list[dict[str, Any]]:
    """Every span of ``<scenario>.otlp.jsonl``, as OTLP/JSON objects."""
    spans: list[dict[str, Any]] = []
    for line in (folder / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
        for rs in json.loads(line).get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                spans.extend(ss.get("spans", []))
    return spans


def logs_of(folder: Path, scenario: str) -> list[dict[str, Any]]:
    """Every log record of ``<scenario>.logs.otlp.jsonl`` (none when there is no such file)."""
    path = folder / f"{scenario}.logs.otlp.jsonl"
    if not path.exists():
        return []
    logs: list[dict[str, Any]] = []
    for line in path.read_text("utf-8").splitlines():
        for rl in json.loads(line).get("resourceLogs", []):
            for sl in rl.get("scopeLogs", []):
                logs.extend(sl.get("logRecords", []))
    return logs


def attrs_of(item: dict[str, Any]) -> dict[str, Any]:
    """A span's (or event's) attributes as plain ``key -> value``."""
    out = {}
    for kv in item.get("attributes", []):
        value = kv.get("value", {})
        out[kv["key"]] = next(iter(value.values()), None) if value else None
    return out


def json_values(blob: Any) -> list[Any]:
    """Every value in a JSON text, recursively decoding JSON strings inside it."""
    if not isinstance(blob, str) or not blob:
        return []
    try:
        root = json.loads(blob)
    except ValueError:
        return []
    found: list[Any] = []

    def walk(node: Any) -> None:
        found.append(node)
        if isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str) and node[:1] in "{[":
            try:
                walk(json.loads(node))
            except ValueError:
                pass

    walk(root)
    return found
