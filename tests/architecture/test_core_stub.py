"""The compiled core's stub (``core/tooltrail_core.pyi``, shipped in its wheel and read by mypy
through ``[tool.mypy] mypy_path``) says what the module holds: the same public names (module,
classes, their methods and properties), the same parameters, and it passes mypy itself. The
comparison needs the core installed (skipped without it); the mypy run does not."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "core" / "tooltrail_core.pyi"


def _public(name: str) -> bool:
    return not name.startswith("_") or name == "__version__"


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(encoding="utf-8"))


def _names(body: list[ast.stmt]) -> dict[str, ast.stmt]:
    """The public names a module's or a class's body defines, each with its definition."""
    found: dict[str, ast.stmt] = {}
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            found[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found[node.target.id] = node
        elif isinstance(node, ast.Assign):
            found.update({t.id: node for t in node.targets if isinstance(t, ast.Name)})
    return {name: node for name, node in found.items() if _public(name)}


def _stub_parameters(node: ast.FunctionDef) -> list[tuple[str, bool]]:
    """(name, has a default) of each parameter after ``self`` / ``cls``."""
    args = node.args
    every = [*args.posonlyargs, *args.args][1:]
    defaults = [False] * (len(every) - len(args.defaults)) + [True] * len(args.defaults)
    return [(a.arg, d) for a, d in zip(every, defaults, strict=True)]


def _runtime_parameters(function: Callable[..., object], bound: bool) -> list[tuple[str, bool]]:
    parameters = list(inspect.signature(function).parameters.values())
    if bound:
        parameters = parameters[1:]
    return [(p.name, p.default is not inspect.Parameter.empty) for p in parameters]


@pytest.fixture(scope="module")
def core() -> ModuleType:
    return pytest.importorskip("tooltrail_core")


def _module_names(module: ModuleType) -> set[str]:
    """The module's API: every public name but submodules (the wheel's package holds the
    extension as ``tooltrail_core.tooltrail_core``), and ``__version__``."""
    names = {n for n in dir(module) if _public(n) and not inspect.ismodule(getattr(module, n))}
    return names | {"__version__"}


def test_the_stub_names_what_the_module_holds(core: ModuleType) -> None:
    assert set(_names(_stub().body)) == _module_names(core)
    assert set(getattr(core, "__all__", _module_names(core))) == _module_names(core)


def test_each_class_has_the_stubs_methods_and_properties(core: ModuleType) -> None:
    for name, node in _names(_stub().body).items():
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(core, name)
        runtime = {n for n in dir(cls) if _public(n)}
        stubbed = _names(node.body)
        assert set(stubbed) == runtime, name
        for member, defined in stubbed.items():
            assert isinstance(defined, ast.FunctionDef), f"{name}.{member}"
            is_property = any(
                isinstance(d, ast.Name) and d.id == "property" for d in defined.decorator_list
            )
            descriptor = inspect.getattr_static(cls, member)
            assert is_property == (type(descriptor).__name__ == "getset_descriptor"), member
            if not is_property:
                assert _stub_parameters(defined) == _runtime_parameters(
                    getattr(cls, member), bound=True
                ), f"{name}.{member}"


def test_each_constructor_takes_the_stubs_parameters(core: ModuleType) -> None:
    for name, node in _names(_stub().body).items():
        if not isinstance(node, ast.ClassDef):
            continue
        new = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__new__"]
        cls = getattr(core, name)
        if not new:  # made by the core only: Python cannot construct it
            with pytest.raises(TypeError):
                cls()
            continue
        assert _stub_parameters(new[0]) == _runtime_parameters(cls, bound=False), name


def test_the_stub_passes_mypy(tmp_path: Path) -> None:
    pytest.importorskip("mypy", reason="mypy is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), str(STUB)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
