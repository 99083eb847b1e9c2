"""A small model of the OpenTelemetry Collector's ``tail_sampling`` processor, for the two
policies ``collector-config/sampling.yaml`` uses, so a test can run the traces ``tooltrail
serve --forward-verdicts`` forwards through the same decisions the collector would take.

What is modelled, from the processor's README and its policy code
(opentelemetry-collector-contrib ``processor/tailsamplingprocessor``):

- **string_attribute** (``key``, ``values``, ``enabled_regex_matching``): a trace is sampled
  when its resource or any of its spans has the attribute ``key`` with a string value that is
  one of ``values`` (exactly; with regex matching, one the expressions match anywhere in it,
  as Go's ``MatchString``). A value that is not a string reads as the empty string, which
  never matches (the processor reads ``Str()``); empty strings in ``values`` are dropped.
- **probabilistic** (``sampling_percentage``, ``hash_salt``): the FNV-1a 64-bit hash of the
  salt (default ``default-hash-seed``) followed by the trace id's 16 bytes, sampled when at
  most ``sampling_percentage`` / 100 of the largest 64-bit number.
- **The decision**: a trace is sampled when any policy samples it (the README's rules, with
  no ``drop`` policy and no inverted match).

Its limits: it decides once per whole trace, as if every span had arrived within
``decision_wait`` (the processor decides ``decision_wait`` after a trace's first span, and a
span arriving later follows the decision kept in ``decision_cache``, or starts a new
decision once evicted); ``invert_match``, ``cache_max_size``, ``and``/``composite``/``drop`` and
every other policy type are refused, not modelled; the probabilistic threshold is worked out
exactly here, while the processor multiplies 64-bit floats (the two can differ for a trace id
hashing within about 2**11 of the threshold, one in 2**53 of them); no memory limits
(``num_traces``) or shutdown behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

DEFAULT_HASH_SALT = "default-hash-seed"
_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1
MAX_UINT64 = _MASK

#: The settings of each modelled policy type its README documents (others are refused).
MODELLED = {
    "string_attribute": {"key", "values", "enabled_regex_matching"},
    "probabilistic": {"sampling_percentage", "hash_salt"},
}


@dataclass(frozen=True)
class TraceData:
    """What the policies read of one trace: its id and, per span, the resource's and the span's
    attributes."""

    trace_id: str
    spans: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]]


def fnv1a_64(data: bytes) -> int:
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & _MASK
    return value


def probabilistic_threshold(percentage: float) -> int:
    return int(Fraction(MAX_UINT64) * Fraction(percentage) / 100)


class Policy:
    name: str

    def samples(self, trace: TraceData) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class StringAttribute(Policy):
    name: str
    key: str
    values: tuple[str, ...]
    regex: bool = False

    def _matches(self, value: Any) -> bool:
        text = value if isinstance(value, str) else ""
        if not text:
            return False
        if self.regex:
            return any(re.search(pattern, text) for pattern in self.values)
        return text in self.values

    def samples(self, trace: TraceData) -> bool:
        for resource, attributes in trace.spans:
            if self.key in resource and self._matches(resource[self.key]):
                return True
            if self.key in attributes and self._matches(attributes[self.key]):
                return True
        return False


@dataclass(frozen=True)
class Probabilistic(Policy):
    name: str
    percentage: float
    salt: str = DEFAULT_HASH_SALT

    def samples(self, trace: TraceData) -> bool:
        hashed = fnv1a_64(self.salt.encode() + bytes.fromhex(trace.trace_id))
        return hashed <= probabilistic_threshold(self.percentage)


def policies_of(config: Mapping[str, Any]) -> list[Policy]:
    """The ``policies`` of a ``tail_sampling`` processor's settings; ``ValueError`` for a policy
    or setting the model does not cover."""
    found: list[Policy] = []
    for entry in config["policies"]:
        kind = entry["type"]
        if kind not in MODELLED:
            raise ValueError(f"policy {entry['name']!r}: type {kind!r} is not modelled")
        settings = entry.get(kind) or {}
        unknown = set(settings) - MODELLED[kind]
        if unknown:
            raise ValueError(f"policy {entry['name']!r}: {sorted(unknown)} not modelled")
        if kind == "string_attribute":
            values = tuple(v for v in settings["values"] if v != "")
            regex = bool(settings.get("enabled_regex_matching", False))
            found.append(StringAttribute(entry["name"], settings["key"], values, regex))
        else:
            salt = settings.get("hash_salt") or DEFAULT_HASH_SALT
            found.append(Probabilistic(entry["name"], float(settings["sampling_percentage"]), salt))
    return found


def sampled(policies: Iterable[Policy], trace: TraceData) -> bool:
    """The processor's decision: any policy samples the trace."""
    return any(policy.samples(trace) for policy in policies)
