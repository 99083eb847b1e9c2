"""The compiled core's modules (``core/src``, docs/core-path.md): no module imports another
that imports it back, and PyO3 is named only by the bindings (``core/src/py/``), so that the
engine (every other module) stays Rust that knows nothing of Python.

The module graph is read from the sources, one node per file (a folder module counts as its
files: ``facts.rs`` and ``facts/events.rs`` are two): an edge for each ``mod name;`` (the
parent to its file), each path through ``crate::``, ``super::`` or ``self::`` (in ``use``
trees and in code), and each ``use`` of a child module by its bare name. A path ends at the
deepest file module it names (``crate::facts::output::ModelCall`` is ``facts/output.rs``). An
inline module (``mod tests { ... }``) belongs to its file; ``super`` inside it is that file.
Comments, strings and character literals are left out before reading."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from import_graphs import cycles

SOURCE = Path(__file__).resolve().parents[2] / "core" / "src"
#: The folder of the bindings: the only files that may name PyO3.
BINDINGS = "py"
#: The crate root: it may only declare the bindings' module (``mod py;``).
ROOT_FILE = "lib.rs"

Graph = dict[str, set[str]]
Module = tuple[str, ...]

_CHAR = re.compile(r"""b?'(?:\\u\{[0-9a-fA-F]{1,6}\}|\\x[0-9a-fA-F]{2}|\\.|[^'\\\n])'""")
_RAW = re.compile(r'b?r(#*)"')
_MOD = re.compile(r"\bmod\s+(\w+)\s*([;{])")
_USE = re.compile(r"\buse\s+([^;]*);")
_PATH = re.compile(r"\b(?:crate|super|self)(?:\s*::\s*\w+)+")
_PYO3 = re.compile(r"\bpyo3\b|#\[\s*py(?:class|methods|function|module)\b")


