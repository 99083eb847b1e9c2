"""The gate file of ``eval --gate``, ``gate --gate`` and ``report --gate``."""

from __future__ import annotations

from tooltrail.suite import SuiteError, TestSuite
from tooltrail.suite.gate import Gate


def load_gate(path: str) -> Gate:
    """A gate file; a suite file's ``gate:`` section also works. A file that is neither is
    reported with the gate reader's message."""
    try:
        return Gate.load(path)
    except SuiteError as gate_error:
        try:
            suite = TestSuite.load(path)
        except SuiteError:
            raise gate_error from None
        if suite.gate is None:
            raise SuiteError(f"{path}: no gate keys in this suite file") from None
        return suite.gate
