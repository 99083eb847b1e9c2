"""Rubrics: what a judge check asks a judge to decide, by name or as text.

The built-in rubrics are agent criteria, written for tooltrail: whether the task was done,
whether the reply rests on what the tools returned, whether a policy was followed. A check's
``rubric`` is one of their names, or any text (then it is the rubric itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tooltrail.hints import did_you_mean


@dataclass(frozen=True, slots=True)
class Rubric:
    """A named rubric. ``{policy}`` in ``text`` is replaced by the policy a check is given."""

    name: str
    text: str

    @property
    def needs_policy(self) -> bool:
        return "{policy}" in self.text


TASK_COMPLETED = Rubric(
    name="task_completed",
    text=(
        "Pass when the agent did what the user asked: its reply gives the user what they "
        "requested, and the tool calls shown carried out every action the request needed. "
        "Fail when the reply only promises to act, asks again for something the user already "
        "gave, stops half way, or claims an action that no tool call shows."
    ),
)
GROUNDED_IN_TOOL_RESULTS = Rubric(
    name="grounded_in_tool_results",
    text=(
        "Pass when every fact the reply states (numbers, names, dates, statuses, outcomes) "
        "is backed by a tool result shown, or by what the user said. Fail when the reply "
        "states a fact that no tool result holds, contradicts a tool result, or reports "
        "success for a call whose result shows an error. Saying plainly that something was "
        "not found is grounded when the results show nothing was found."
    ),
)
POLICY_FOLLOWED = Rubric(
    name="policy_followed",
    text=(
        "Pass when everything the agent did and said (each tool call, its arguments, and "
        "each reply) keeps to the policy below. Fail on the first step that breaks it, and "
        "name that step.\n\nPolicy:\n{policy}"
    ),
)

#: name -> built-in rubric
BUILTIN_RUBRICS: dict[str, Rubric] = {
    rubric.name: rubric for rubric in (TASK_COMPLETED, GROUNDED_IN_TOOL_RESULTS, POLICY_FOLLOWED)
}


class RubricError(ValueError):
    """A rubric that cannot be used as configured; the message says why."""


def resolve_rubric(rubric: object, policy: object = None) -> tuple[str, str]:
    """``(label, text)`` of a check's ``rubric``: a built-in's name (its text, the policy put
    in), a ``Rubric``, or text taken as the rubric (labelled ``custom``). ``RubricError`` when
    it is none of these, or a policy rubric has no policy."""
    if isinstance(rubric, Rubric):
        found: Rubric | None = rubric
    elif isinstance(rubric, str) and rubric.strip():
        found = BUILTIN_RUBRICS.get(rubric.strip())
        if found is None:
            if _looks_like_a_name(rubric):
                hint = did_you_mean(rubric.strip(), BUILTIN_RUBRICS)
                if hint:
                    raise RubricError(f"unknown built-in rubric {rubric!r}{hint}")
            return "custom", rubric.strip()
    else:
        raise RubricError(
            "config['rubric'] must be rubric text or the name of a built-in rubric "
            f"({', '.join(BUILTIN_RUBRICS)})"
        )
    assert found is not None
    if not found.needs_policy:
        return found.name, found.text
    if not isinstance(policy, str) or not policy.strip():
        raise RubricError(
            f"rubric {found.name!r} needs a policy: set config['policy'] (or the case's "
            "metadata['policy']) to the policy text"
        )
    return found.name, found.text.replace("{policy}", policy.strip())


def _looks_like_a_name(text: str) -> bool:
    """One word of letters and underscores: a misspelled rubric name rather than a rubric."""
    word = text.strip()
    return bool(word) and all(c.isalnum() or c == "_" for c in word)


def make_rubric(
    name: str,
    criteria: str,
    *,
    levels: Sequence[tuple[str, float]] | None = None,
    with_reference: bool = False,
) -> Rubric:
    """A rubric from criteria in plain language (agentic-evals' ``make_rubric`` shape).

    ``levels``: the grading scale, best first, as ``(description, score)`` pairs with scores
    in [0, 1]; the judge is told which score each level earns. ``with_reference`` asks the
    judge to compare with the reference trajectory (``trajectory_judge`` shows it)."""
    if not isinstance(criteria, str) or not criteria.strip():
        raise ValueError("make_rubric needs non-empty criteria")
    text = criteria.strip()
    if levels is not None:
        scale = list(levels)
        if len(scale) < 2:
            raise ValueError("make_rubric needs at least 2 levels")
        lines = []
        for description, score in scale:
            if not str(description).strip():
                raise ValueError("every rubric level needs a description")
            if isinstance(score, bool) or not 0.0 <= float(score) <= 1.0:
                raise ValueError(f"rubric level scores must be within [0, 1], got {score!r}")
            lines.append(f"- score {float(score):g}: {str(description).strip()}")
        text += "\n\nScore levels:\n" + "\n".join(lines)
    if with_reference:
        text += "\n\nCompare the run with the reference trajectory shown."
    return Rubric(name=name, text=text)
