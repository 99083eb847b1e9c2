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


def pytest_configure(config: pytest.Config) -> None:
    """Pick the reading path once, before any test captures output: without the compiled
    core its one notice goes to the session's stderr, not into the first test that reads
    (tests/test_core_switch.py checks the notice in a process of its own)."""
    from tooltrail.otlp.read.core import core_module

    core_module()
