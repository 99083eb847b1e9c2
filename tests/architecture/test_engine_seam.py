"""The trace engine is one seam (docs/architecture.md, "The trace engine"): the one module
that names either engine is ``convert/engine.py``, and ``otlp`` decodes records into spans and
log records knowing nothing of the converter, not even as a type.

Read as source text and with ``ast``: the names of the engine's choice and modes, the core's
module, and the converter's types of what the core hands out."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tooltrail"
ENGINE = PACKAGE / "convert" / "engine.py"

#: Names only the engine module may say: the choice, its switch, the modes and the core module.
ENGINE_NAMES = re.compile(
    r"\b(READ_FACTS|READ_PARTS|core_module|core_classes|tooltrail_core|TOOLTRAIL_CORE|CORE_ENV)\b"
)
#: The converter's types (what the core hands the converter, and what it builds).
CONVERTER_TYPES = re.compile(r"\b(FactSpan|TracePart|CoreTrace|SpanFact|TraceFacts|EvalTrace)\b")


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def names_outside_engine(paths: list[Path]) -> list[str]:
    """``path:line: name`` for each engine name said outside the engine module."""
    found = []
    for path in paths:
        if path == ENGINE:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in ENGINE_NAMES.finditer(line):
                found.append(f"{path.name}:{number}: {match.group(1)}")
    return found


def test_only_the_engine_module_names_either_engine() -> None:
    assert names_outside_engine(_modules()) == []


def test_the_name_check_sees_a_core_named_elsewhere(tmp_path: Path) -> None:
    """The check can fail: a module that imports the core itself is found."""
    stray = tmp_path / "stray.py"
    stray.write_text("import tooltrail_core\nmode = READ_PARTS\n", encoding="utf-8")
    assert [line.split(": ")[1] for line in names_outside_engine([stray])] == [
        "tooltrail_core",
        "READ_PARTS",
    ]


def otlp_mentions_of_converter_types(paths: list[Path]) -> list[str]:
    """``path:line: name`` for each converter type an ``otlp`` module names (code, comments
    and docstrings alike: a type carried as ``Any`` is still named in its comment)."""
    found = []
    for path in paths:
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in CONVERTER_TYPES.finditer(line):
                found.append(f"{path.name}:{number}: {match.group(1)}")
    return found


def test_otlp_knows_no_converter_type() -> None:
    assert otlp_mentions_of_converter_types(sorted((PACKAGE / "otlp").rglob("*.py"))) == []


def test_the_type_check_sees_a_converter_type_in_otlp(tmp_path: Path) -> None:
    stray = tmp_path / "span.py"
    stray.write_text("fact: Any  # the converter's SpanFact\n", encoding="utf-8")
    assert otlp_mentions_of_converter_types([stray]) == ["span.py:1: SpanFact"]


def test_the_interest_carries_no_engine_mode() -> None:
    """``otlp``'s ``Interest`` says which spans a reader needs whole, nothing else: the
    engine's modes (facts, parts) are the engine's ``Decoding``."""
    tree = ast.parse((PACKAGE / "otlp" / "decode" / "span.py").read_text(encoding="utf-8"))
    (interest,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Interest"]
    fields = [
        n.target.id
        for n in interest.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    ]
    assert fields == ["names", "name_prefixes", "keys", "key_set"]
