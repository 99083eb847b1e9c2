"""Test support: a distribution installed as pip leaves one (its modules and a ``dist-info``
with ``METADATA`` and ``entry_points.txt``), in a folder a test puts on ``sys.path``, so that
``importlib.metadata`` finds its entry points as it finds a real plug-in's."""

from __future__ import annotations

from pathlib import Path


def install_distribution(
    root: Path, name: str, entry_points: str, modules: dict[str, str], version: str = "1.0"
) -> Path:
    """``root``, holding distribution ``name`` with ``entry_points`` (the text of its
    ``entry_points.txt``) and ``modules`` (module name -> source)."""
    root.mkdir(parents=True, exist_ok=True)
    for module, source in modules.items():
        (root / f"{module}.py").write_text(source, encoding="utf-8")
    info = root / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    return root
