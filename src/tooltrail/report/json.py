"""The JSON report: ``EvaluationReport.to_dict()`` (stable names, ``schema_version``).

Optional keys, for ``tooltrail report REPORT.json --format html`` (readers that do not know
them, such as ``tooltrail gate``, ignore them): ``gate`` (``passed``, ``reasons``, and
``inconclusive: true`` when the gate could not decide) when a gate was checked,
``agreement`` (``tooltrail.agreement.Agreement.to_dict()``) when the run was measured against
labels (``--labels``), and a ``trajectory`` on the rows whose trajectory was collected
(``tooltrail.report.trajectory``: failing rows and a sample of passing ones, arguments
redacted).

``iter_json`` writes the document row by row, so ``write_json`` streams a report of any size
to a file holding one row's text at a time; ``render_json`` is the same text in one string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import orjson

from tooltrail.report.stream import TextSink, write_pieces
from tooltrail.results import EvaluationReport

if TYPE_CHECKING:
    from tooltrail.agreement import Agreement
    from tooltrail.report.trajectory import Trajectory
    from tooltrail.suite.gate import GateResult

_NO_CASES = '"cases": []'

# Where orjson's text may differ from the standard library's: a float under 1e-4. orjson
# writes ``1e-7`` and ``0.00001`` where ``repr`` writes ``1e-07`` and ``1e-05``. Text with
# either shape, inside a string too, is written by the standard library instead. Two patterns
# that start with a literal, not one alternation: the regular expression engine then skips
# to each literal's occurrences (1.4 us a 2.7 kB row each, where one alternation took 63 us
# and made the check cost more than the encoding it saves).
_EXPONENT = re.compile(r"e-\d")
_DECIMAL = re.compile(r"0\.0000")


def _may_differ(text: str) -> bool:
    """Whether ``text`` may hold a float that orjson spells unlike ``repr``."""
    if _DECIMAL.search(text) is not None:
        return True
    for match in _EXPONENT.finditer(text):
        if text[match.start() - 1 : match.start()].isdigit():
            return True
    return False


def _dumps(data: object, indent: int | str | None) -> str:
    """``json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)``, the report's
    text since its first version. With the default indent the same text comes from orjson,
    about 15 times faster (the standard library's encoder has no C path with indentation, and
    was the largest part of ``eval --format json``): orjson agrees byte for byte on every
    value but small floats, and refuses what it cannot write alike (integers past 64 bits,
    keys that are not strings, lone surrogates), so both go to the standard library."""
    if indent == 2:
        try:
            text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            pass
        else:
            if not _may_differ(text):
                return text
    return json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)


def _head(
    report: EvaluationReport, gate: GateResult | None, agreement: Agreement | None
) -> dict[str, Any]:
    """The document without rows (``cases`` stays the last key), with the gate and the
    agreement with labels when given."""
    head = EvaluationReport(report.suite_name, report.suite_version, [], report.summary).to_dict()
    cases = head.pop("cases")
    if gate is not None:
        head["gate"] = {"passed": gate.passed, "reasons": list(gate.reasons)}
        if gate.inconclusive:  # (only then: a gated report is otherwise as before)
            head["gate"]["inconclusive"] = True
    if agreement is not None:
        head["agreement"] = agreement.to_dict()
    head["cases"] = cases
    return head


def iter_json(
    report: EvaluationReport,
    *,
    indent: int | str | None = 2,
    trajectories: Mapping[int, Trajectory] | None = None,
    gate: GateResult | None = None,
    agreement: Agreement | None = None,
) -> Iterator[str]:
    """The JSON document in pieces: everything but the rows, then one piece per row (``cases``
    is the last key, so the rows go in just before the closing brace), then the end.
    ``trajectories`` (row index -> trajectory), ``gate`` and ``agreement`` add the optional
    keys."""
    if not report.cases:
        yield _dumps(_head(report, gate, agreement), indent) + "\n"
        return
    empty = _dumps(_head(report, gate, agreement), indent)
    at = empty.rindex(_NO_CASES) + len(_NO_CASES) - 1  # the "]" of the empty list
    yield empty[:at]
    if indent is None:
        first, between, margin, close = "", ", ", None, "]"
    else:
        step = " " * indent if isinstance(indent, int) else indent
        margin = "\n" + step * 2  # rows sit two levels deep: report > cases > row
        first, between, close = margin, "," + margin, "\n" + step + "]"
    for n, row in enumerate(report.cases):
        data = row.to_dict()
        if trajectories and n in trajectories:
            data["trajectory"] = trajectories[n].to_dict()
        text = _dumps(data, indent)
        if margin is not None:
            text = text.replace("\n", margin)
        yield (between if n else first) + text
    yield close + empty[at + 1 :] + "\n"


def render_json(
    report: EvaluationReport,
    *,
    indent: int | None = 2,
    trajectories: Mapping[int, Trajectory] | None = None,
    gate: GateResult | None = None,
    agreement: Agreement | None = None,
) -> str:
    """The report as a JSON document, ending in a newline. Non-finite values are ``null``."""
    return "".join(
        iter_json(report, indent=indent, trajectories=trajectories, gate=gate, agreement=agreement)
    )


def write_json(
    report: EvaluationReport,
    out: TextSink,
    *,
    indent: int | None = 2,
    trajectories: Mapping[int, Trajectory] | None = None,
    gate: GateResult | None = None,
    agreement: Agreement | None = None,
) -> None:
    """Write the JSON report to ``out`` as it is rendered (the same text as ``render_json``)."""
    write_pieces(
        iter_json(report, indent=indent, trajectories=trajectories, gate=gate, agreement=agreement),
        out,
    )
