"""The package version, in a leaf module: the CLI and the events name it without importing the
public API (``tooltrail/__init__``, the top layer). Keep it equal to pyproject.toml's."""

__version__ = "0.1.0"
