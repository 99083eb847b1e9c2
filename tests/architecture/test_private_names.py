"""No module imports a private name (``_name``) of another module: what one module shares with
others is public, and what is private can change without reading the rest of the package.
Read with ``ast``: every ``from tooltrail... import _name``, also inside functions and under
``if TYPE_CHECKING:``."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tooltrail"


def _private_imports() -> set[tuple[str, str, str]]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        where = str(path.relative_to(PACKAGE))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level:
                continue
            module = node.module or ""
            if module != "tooltrail" and not module.startswith("tooltrail."):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.add((where, module, alias.name))
    return found


def test_no_module_imports_a_private_name_of_another() -> None:
    """No exceptions: the last one (the pytest plugin reading a case with the suite loader's
    ``_case``) is public now, ``suite.load.read_case``."""
    assert _private_imports() == set()
