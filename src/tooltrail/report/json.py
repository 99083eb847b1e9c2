"""The JSON report: ``EvaluationReport.to_dict()`` (stable names, ``schema_version``).

Optional keys, for ``tooltrail report REPORT.json --format html`` (readers that do not know
them, such as ``tooltrail gate``, ignore them): ``gate`` (``passed``, ``reasons``, and
``inconclusive: true`` when the gate could not decide) when a gate was checked,
``agreement`` (``tooltrail.agreement.Agreement.to_dict()``) when the run was measured against
labels (``--labels``), and a ``trajectory`` on the rows whose trajectory was collected
(``tooltrail.report.trajectory``: failing rows and a sample of passing ones, arguments
redacted).

``iter_json`` writes the document a few rows at a time (``_BATCH_ROWS``), so ``write_json``
streams a report of any size to a file holding only those rows' text; ``render_json`` is the
same text in one string.
"""

from __future__ import annotations

import json
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
# either shape, inside a string too, is written by the standard library instead. Found with
# ``str.find``, not a regular expression: an exponent needs a ``-``, which ``find`` locates
# at memory-scan speed (rows rarely hold one), where a pattern starting with ``e`` stops at
# every letter ``e``; both searches took 4.1 us a 3.3 kB row as two patterns, 1.7 us so.
_SMALL_DECIMAL = "0.0000"


def _may_differ(text: str) -> bool:
    """Whether ``text`` may hold a float that orjson spells unlike ``repr``: ``0.0000``, or
    ``e-`` between a digit and a decimal digit."""
    if _SMALL_DECIMAL in text:
        return True
    find = text.find
    at = find("-", 1)
    while at >= 0:
        if (
            text[at - 1] == "e"
            and text[at + 1 : at + 2].isdecimal()
            and text[at - 2 : at - 1].isdigit()
        ):
            return True
        at = find("-", at + 1)
    return False


def _dumps(data: object, indent: int | str | None) -> str:
    """``json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)``, the report's
    text since its first version. With the default indent the same text comes from orjson,
    about 15 times faster (the standard library's encoder has no C path with indentation, and
    was the largest part of ``eval --format json``): orjson agrees byte for byte on every
    value but small floats, and refuses what it cannot write alike (integers past 64 bits,
    keys that are not strings, lone surrogates), so both go to the standard library."""
    if indent == 2:
        text = _orjson_text(data)
        if text is not None:
            return text
    return json.dumps(data, indent=indent, ensure_ascii=False, allow_nan=False)


def _orjson_text(data: object) -> str | None:
    """orjson's text of ``data`` with two-space indentation, or ``None`` where it may differ
    from the standard library's or orjson refuses the data (``_dumps``)."""
    try:
        text = orjson.dumps(data, option=orjson.OPT_INDENT_2).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return None
    return None if _may_differ(text) else text


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
    """The JSON document in pieces: everything but the rows, then the rows, up to
    ``_BATCH_ROWS`` a piece (``cases`` is the last key, so the rows go in just before the
    closing brace), then the end.
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
    batch: list[dict[str, Any]] = []
    at_start = True
    for n, row in enumerate(report.cases):
        data = row.to_dict()
        if trajectories and n in trajectories:
            data["trajectory"] = trajectories[n].to_dict()
        batch.append(data)
        if len(batch) == _BATCH_ROWS:
            yield _rows_text(batch, at_start, indent, first, between, margin)
            batch, at_start = [], False
    if batch:
        yield _rows_text(batch, at_start, indent, first, between, margin)
    yield close + empty[at + 1 :] + "\n"


#: Rows encoded by one orjson call. One call a row spent about as long on the call, on
#: decoding its bytes and on indenting its lines again (``str.replace``) as on encoding.
_BATCH_ROWS = 64
#: orjson's text of ``{"c": [rows]}`` with two-space indentation puts each row two levels
#: deep, as the report's ``cases`` holds them: between ``{\n  "c": [`` and ``\n  ]\n}`` lie
#: the rows, each after a line break and four spaces, separated by commas.
_WRAP_HEAD = len('{\n  "c": [')
_WRAP_TAIL = len("\n  ]\n}")


def _rows_text(
    batch: list[dict[str, Any]],
    at_start: bool,
    indent: int | str | None,
    first: str,
    between: str,
    margin: str | None,
) -> str:
    """The report's text of consecutive rows (``at_start``: the first rows of ``cases``). With
    the default indentation, one orjson call for all of them; rows it may spell unlike the
    standard library (``_dumps``) are written one by one, as ``_dumps`` writes each."""
    if indent == 2:
        text = _orjson_text({"c": batch})
        if text is not None:
            rows = text[_WRAP_HEAD:-_WRAP_TAIL]  # starts with the margin: ``first``
            return rows if at_start else "," + rows
    pieces = []
    for k, data in enumerate(batch):
        row = _dumps(data, indent)
        if margin is not None:
            row = row.replace("\n", margin)
        pieces.append((first if at_start and not k else between) + row)
    return "".join(pieces)


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
