"""Rules written once: a grep-level reading of ``src`` (with ``ast``) that finds a rule spelled
out again beside its one definition."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tooltrail"


def _trees() -> dict[str, ast.Module]:
    return {
        str(path.relative_to(PACKAGE)): ast.parse(path.read_text(encoding="utf-8"))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


TREES = _trees()


def _attributes(node: ast.AST) -> set[str]:
    """The attributes ``node`` reads: ``x.name``, and ``getattr(x, "name", ...)`` too (how a
    module that may not import the class spelled the rule again)."""
    names = {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id == "getattr"
            and len(n.args) >= 2
            and isinstance(n.args[1], ast.Constant)
            and isinstance(n.args[1].value, str)
        ):
            names.add(n.args[1].value)
    return names


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
    assert [where.partition(":")[0] for where in found] == ["results/score.py"], found


#: Modules still telling spans from log records themselves: ``serve``'s and the span
#: redaction's, whose span shape and place are being redrawn (issue 24, "one span shape");
#: to be emptied when that lands.
LOG_RECORD_TESTS_ALLOWED = {
    "pipeline/span_redaction.py",
    "serve/forward.py",
    "serve/kept.py",
    "serve/sinks.py",
}


def _names_log_record(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "LogRecord" for n in ast.walk(node))


def test_a_span_is_told_from_a_log_record_in_one_place() -> None:
    """``convert.decoded.is_log_record`` is the test (a ``TypeIs``: both branches type-check);
    a class comparison or an ``isinstance`` against ``LogRecord`` elsewhere is a second one.
    ``otlp``, which makes log records, is not asked."""
    found = set()
    for where, tree in TREES.items():
        if where.startswith("otlp/") or where == "convert/decoded.py":
            continue
        for node in ast.walk(tree):
            compared = isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops
            )
            tested = (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "type")
            )
            if (compared or tested) and _names_log_record(node):
                found.add(where)
    assert found == LOG_RECORD_TESTS_ALLOWED


def test_telling_them_apart_needs_no_type_ignore() -> None:
    """The three readers that feed spans and log records to the collector type-check as they
    are written."""
    for where in ("convert/reading.py", "convert/__init__.py", "batch/tasks.py"):
        text = (PACKAGE / where).read_text(encoding="utf-8")
        ignored = [
            line
            for line in text.splitlines()
            if "type: ignore" in line and ("add_log(" in line or "collector.add(" in line)
        ]
        assert ignored == [], where