def strip(code: str) -> str:
    """``code`` with comments, string and character literals blanked (newlines kept): what
    they hold is no path."""
    out: list[str] = []
    i, n = 0, len(code)
    while i < n:
        if code.startswith("//", i):
            end = code.find("\n", i)
            i = n if end < 0 else end
            continue
        if code.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if code.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif code.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
            out.append(" ")
            continue
        raw = _RAW.match(code, i)
        if raw and (i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            close = '"' + raw.group(1)
            end = code.find(close, raw.end())
            i = n if end < 0 else end + len(close)
            out.append('""')
            continue
        if code[i] == '"':
            i += 1
            while i < n and code[i] != '"':
                i += 2 if code[i] == "\\" else 1
            i += 1
            out.append('""')
            continue
        char = _CHAR.match(code, i) if code[i] in "'b" else None
        if char and (code[i] == "'" or i == 0 or not (code[i - 1].isalnum() or code[i - 1] == "_")):
            i = char.end()
            out.append("' '")
            continue
        out.append(code[i])
        i += 1
    return "".join(out)


def module_of(path: str) -> Module:
    """The module a file under ``src`` is: ``lib.rs`` the crate, ``x.rs`` and ``x/mod.rs``
    ``x``, ``x/y.rs`` ``x::y``."""
    parts = path.removesuffix(".rs").split("/")
    if parts[-1] in ("lib", "mod"):
        parts.pop()
    return tuple(parts)


def name_of(module: Module) -> str:
    return "::".join(module) or "crate"


def _use_paths(tree: str) -> Iterable[str]:
    """The paths of one ``use`` tree (``a::{b, c::{d, e}}`` is ``a::b``, ``a::c::d``, ...)."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+\w+", "", tree))
    depth, start = 0, None
    for at, c in enumerate(tree):
        if c == "{":
            if depth == 0:
                start = at
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0 and start is not None:
                prefix, inner, rest = tree[:start], tree[start + 1 : at], tree[at + 1 :]
                pieces, level, piece = [], 0, ""
                for d in inner:
                    level += d == "{"
                    level -= d == "}"
                    if d == "," and level == 0:
                        pieces.append(piece)
                        piece = ""
                    else:
                        piece += d
                pieces.append(piece)
                for one in pieces:
                    if one:
                        yield from _use_paths(prefix + one + rest)
                return
    yield tree.removesuffix("::*").removesuffix("::self")


def _resolve(
    segments: list[str], here: Module, inline: Module, children: set[str], modules: set[Module]
) -> Module | None:
    """The file module a path written in file ``here`` (inside its inline modules
    ``inline``) ends at; ``None`` for a path into another crate or to a local name."""
    if segments[0] == "crate":
        at: Module = ()
        segments = segments[1:]
    elif segments[0] in ("super", "self"):
        at = here + inline
        while segments and segments[0] in ("super", "self"):
            if segments.pop(0) == "super":
                if not at:
                    return None
                at = at[:-1]
    elif segments[0] in children and not inline:
        at = here
    else:
        return None  # an outside crate (std, pyo3, serde) or a local name
    for segment in segments:
        if at + (segment,) not in modules:
            break
        at = at + (segment,)
    while at not in modules:  # a path into an inline module: its file
        at = at[:-1]
    return at


def _inline_scopes(code: str) -> list[tuple[int, Module]]:
    """Where each run of inline modules (``mod name { ... }``) starts: (offset, the names
    of the inline modules the code from there is in)."""
    marks = {m.start(): m.group(1) for m in _MOD.finditer(code) if m.group(2) == "{"}
    inline: list[tuple[str, int]] = []
    depth = 0
    scopes: list[tuple[int, Module]] = [(0, ())]
    for at, c in enumerate(code):
        if at in marks:
            inline.append((marks[at], depth + 1))
        if c == "{":
            depth += 1
        elif c == "}":
            if inline and inline[-1][1] == depth:
                inline.pop()
            depth -= 1
        names = tuple(name for name, _ in inline)
        if scopes[-1][1] != names:
            scopes.append((at, names))
    return scopes


def _scope_at(scopes: list[tuple[int, Module]], position: int) -> Module:
    found: Module = ()
    for start, names in scopes:
        if start > position:
            break
        found = names
    return found


def _targets(path: str, text: str, modules: set[Module]) -> set[Module]:
    """The file modules one file declares (``mod name;``) or names in a path."""
    here = module_of(path)
    code = strip(text)
    children = {name for name, end in _MOD.findall(code) if end == ";"}
    scopes = _inline_scopes(code)
    found = {here + (name,) for name in children} & modules
    written = [(p, use.start()) for use in _USE.finditer(code) for p in _use_paths(use.group(1))]
    written += [(re.sub(r"\s+", "", m.group()), m.start()) for m in _PATH.finditer(code)]
    for one, position in written:
        inline = _scope_at(scopes, position)
        target = _resolve(one.split("::"), here, inline, children, modules)
        if target is not None and target != here:
            found.add(target)
    return found


def graph(sources: Mapping[str, str]) -> Graph:
    """The module graph of ``sources`` (a path under ``src`` -> its text): each file's name
    (``name_of``) -> the names of the other files it uses or declares."""
    modules = {module_of(path) for path in sources}
    return {
        name_of(module_of(path)): {name_of(t) for t in _targets(path, text, modules)}
        for path, text in sources.items()
    }


def pyo3_outside_bindings(sources: Mapping[str, str]) -> list[str]:
    """``path:line`` of every mention of PyO3 (the crate, its attribute macros) outside the
    bindings' folder; the crate root's ``mod py;`` is not one."""
    found = []
    for path, text in sorted(sources.items()):
        if path.startswith(BINDINGS + "/"):
            continue
        for number, line in enumerate(strip(text).splitlines(), 1):
            if _PYO3.search(line):
                found.append(f"{path}:{number}: {line.strip()}")
    return found


def read_sources(root: Path = SOURCE) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(root.rglob("*.rs"))
    }


SOURCES = read_sources()
GRAPH = graph(SOURCES)


def test_the_core_has_no_module_cycle() -> None:
    assert cycles(GRAPH) == []


def test_pyo3_is_named_only_by_the_bindings() -> None:
    assert pyo3_outside_bindings(SOURCES) == []
    assert any(_PYO3.search(strip(t)) for p, t in SOURCES.items() if p.startswith("py/"))


def test_the_engine_does_not_use_the_bindings() -> None:
    """Only the crate root reaches the bindings (declaring them): the engine's modules are
    the same library without them (the fuzz targets and ``cargo test`` use it so)."""
    users = sorted(
        module
        for module, targets in GRAPH.items()
        if module.split("::")[0] != BINDINGS and any(t.split("::")[0] == BINDINGS for t in targets)
    )
    assert users == ["crate"]
    root = strip(SOURCES[ROOT_FILE])
    assert re.findall(rf"\bmod\s+{BINDINGS}\b[^;]*;", root) == [f"mod {BINDINGS};"]


def test_the_graph_sees_each_kind_of_edge() -> None:
    """The reading of the real sources finds what they hold: ``mod`` lines, ``crate::``
    paths in ``use`` trees, ``super::`` to a sibling file."""
    assert {"build", "py", "facts", "values"} <= GRAPH["crate"]
    assert {"facts::events", "facts::listed", "facts::output", "tools", "values"} <= GRAPH["facts"]
    assert "facts::output" in GRAPH["facts::events"]
    assert "facts" not in GRAPH["facts::events"]
    assert {"py::coretrace", "py::handles", "build"} <= GRAPH["py::builder"]


def test_the_cycle_finder_sees_a_planted_circle() -> None:
    planted = {"a": {"b"}, "b": {"a", "c"}, "c": set()}
    assert cycles(planted) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []


def test_a_circle_written_in_rust_is_found() -> None:
    """Two files that use each other (one by ``crate::``, one by ``super::`` to its sibling),
    a child using its parent, and what is no edge: an inline module's ``super``, a path in a
    comment or a string, an outside crate."""
    sources = {
        "lib.rs": "pub mod a;\nmod b;\nmod d;\n",
        "a.rs": "use crate::b::{self, Thing as Other};\nfn f() { b::g() }\n",
        "b.rs": 'use super::a::f;\nconst S: &str = "crate::d::x"; // crate::d\n',
        "d.rs": "mod inner;\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use std::fmt;\n}\n",
        "d/inner.rs": "use super::helper;\nfn g<'a>(c: char) -> bool { c == '{' }\n",
    }
    edges = graph(sources)
    assert edges == {
        "crate": {"a", "b", "d"},
        "a": {"b"},
        "b": {"a"},
        "d": {"d::inner"},
        "d::inner": {"d"},
    }
    assert cycles(edges) == [["a", "b"], ["d", "d::inner"]]
    assert pyo3_outside_bindings({"x.rs": "use pyo3::prelude::*;", "py/y.rs": "use pyo3;"}) == [
        "x.rs:1: use pyo3::prelude::*;"
    ]
