"""``serve`` and ``live`` each stand on ``pipeline`` and below, and take nothing private.

``serve`` once took its redaction from ``live.config`` and dressed its spans as SDK spans
through a private name of ``serve.intake`` (``_TraceIds``, read by ``serve.kept``). Now the
redaction settings are ``tooltrail.settings`` (layer 0), the redaction of whole spans is
``pipeline.span_redaction``, and the buffer's item shape is ``pipeline.buffer.Traced``.
No private name crosses modules anywhere: ``tests/architecture/test_private_names.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tooltrail"


def imports(path: Path) -> list[tuple[str, str]]:
    """``(module, name)`` of every ``from tooltrail... import name`` in ``path``."""
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tooltrail"):
            found.extend((node.module or "", alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.extend(
                (alias.name, "") for alias in node.names if alias.name.startswith("tooltrail")
            )
    return found


def test_serve_takes_nothing_from_live() -> None:
    taken = [
        (path.name, module)
        for path in (PACKAGE / "serve").glob("*.py")
        for module, _ in imports(path)
        if module == "tooltrail.live" or module.startswith("tooltrail.live.")
    ]
    assert taken == []
