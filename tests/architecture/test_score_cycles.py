"""No import circle among the modules of ``checks`` and of ``score``, counting every import:
those inside functions and those under ``if TYPE_CHECKING:`` too (the layer test leaves the
latter out). A check that names the registry for a type only (``config_problem(config,
registry)``) must not close a circle with the registry that imports it: it names
``checks.entries.CheckLookup`` instead."""

from __future__ import annotations

import ast
from pathlib import Path

from import_graphs import cycles

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tooltrail"
#: The packages whose modules' imports, all of them, must not make a circle.
PACKAGES = ("checks", "score")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {
    _module_name(p): p for package in PACKAGES for p in sorted((PACKAGE / package).rglob("*.py"))
}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def every_import(path: Path) -> set[str]:
    """The modules of ``MODULES`` that ``path`` imports anywhere: at module level, inside a
    function, under ``if TYPE_CHECKING:`` (a ``from pkg import name`` of a submodule counts as
    that submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                target = f"{node.module}.{alias.name}"
                found.add(_resolve(target if target in MODULES else node.module) or "")
        elif isinstance(node, ast.Import):
            found.update(_resolve(alias.name) or "" for alias in node.names)
    found.discard("")
    return found


GRAPH = {name: every_import(path) - {name} for name, path in MODULES.items()}


def test_the_graph_reads_the_modules_of_both_packages() -> None:
    assert "tooltrail.checks.registry" in GRAPH and "tooltrail.score.runner" in GRAPH
    assert "tooltrail.checks.scorers" in GRAPH["tooltrail.checks.registry"]


def test_no_import_circle_in_checks_or_score_counting_every_import() -> None:
    assert cycles(GRAPH) == []


def test_a_type_only_import_of_the_registry_would_be_seen(tmp_path: Path) -> None:
    """The checker itself: ``checks/judges.py`` naming the registry under ``TYPE_CHECKING``
    (as it did) closes judges -> registry -> scorers -> judges, which this must see."""
    planted = tmp_path / "judges.py"
    planted.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tooltrail.checks.registry import Registry\n",
        encoding="utf-8",
    )
    graph = {k: set(v) for k, v in GRAPH.items()}
    graph["tooltrail.checks.judges"] |= every_import(planted)
    assert any(
        {"tooltrail.checks.judges", "tooltrail.checks.registry"} <= set(c) for c in cycles(graph)
    )


def test_a_function_level_import_would_be_seen(tmp_path: Path) -> None:
    """An import inside a function counts too: the plans importing the runner to run a case
    close plans -> runner -> plans."""
    planted = tmp_path / "plans.py"
    planted.write_text(
        "def run():\n    from tooltrail.score.runner import evaluate_trace\n", encoding="utf-8"
    )
    graph = {k: set(v) for k, v in GRAPH.items()}
    graph["tooltrail.score.plans"] |= every_import(planted)
    assert any({"tooltrail.score.plans", "tooltrail.score.runner"} <= set(c) for c in cycles(graph))
