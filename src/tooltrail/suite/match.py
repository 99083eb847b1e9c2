"""Policy selectors: which traces a case applies to, read from the converter's trace metadata."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tooltrail.equality import values_equal
from tooltrail.suite.suite_error import SuiteError

if TYPE_CHECKING:
    from tooltrail.model import EvalTrace


@dataclass(slots=True)
class Match:
    """Selects traces by service, agent, root span name and attribute equality (all must hold).

    YAML: ``match: all`` or a mapping of these fields. Reads ``trace.metadata`` keys
    ``"service.name"``, ``"agent_name"``, ``"root_span_name"`` and ``"attributes"`` (the flat
    dict of resource and span attributes the converter collects). Attribute values compare with
    tooltrail's value equality (``True`` is not ``1``; ``5`` is ``5.0``).
    """

    service_name: str | None = None
    agent_name: str | None = None
    root_span_name: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    all: bool = False

    def __post_init__(self) -> None:
        if not self.all and not self.is_selective():
            raise SuiteError(
                "match needs at least one of service_name, agent_name, root_span_name, "
                "attributes, or `match: all`"
            )

    def is_selective(self) -> bool:
        return bool(
            self.service_name is not None
            or self.agent_name is not None
            or self.root_span_name is not None
            or self.attributes
        )

    def selects(self, trace: EvalTrace) -> bool:
        """Whether this selector picks ``trace``. Pure: reads only ``trace.metadata``."""
        if self.all:
            return True
        metadata = trace.metadata
        if self.service_name is not None and not _is(
            metadata.get("service.name"), self.service_name
        ):
            return False
        if self.agent_name is not None and not _is(metadata.get("agent_name"), self.agent_name):
            return False
        if self.root_span_name is not None and not _is(
            metadata.get("root_span_name"), self.root_span_name
        ):
            return False
        if self.attributes:
            found = metadata.get("attributes")
            if not isinstance(found, dict):
                return False
            missing = object()
            for key, wanted in self.attributes.items():
                value = found.get(key, missing)
                if value is missing or not values_equal(wanted, value):
                    return False
        return True

    def to_dict(self) -> dict[str, Any] | str:
        """The YAML/JSON form: ``"all"`` or a mapping of the fields that are set."""
        if self.all:
            return "all"
        data: dict[str, Any] = {}
        for key in ("service_name", "agent_name", "root_span_name"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        if self.attributes:
            data["attributes"] = dict(self.attributes)
        return data


def _is(found: Any, wanted: str) -> bool:
    """Equality with a metadata value that may also be a list (e.g. several agent names)."""
    if isinstance(found, (list, tuple)):
        return wanted in found
    return found == wanted
