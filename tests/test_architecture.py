"""The package's layers (docs/architecture.md): no import cycle among modules, and no module
importing from a layer above its own. Imports are read with ``ast`` (every ``import`` and
``from ... import`` of ``tooltrail``, also inside functions; not those under
``if TYPE_CHECKING:``, which never run)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "tooltrail"

#: Bottom to top; a module may import from its own layer and the layers below.
LAYERS: list[tuple[str, ...]] = [
    ("model", "hints", "equality", "gc_pause", "version", "lazy", "redact"),
    ("otlp",),
    ("dialects",),
    ("convert",),
    ("suite", "judge"),
    ("checks",),
    ("evaluate", "judging"),
    ("scores",),
    ("pipeline",),
    ("live",),
    ("report", "annotate"),
    ("batch", "serve"),
    ("pytest", "pytest_plugin"),
    ("cli",),
    ("tooltrail",),  # the package's own __init__: the public API
]
LAYER_OF = {part: n for n, parts in enumerate(LAYERS) for part in parts}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(path: Path) -> set[str]:
    """The tooltrail modules ``path`` imports (a ``from pkg import name`` of a submodule
    counts as that submodule)."""
    found: set[str] = set()

    def visit(node: ast.AST, type_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            guarded = type_only or (
                isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test)
            )
            if not guarded and isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if base == "tooltrail" or base.startswith("tooltrail."):
                    for alias in child.names:
                        target = f"{base}.{alias.name}"
                        found.add(_resolve(target if target in MODULES else base) or base)
            elif not guarded and isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name == "tooltrail" or alias.name.startswith("tooltrail."):
                        found.add(_resolve(alias.name) or alias.name)
            visit(child, guarded)

    visit(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


GRAPH = {name: _imports(path) - {name} for name, path in MODULES.items()}


def _layer(module: str) -> int:
    parts = module.split(".")
    key = parts[1] if len(parts) > 1 else "tooltrail"
    if key not in LAYER_OF:
        pytest.fail(f"{module}: its package {key!r} has no layer in LAYERS (and the doc)")
    return LAYER_OF[key]


def test_every_import_goes_down_or_sideways() -> None:
    upward = [
        f"{module} (layer {_layer(module)}) imports {target} (layer {_layer(target)})"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if _layer(target) > _layer(module)
    ]
    assert upward == []


def test_no_import_cycle_among_modules() -> None:
    cycles: list[list[str]] = []
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def strong(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(GRAPH.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            strong(module)
    assert cycles == []


def test_the_layers_are_the_ones_the_architecture_page_lists() -> None:
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for parts in LAYERS[1:-1]:
        for part in parts:
            assert f"`{part}" in page, f"docs/architecture.md does not place {part!r}"
