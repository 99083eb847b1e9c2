"""What a check needs, read in one place: ``needs_of(check)`` reads the attributes a check
declares its needs with (``checks.protocol.NEEDS``) into a ``CheckNeeds``.

Before, each reader looked the attributes up by name with its own default, so a plug-in's
``reads_usage = "yes"`` or a misspelt ``read_usage = True`` silently meant "no": its traces
were converted without the usage it reads. Here a value that is not a ``bool`` raises
``CheckNeedsError`` naming the check, and so does an attribute named like a need that is none
of them (``reads_*``, ``read_*``, ``asks_*``, ``ask_*`` that is not a method and is close to
a need's name or holds a ``bool``);
``Registry.register`` asks ``declaration_problem`` of a check class, so a plug-in is told
when it is loaded.
"""

from __future__ import annotations

import re
from dataclasses import fields

from tooltrail.checks.protocol import NEEDS, Check, CheckNeeds
from tooltrail.hints import did_you_mean
from tooltrail.suite.suite_error import SuiteError

#: Each declaring attribute with its default (``CheckNeeds``'s), in ``CheckNeeds``'s order.
_DEFAULTS: tuple[tuple[str, bool], ...] = tuple(
    (attribute, getattr(CheckNeeds(), NEEDS[attribute]))
    for attribute in (
        next(a for a, f in NEEDS.items() if f == each.name) for each in fields(CheckNeeds)
    )
)
#: A name that looks like a need's attribute (``reads_usage``, or misspelt ``read_usage``).
_LOOKS_LIKE_A_NEED = re.compile(r"^(reads?|asks?)_")
#: Check types whose attribute names were looked at (the values are read on each call: a
#: property may depend on the check's configuration).
_NAMES_CHECKED: set[type] = set()


class CheckNeedsError(SuiteError):
    """A check declares its needs wrongly: a need that is not a ``bool``, or a misspelt one."""


def _describe(check: object) -> str:
    kind = check if isinstance(check, type) else type(check)
    name = getattr(check, "name", None)
    shown = f"{kind.__module__}.{kind.__qualname__}"
    return f"check {name!r} ({shown})" if isinstance(name, str) else f"check {shown}"


def declaration_problem(kind: type) -> str | None:
    """What is wrong with the need attributes ``kind`` declares, or ``None``: a name like a
    need's that is none of them (``read_usage``; a ``True`` or ``False`` under any
    ``reads_*``/``asks_*`` name), or a class attribute that is neither ``True`` nor ``False``
    (a property or a field is read on each check, by ``needs_of``)."""
    for name in dir(kind):
        if name in NEEDS:
            value = getattr(kind, name, None)
            if not isinstance(value, (bool, property)) and type(value).__name__ not in (
                "member_descriptor",
                "getset_descriptor",
            ):
                return (
                    f"{_describe(kind)}: {name} must be True or False, not {value!r} "
                    f"(one of {', '.join(NEEDS)})"
                )
        elif _LOOKS_LIKE_A_NEED.match(name):
            value = getattr(kind, name, None)
            hint = did_you_mean(name, NEEDS)
            # A method is not a need, nor a field far from every need's name (``read_timeout``).
            if not callable(value) and (hint or isinstance(value, bool)):
                return (
                    f"{_describe(kind)}: unknown attribute {name!r}{hint}; a check declares "
                    f"what it needs with {', '.join(NEEDS)}"
                )
    return None


def needs_of(check: Check) -> CheckNeeds:
    """What ``check`` needs: each attribute it declares, else the default. Raises
    ``CheckNeedsError`` (naming the check) for a value that is not a ``bool`` or for a
    misspelt attribute."""
    kind = type(check)
    if kind not in _NAMES_CHECKED:
        problem = declaration_problem(kind)
        if problem is not None:
            raise CheckNeedsError(problem)
        _NAMES_CHECKED.add(kind)
    values = []
    for attribute, default in _DEFAULTS:
        value = getattr(check, attribute, default)
        if value is not True and value is not False:
            raise CheckNeedsError(
                f"{_describe(check)}: {attribute} must be True or False, not {value!r}"
            )
        values.append(value)
    return CheckNeeds(*values)
