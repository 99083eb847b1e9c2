"""The package's layers (docs/architecture.md): no import cycle among modules, no module
importing from a layer above its own, and none importing what its row's "it may use" column
does not name. Imports are read with ``ast`` (every ``import`` and
``from ... import`` of ``tooltrail``, also inside functions; not those under
``if TYPE_CHECKING:``, which never run). Inside ``otlp``: its three wings and what each may
use (type-only imports count there), no private names across its modules, and two greps: a
length prefix is read only in ``otlp/read``, an id's length written only in
``otlp/decode/ids.py``."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from import_graphs import cycles

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tooltrail"

#: Bottom to top; a module may import from its own layer and the layers below.
LAYERS: list[tuple[str, ...]] = [
    (
        "model",
        "hints",
        "equality",
        "gc_pause",
        "version",
        "lazy",
        "credentials",
        "redact",
        "settings",
        "trials",
        "results",
        "registries",
        "config_error",
    ),
    ("otlp",),
    ("dialects",),
    ("convert",),
    ("suite", "judge"),
    ("checks",),
    ("score", "labels", "agreement", "sampling", "origins"),
    ("scores",),
    ("pipeline",),
    ("live",),
    ("report", "annotate"),
    ("batch", "serve"),
    ("pytest", "pytest_plugin"),
    ("cli",),
    ("tooltrail", "__main__"),  # the package's own __init__: the public API; python -m
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
    assert cycles(GRAPH) == []


def test_the_layers_are_the_ones_the_architecture_page_lists() -> None:
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    for parts in LAYERS[1:-1]:
        for part in parts:
            assert f"`{part}" in page, f"docs/architecture.md does not place {part!r}"


# --- the narrower "it may use" column of the layer table ---------------------------------------


@dataclass(frozen=True)
class MayUse:
    """What one row's "it may use" cell allows a package: whole layers, layers only some of
    its modules may use (``3 (`reference`)``: only ``checks.reference`` uses layer 3), and
    packages named one by one (layer 0's ``(`settings`: `redact`)``)."""

    layers: frozenset[int] = frozenset()
    layers_for: tuple[tuple[int, frozenset[str]], ...] = ()
    packages: frozenset[str] = frozenset()

    def allows(self, module: str, target: str) -> bool:
        layer, inner = _layer(target), module.split(".")[2] if module.count(".") > 1 else ""
        return (
            layer in self.layers
            or any(
                layer == n and (inner in only or f"{_package(module)}.{inner}" in only)
                for n, only in self.layers_for
            )
            or _package(target) in self.packages
        )


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "tooltrail"


def _layer_span(text: str) -> set[int]:
    low, _, high = text.strip().partition("-")
    return set(range(int(low), int(high or low) + 1))


def _may_use(cell: str, package: str) -> MayUse:
    """One package's reading of a row's cell: "0-7", "0, 3 (`reference`), 4",
    "0-10 (`serve`: 0-8)", "layer 0", "nothing of tooltrail (`settings`: `redact`)", "all"."""
    if cell == "all":
        return MayUse(layers=frozenset(range(len(LAYERS))))
    for name, spec in re.findall(r"\(`(\w+)`: ([^)]*)\)", cell):
        if name == package:
            named = re.findall(r"`(\w+)`", spec)
            return MayUse(packages=frozenset(named)) if named else _may_use(spec, package)
    cell = re.sub(r"\(`\w+`: [^)]*\)", "", cell).strip()
    if cell.startswith("nothing of tooltrail"):
        return MayUse()
    layers: set[int] = set()
    layers_for: list[tuple[int, frozenset[str]]] = []
    for item in cell.removeprefix("layer ").split(","):
        span, _, only = item.partition("(")
        if only:
            modules = frozenset(re.findall(r"`([\w.]+)`", only))
            layers_for += [(n, modules) for n in sorted(_layer_span(span))]
        else:
            layers |= _layer_span(span)
    return MayUse(layers=frozenset(layers), layers_for=tuple(layers_for))


def _layer_rows() -> dict[str, MayUse]:
    """Each package of the page's layer table, with what its row says it may use."""
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows: dict[str, MayUse] = {}
    for line in page.split("## The layers", 1)[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].isdigit():
            for package in re.findall(r"`([\w/]+)`", cells[1]):
                key = "tooltrail" if package == "tooltrail/__init__" else package
                rows[key] = _may_use(cells[3], key)
    return rows


def test_the_may_use_column_is_read_for_every_package() -> None:
    rows = _layer_rows()
    assert set(rows) == set(LAYER_OF)
    assert rows["checks"] == MayUse(
        layers=frozenset({0, 4}), layers_for=((3, frozenset({"reference"})),)
    )
    assert rows["serve"] == MayUse(layers=frozenset(range(9)))
    assert rows["settings"] == MayUse(packages=frozenset({"redact"}))


def test_every_import_is_one_its_rows_may_use_column_allows() -> None:
    """The narrower column: not only no import upward, but none the row does not name (a
    package always uses its own modules)."""
    rows = _layer_rows()
    wrong = [
        f"{module} imports {target} (layer {_layer(target)})"
        for module, targets in sorted(GRAPH.items())
        for target in sorted(targets)
        if _package(target) != _package(module)
        and not rows[_package(module)].allows(module, target)
    ]
    assert wrong == []


# --- the otlp package: three wings (docs/architecture.md, "The otlp package") ---------------

OTLP = "tooltrail.otlp"
#: Each wing of ``otlp`` and the wings it may use. ``tooltrail.otlp`` itself (its
#: ``__init__``) is the public facade and may use all three.
OTLP_WINGS: dict[str, frozenset[str]] = {
    "decode": frozenset(),
    "write": frozenset({"decode"}),
    "read": frozenset({"decode"}),
}


def _otlp_imports(path: Path) -> set[str]:
    """The otlp modules ``path`` imports, those under ``if TYPE_CHECKING:`` too: a type-only
    import is still a dependency, and the wings' graph must not need one to be acyclic."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(OTLP):
            base = node.module or ""
            for alias in node.names:
                target = f"{base}.{alias.name}"
                found.add(_resolve(target if target in MODULES else base) or base)
        elif isinstance(node, ast.Import):
            found.update(_resolve(a.name) or a.name for a in node.names if a.name.startswith(OTLP))
    return found


OTLP_MODULES = {name: path for name, path in MODULES.items() if name.startswith(OTLP)}
OTLP_GRAPH = {name: _otlp_imports(path) - {name} for name, path in OTLP_MODULES.items()}


def _wing(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 else None


def test_every_otlp_module_is_in_a_wing() -> None:
    stray = [m for m in OTLP_MODULES if m != OTLP and _wing(m) not in OTLP_WINGS]
    assert stray == []


def test_an_otlp_wing_uses_only_the_wings_it_may() -> None:
    wrong = [
        f"{module} ({_wing(module)}) imports {target}"
        for module, targets in sorted(OTLP_GRAPH.items())
        if module != OTLP
        for target in sorted(targets)
        if _wing(target) != _wing(module) and _wing(target) not in OTLP_WINGS[_wing(module) or ""]
    ]
    assert wrong == []


def test_no_import_cycle_in_otlp_counting_type_only_imports() -> None:
    assert cycles(OTLP_GRAPH) == []


def test_the_otlp_graph_sees_a_cycle_through_a_type_only_import() -> None:
    """The checker itself: a span type that named its encoder for typing alone (as
    ``span.py`` once did) closes a circle this test must see."""
    graph = {k: set(v) for k, v in OTLP_GRAPH.items()}
    graph[f"{OTLP}.decode.span"].add(f"{OTLP}.write.encode")
    pair = {f"{OTLP}.decode.span", f"{OTLP}.write.encode"}
    assert any(pair <= set(cycle) for cycle in cycles(graph))


def _private_imports(path: Path) -> list[str]:
    """``from tooltrail.x import _name`` of an otlp module, or inside otlp of any module."""
    inside = _module_name(path).startswith(OTLP)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tooltrail"):
            if inside or (node.module or "").startswith(OTLP):
                found += [
                    f"{node.module}.{a.name}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    return found


def test_no_private_name_of_otlp_is_imported_and_otlp_imports_none() -> None:
    found = {name: names for name, path in MODULES.items() if (names := _private_imports(path))}
    assert found == {}


# --- grep-level: one place for a length prefix, one for an id's length -----------------------

SRC = PACKAGE.parent
#: A 4-byte big-endian integer read from bytes: how a length prefix is read.
PREFIX_READ = re.compile(
    r"""int\.from_bytes\(|Struct\(\s*["'][>!]I["']\s*\)|unpack(_from)?\(\s*["'][>!]I"""
)
#: Reads of a 4-byte big-endian integer that are not a length prefix, by file and exact line.
NOT_A_PREFIX = {
    "tooltrail/serve/shard.py": 'return int.from_bytes(trace_id[-4:], "big") % workers',
}


def _lines(path: Path) -> list[tuple[int, str]]:
    return list(enumerate(path.read_text(encoding="utf-8").splitlines(), 1))


def test_a_length_prefix_is_read_only_in_otlp_read() -> None:
    found = [
        f"{rel}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not (rel := path.relative_to(SRC).as_posix()).startswith("tooltrail/otlp/read/")
        for n, line in _lines(path)
        if PREFIX_READ.search(line) and NOT_A_PREFIX.get(rel) != line.strip()
    ]
    assert found == []


#: An id's length written as a number: 32 or 16 (hex digits of a trace or span id, bytes of
#: a trace id), not a bit width ("32-bit").
ID_LENGTH = re.compile(r"(?<![\w.])(32|16)(?![\w.-])")
ID_WORD = re.compile(r"(?i)trace_?id|span_?id|parent|\bids?\b|hex|_id\b")


def test_an_ids_length_is_written_only_in_the_id_module() -> None:
    """The literals for an id's length appear in ``otlp/decode/ids.py`` only: elsewhere a
    line that names an id and holds 32, 16 or 8 (not in a comment) is a second copy of
    the rule. ``int(x, 16)`` (a base) is not a length. Checked: this finds the bare 32/16 of
    ``jsontyped.py`` and ``census.py`` on main."""
    found = [
        f"{rel}:{n}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if (rel := path.relative_to(SRC).as_posix()) != "tooltrail/otlp/decode/ids.py"
        for n, line in _lines(path)
        if ID_WORD.search(code := line.split("#")[0])
        and ID_LENGTH.search(code.replace(", 16)", ")"))
    ]
    assert found == []


def test_the_architecture_page_lists_each_wing_its_modules_and_what_it_may_use() -> None:
    page = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    rows = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and re.fullmatch(r"`otlp/(\w+)`", cells[0]):
            rows[cells[0][6:-1]] = cells
    assert rows.keys() == OTLP_WINGS.keys()
    for wing, (_, modules, _, may_use) in rows.items():
        listed = set(re.findall(r"`(\w+)`", modules))
        actual = {m.split(".")[3] for m in OTLP_MODULES if _wing(m) == wing and m.count(".") > 2}
        assert listed == actual, wing
        assert set(re.findall(r"`(\w+)`", may_use)) == OTLP_WINGS[wing], wing
