"""Human verdicts to measure checks against: a labels file, read strictly.

A label says what a person decided about one check on one run: ``trace_id`` (or ``case_id``,
or both), the ``check`` (a score's name, as reports show it: ``refund_policy``,
``required_tool:verify_identity``), the ``verdict`` (``pass`` or ``fail``) and optional
``notes``. ``tooltrail eval --labels FILE`` compares the run's scores with them
(``tooltrail.agreement``).

Two shapes, told apart by the file's suffix:

- ``.csv``: a header line naming the columns (any order; ``check`` and ``verdict`` and at
  least one of ``trace_id`` / ``case_id`` required, ``notes`` optional), then one label a
  line. An empty cell is an absent value.
- ``.json``: a list of objects with those keys; ``verdict`` may also be ``true`` / ``false``.

Anything else is an error naming file, line and field (``labels.csv:7: verdict: expected
pass or fail, got 'yes'``): an unknown column or key (with a did-you-mean), a missing one, a
cell too many, a label for the same run and check twice. A labels file measures a judge that
may then gate a release, so nothing in it is guessed.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooltrail.hints import did_you_mean
from tooltrail.suite.fields import MAX_FILE_BYTES, FieldReader, KeyPath, read_document
from tooltrail.suite.suite_error import SuiteError

#: Every column (CSV) or key (JSON) a label may have, in the order the docs list them.
LABEL_FIELDS = ("trace_id", "case_id", "check", "verdict", "notes")
#: A verdict's words, case and surrounding spaces aside.
VERDICTS = {"pass": True, "fail": False}


class LabelsError(SuiteError):
    """A labels file that cannot be used; ``str()`` reads ``file:line: field: what``."""


@dataclass(frozen=True, slots=True)
class Label:
    """One human verdict: on the check named ``check`` of the run ``trace_id`` (or of every
    run of the case ``case_id``; both given: that case's row of that trace)."""

    check: str
    passed: bool
    trace_id: str | None = None
    case_id: str | None = None
    notes: str = ""
    #: The 1-based line the label starts on in its file.
    line: int | None = None

    @property
    def key(self) -> tuple[str | None, str | None, str]:
        """What two labels must not share: the run they name and the check."""
        return (self.trace_id, self.case_id, self.check)

    def describe(self) -> str:
        """``trace 6b04... check refund_policy`` (the run's ids, then the check)."""
        names = []
        if self.trace_id is not None:
            names.append(f"trace {self.trace_id}")
        if self.case_id is not None:
            names.append(f"case {self.case_id}")
        return f"{' '.join(names)} check {self.check}"


@dataclass(frozen=True, slots=True)
class LabelSet:
    """The labels of one file, in file order."""

    source: str
    labels: tuple[Label, ...]

    def __len__(self) -> int:
        return len(self.labels)


def read_labels(path: str | Path) -> LabelSet:
    """Read a ``.csv`` or ``.json`` labels file (see the module docstring); ``LabelsError``
    naming the file, line and field when it cannot be used."""
    source = str(path)
    suffix = Path(source).suffix.lower()
    if suffix == ".json":
        labels = _from_json(source)
    elif suffix == ".csv":
        labels = _from_csv(source, _read_text(source))
    else:
        raise LabelsError(
            f"a labels file ends in .csv or .json, not {suffix or 'no suffix'!r}", path=source
        )
    return LabelSet(source=source, labels=_unique(source, labels))


def labels_from_csv_text(text: str, source: str = "<labels>") -> LabelSet:
    """The labels of CSV text (as ``read_labels`` reads a ``.csv`` file)."""
    return LabelSet(source=source, labels=_unique(source, _from_csv(source, text)))


def _read_text(source: str) -> str:
    try:
        with open(source, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise LabelsError(f"cannot read file: {exc.strerror or exc}", path=source) from None
    if len(raw) > MAX_FILE_BYTES:
        raise LabelsError(f"file is larger than {MAX_FILE_BYTES} bytes", path=source)
    try:
        return raw.decode("utf-8-sig")  # a spreadsheet's export may begin with a BOM
    except UnicodeDecodeError as exc:
        raise LabelsError(f"not UTF-8 text (byte offset {exc.start})", path=source) from None


def _unique(source: str, labels: Sequence[Label]) -> tuple[Label, ...]:
    """``labels`` when no two name the same run and check, else the error naming both."""
    first: dict[tuple[str | None, str | None, str], Label] = {}
    for label in labels:
        earlier = first.setdefault(label.key, label)
        if earlier is not label:
            raise LabelsError(
                f"a second label for {label.describe()} (the first is on line {earlier.line})",
                path=source,
                line=label.line,
            )
    if not labels:
        raise LabelsError("the file holds no label", path=source)
    return tuple(labels)


# -- CSV ----------------------------------------------------------------------------------------


def _from_csv(source: str, text: str) -> list[Label]:
    rows = _csv_rows(source, text)
    header = next(rows, None)
    if header is None:
        raise LabelsError("the file is empty: it needs a header line", path=source, line=1)
    line, names = header
    columns = _columns(source, line, names)
    labels = []
    for line, cells in rows:
        if len(cells) > len(columns):
            raise LabelsError(
                f"{len(cells)} cells, but the header names {len(columns)} columns",
                path=source,
                line=line,
            )
        values = {name: cells[i].strip() if i < len(cells) else "" for i, name in columns}
        labels.append(_csv_label(source, line, values))
    return labels


def _csv_rows(source: str, text: str) -> Iterator[tuple[int, list[str]]]:
    """``(first line, cells)`` of each record that is not a blank line."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    ended = 0  # the line the previous record ended on
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise LabelsError(f"not CSV: {exc}", path=source, line=reader.line_num) from None
        start, ended = ended + 1, reader.line_num
        if cells and any(cell.strip() for cell in cells):
            yield start, cells


def _columns(source: str, line: int, names: list[str]) -> list[tuple[int, str]]:
    """The header's ``(cell index, column name)`` pairs, checked."""
    columns: list[tuple[int, str]] = []
    seen: set[str] = set()
    for index, raw in enumerate(names):
        name = raw.strip()
        if name not in LABEL_FIELDS:
            raise LabelsError(
                f"unknown column {name!r}{did_you_mean(name, LABEL_FIELDS)}; the columns are "
                f"{', '.join(LABEL_FIELDS)}",
                path=source,
                line=line,
                key_path=f"column {index + 1}",
            )
        if name in seen:
            raise LabelsError(f"column {name!r} twice", path=source, line=line)
        seen.add(name)
        columns.append((index, name))
    for needed in ("check", "verdict"):
        if needed not in seen:
            raise LabelsError(f"the header has no {needed!r} column", path=source, line=line)
    if "trace_id" not in seen and "case_id" not in seen:
        raise LabelsError(
            "the header needs a 'trace_id' or a 'case_id' column (or both)",
            path=source,
            line=line,
        )
    return columns


def _csv_label(source: str, line: int, values: dict[str, str]) -> Label:
    def fail(field: str, message: str) -> LabelsError:
        return LabelsError(message, path=source, line=line, key_path=field)

    check = values.get("check", "")
    if not check:
        raise fail("check", "empty: name the check (a score's name, as the report shows it)")
    trace_id = values.get("trace_id") or None
    case_id = values.get("case_id") or None
    if trace_id is None and case_id is None:
        raise fail("trace_id", "empty, and so is case_id: name the run the label is about")
    word = values.get("verdict", "")
    passed = VERDICTS.get(word.lower())
    if passed is None:
        raise fail("verdict", f"expected pass or fail, got {word!r}")
    return Label(
        check=check,
        passed=passed,
        trace_id=trace_id,
        case_id=case_id,
        notes=values.get("notes", ""),
        line=line,
    )


# -- JSON ---------------------------------------------------------------------------------------


def _from_json(source: str) -> list[Label]:
    with _located():
        data, reader = read_document(source)
        if not isinstance(data, list):
            reader.fail((), 'a JSON labels file is a list of labels ({"trace_id": ..., ...})')
        return [_json_label(reader, item, (index,)) for index, item in enumerate(data)]


def _json_label(reader: FieldReader, item: Any, path: KeyPath) -> Label:
    fields = reader.mapping(
        item, path, LABEL_FIELDS, required=("check", "verdict"), what="a label object"
    )
    ids = {
        key: None if fields.get(key) is None else reader.string(fields[key], path + (key,))
        for key in ("trace_id", "case_id")
    }
    if ids["trace_id"] is None and ids["case_id"] is None:
        reader.fail(path, "a label needs a trace_id or a case_id (or both)")
    check = reader.string(fields["check"], path + ("check",))
    notes = fields.get("notes")
    notes = "" if notes is None else reader.string(notes, path + ("notes",), allow_empty=True)
    verdict = fields["verdict"]
    if isinstance(verdict, bool):
        passed: bool | None = verdict
    elif isinstance(verdict, str):
        passed = VERDICTS.get(verdict.strip().lower())
    else:
        passed = None
    if passed is None:
        reader.fail(path + ("verdict",), f"expected pass, fail, true or false, got {verdict!r}")
    return Label(
        check=check,
        passed=passed,
        trace_id=ids["trace_id"],
        case_id=ids["case_id"],
        notes=notes,
        line=reader.lines.get(path),
    )


@contextmanager
def _located() -> Iterator[None]:
    """The strict document reader's errors (``suite.fields``), as this module's type."""
    try:
        yield
    except LabelsError:
        raise
    except SuiteError as exc:
        raise LabelsError(
            exc.message, path=exc.path, line=exc.line, key_path=exc.key_path
        ) from None


__all__ = [
    "LABEL_FIELDS",
    "Label",
    "LabelSet",
    "LabelsError",
    "labels_from_csv_text",
    "read_labels",
]
