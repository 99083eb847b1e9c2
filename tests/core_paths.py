"""Test support: reading through one path, the compiled core or the Python path.

``reading_with`` is how the differential tests (``tests/otlp``, ``tests/convert``) pick the
path: the switch set or cleared, the choice made afresh on entry and forgotten on exit.
``needs_core`` skips a test that needs the core installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tooltrail.convert import engine as core

try:
    import tooltrail_core  # noqa: F401
except ImportError:
    HAVE_CORE = False
else:
    HAVE_CORE = True

needs_core = pytest.mark.skipif(not HAVE_CORE, reason="the compiled core is not installed")


@contextmanager
def reading_with(monkeypatch: pytest.MonkeyPatch, which: str) -> Iterator[None]:
    """Reads inside the block go through ``which`` path (``core.PYTHON`` or ``core.CORE``):
    the switch set or cleared, and the path chosen afresh on entry and again on exit."""
    with monkeypatch.context() as m:
        if which == core.PYTHON:
            m.setenv(core.CORE_ENV, core.PYTHON)
        else:
            m.delenv(core.CORE_ENV, raising=False)
        core.reset()
        try:
            yield
        finally:
            core.reset()


def engine_reading(decoding: core.Decoding = core.SPANS) -> dict[str, Any]:
    """The keyword arguments of an ``otlp.read`` reader decoding as the engine in use does for
    ``decoding`` (``convert.engine``): its interest, and its decoders (the core's, if any)."""
    return {"interest": decoding.interest, "decoders": core.engine().decoders(decoding)}
