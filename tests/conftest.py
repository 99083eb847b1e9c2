"""Fixtures shared by test modules."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture()
def collector_on() -> Iterator[None]:
    """Python's cyclic garbage collector on for the test, as it was afterwards."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()
