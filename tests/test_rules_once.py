"""Rules written once: a grep-level reading of ``src`` (with ``ast``) that finds a rule spelled
out again beside its one definition."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tooltrail"


def _trees() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(PACKAGE)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


TREES = _trees()


def _attributes(node: ast.AST) -> set[str]:
    return {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def test_this_score_fails_its_case_is_defined_once() -> None:
    """Required, not skipped and not passed: ``Score.failed`` says it; every other module
    asks it (a condition naming all three is a second definition)."""
    found = [
        f"{where}:{node.lineno}"
        for where, tree in TREES.items()
        for node in ast.walk(tree)
        if isinstance(node, (ast.BoolOp, ast.Compare, ast.UnaryOp))
        and {"required", "skipped", "passed"} <= _attributes(node)
    ]
    assert [where.partition(":")[0] for where in found] == ["checks/score.py"], found
