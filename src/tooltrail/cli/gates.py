"""The gate file of ``eval --gate``, ``gate --gate`` and ``report --gate``, the floor
``eval --min-judge-kappa`` lays over it, and the exit code of an inconclusive gate."""

from __future__ import annotations

from dataclasses import replace

from tooltrail.suite import SuiteError, TestSuite
from tooltrail.suite.gate import Gate, GateResult

#: The gate could not decide: a repeated case's interval straddles its threshold and nothing
#: failed (``Gate.confidence``). 75 is sysexits' EX_TEMPFAIL, "try again": CI may rerun on it.
#: pytest's own codes are 0-5, so the plugin gives the same code for the same verdict.
EXIT_INCONCLUSIVE = 75


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


def with_kappa_floor(gate: Gate | None, floor: float | None) -> Gate | None:
    """``gate`` with ``--min-judge-kappa``'s floor for every labelled judge check over its
    ``min_judge_kappa`` (a gate of that floor alone when there is none); ``None`` leaves it."""
    if floor is None:
        return gate
    return replace(gate if gate is not None else Gate(), min_judge_kappa=floor)


def gate_exit_code(result: GateResult, passed: int, failed: int) -> int:
    """``passed`` when the gate passed, ``EXIT_INCONCLUSIVE`` when it could not decide,
    else ``failed``."""
    if result.passed:
        return passed
    return EXIT_INCONCLUSIVE if result.inconclusive else failed
