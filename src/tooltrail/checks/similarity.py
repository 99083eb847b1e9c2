"""``trajectory_similarity``: a graded score of how close a run's calls are to a reference's,
by the cheapest alignment of the two (docs/checks.md, "trajectory_similarity").

The alignment is a weighted edit distance over the calls in order: a run call the reference
lacks (inserted) costs 1, a reference call the run lacks (missing) costs 1, a call of another
tool in its place (replaced) costs 1, and a call of the same tool whose arguments do not match
the reference call's (under the check's argument rules, as ``trajectory_match`` compares them)
costs ``argument_cost`` (default 0.5). The score is

    similarity = 1 - cost / max(len(run), len(reference))

(1.0 for two empty trajectories), so A->D->C->A against A->B->C->A is 1 - 1/4 = 0.75, and the
same run with B called with other arguments 1 - 0.5/4 = 0.875. A score passes at 1.0, or at
the evaluator's ``threshold``. Time and memory grow with len(run) x len(reference).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.reference import ComparatorError, Matcher, ReferenceCheck
from tooltrail.checks.score import Score, config_error

if TYPE_CHECKING:
    from tooltrail.checks.entries import CheckLookup

#: What a replacement of a call by a call of the same tool with other arguments costs.
DEFAULT_ARGUMENT_COST = 0.5


def _cost_problem(value: Any) -> bool:
    return isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1


@dataclass(frozen=True, slots=True)
class Alignment:
    """The cheapest alignment: its cost, the edits by kind, and the first edit in run order as
    ``(kind, run position, reference position)``."""

    cost: float
    inserted: int = 0
    missing: int = 0
    replaced: int = 0
    arguments: int = 0
    first: tuple[str, int, int] | None = None


def align(matcher: Matcher, argument_cost: float) -> Alignment:
    """The cheapest alignment of ``matcher.run`` to ``matcher.reference`` (module docstring)."""
    run, reference = matcher.run, matcher.reference
    n, m = len(run), len(reference)
    names = [c.name for c in reference]

    def substitution(i: int, j: int) -> float:
        if run[i].name != names[j]:
            return 1.0
        return 0.0 if matcher.difference(i, j) is None else argument_cost

    table = [[float(j) for j in range(m + 1)]]
    for i in range(1, n + 1):
        row = [float(i)]
        above = table[i - 1]
        for j in range(1, m + 1):
            row.append(
                min(above[j] + 1.0, row[j - 1] + 1.0, above[j - 1] + substitution(i - 1, j - 1))
            )
        table.append(row)
    # Walk back; at a tie the diagonal (a match or a replacement) wins, then a missing
    # reference call, then an inserted run call: the same alignment every time.
    edits: list[tuple[str, int, int]] = []
    i, j = n, m
    while i or j:
        here = table[i][j]
        if i and j:
            step = substitution(i - 1, j - 1)
            if here == table[i - 1][j - 1] + step:
                if step:
                    kind = "replaced" if run[i - 1].name != names[j - 1] else "arguments"
                    edits.append((kind, i - 1, j - 1))
                i, j = i - 1, j - 1
                continue
        if j and here == table[i][j - 1] + 1.0:
            edits.append(("missing", i, j - 1))
            j -= 1
            continue
        edits.append(("inserted", i - 1, j))
        i -= 1
    edits.reverse()
    counts = {"inserted": 0, "missing": 0, "replaced": 0, "arguments": 0}
    for kind, _, _ in edits:
        counts[kind] += 1
    return Alignment(cost=table[n][m], first=edits[0] if edits else None, **counts)


def _difference(matcher: Matcher, kind: str, i: int, j: int) -> str:
    """An edit as the reference checks name a difference (docs/checks.md, ``{difference}``)."""
    run, reference = matcher.run, matcher.reference
    if kind == "inserted":
        return f"call {i + 1} {run[i].name!r} is not in the reference"
    if kind == "missing":
        return f"reference call {j + 1} {reference[j].name!r} is missing"
    if kind == "replaced":
        return f"call {i + 1} is {run[i].name!r}, the reference has {reference[j].name!r}"
    return f"call {i + 1} {run[i].name!r}: {matcher.difference(i, j)}"


def _edits(found: Alignment) -> str:
    parts = [
        f"{count} {what}"
        for count, what in (
            (found.replaced, "replaced"),
            (found.arguments, "with other arguments"),
            (found.missing, "missing"),
            (found.inserted, "inserted"),
        )
        if count
    ]
    return ", ".join(parts)


@dataclass(slots=True, frozen=True)
class TrajectorySimilarity(ReferenceCheck):
    """``trajectory_similarity``: 1 - the alignment's cost / the longer trajectory's length
    (module docstring); the reference, the argument rules, the scope and
    ``ignore_failed_calls`` are ``trajectory_match``'s (``ReferenceCheck``)."""

    argument_cost: Any = DEFAULT_ARGUMENT_COST

    @property
    def metric(self) -> str:
        return "trajectory_similarity"

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: CheckLookup
    ) -> tuple[tuple[Any, ...], str] | None:
        """The first problem of a suite's config (key path, message), for ``Registry.check``."""
        if _cost_problem(config.get("argument_cost", DEFAULT_ARGUMENT_COST)):
            return ("argument_cost",), "expected a number between 0 and 1"
        return cls.shared_config_problem(config, registry)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "trajectory_similarity"
        cost = self.argument_cost
        if _cost_problem(cost):
            return config_error(
                name,
                name,
                f"config['argument_cost'] must be a number between 0 and 1, not {cost!r}.",
            )
        found = self.against(ctx)
        if isinstance(found, Score):
            return found
        matcher = found.matcher
        actual = [call.name for call in matcher.run]
        expected = [call.name for call in matcher.reference]
        args = matcher.default.describe()
        try:
            alignment = align(matcher, float(cost))
            first = alignment.first
            difference = _difference(matcher, *first) if first is not None else ""
        except ComparatorError as exc:
            return Score.failing(name, name, f"Trajectory not matched: {exc}.", error=exc.kind)
        if first is None:
            return Score.passing(
                name,
                name,
                f"Tool calls {actual}{found.scope} are the same as the reference {expected} "
                f"(arguments {args}): similarity 1.00.",
            )
        longest = max(len(actual), len(expected))
        value = max(0.0, 1.0 - alignment.cost / longest)
        kind, i, _ = first
        span_id = matcher.run[i].span_id if kind != "missing" and i < len(matcher.run) else None
        return Score(
            name=name,
            metric=name,
            value=value,
            passed=value >= 1.0,
            explanation=(
                f"Tool calls {actual}{found.scope} are {value:.2f} similar to the reference "
                f"{expected} (arguments {args}): {_edits(alignment)}, edit cost "
                f"{alignment.cost:g} over {longest} calls; first: {difference}."
            ),
            span_ids=(span_id,) if span_id else (),
        )
