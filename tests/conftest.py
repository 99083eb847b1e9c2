"""Fixtures shared by test modules, and where a test goes.

Tests are grouped in folders by layer, the way ``src/tooltrail`` is (docs/architecture.md,
"The layers"): a test goes in the folder of the layer whose rule it holds, even when it drives
that rule through a command or a receiver (``tooltrail serve``'s limits in ``serve``, a check's
texts in ``checks``). The folders: ``model`` (layer 0: the model, redaction), ``otlp``,
``convert`` (dialects too), ``suite``, ``judge``, ``checks``, ``evaluate`` (``evaluate``,
``judging``, ``scores``), ``pipeline``, ``live``, ``report`` (``annotate`` too), ``batch``,
``serve``, ``pytest``, ``cli``; ``docs`` runs the pages' and examples' code as printed, and
``architecture`` holds the house rules read from ``src`` (layers, private names, rules once).
Shared data is declared once in ``tests/fixtures.py``; ``tests/data`` holds the recorded files.

Helper modules (``fixtures.py``, ``serve_helpers.py``, ``judge_server.py``, ...) stay at the
top of ``tests``, which pytest puts on ``sys.path`` for this file. Every folder is put there
too (below), so that a test may import a piece of a test module of another folder by its
name (``from test_live_buffer import Collect``); for that, and for pytest's default
``prepend`` import mode, a test file's name is unique across folders (pytest refuses two).
"""

from __future__ import annotations

import gc
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (derandomized, no example database), so
# a generated case that fails, fails every time and CI cannot turn red by chance. To look for
# new examples: ``pytest --hypothesis-profile=explore``.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)
settings.load_profile("deterministic")

TESTS = Path(__file__).resolve().parent
#: The folders of tests, one a layer (the top of this file).
FOLDERS = sorted(
    p
    for p in TESTS.iterdir()
    if p.is_dir() and p.name != "data" and not p.name.startswith((".", "_"))
)
sys.path[:0] = [str(p) for p in FOLDERS if str(p) not in sys.path]


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
    (tests/test_core_switch.py checks the notice in a process of its own). And SIGINT as usual
    (``sigint_as_usual``)."""
    from tooltrail.convert.engine import core_module

    core_module()
    sigint_as_usual()


def sigint_as_usual() -> None:
    """SIGINT raises ``KeyboardInterrupt`` in this process and ends the processes it starts
    until they set their own handler, however the run was started. A script that starts
    pytest in the background (``pytest &``) leaves SIGINT ignored, and an ignored signal stays
    ignored across ``exec``: a test's ``tooltrail serve`` signalled before it installs its
    handler then ran on for good (test_serve_process_tree, ``at once-INT``). A handler set
    here is reset to the default in every child."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
