"""Rubrics: what a judge check asks a judge to decide, by name or as text.

The built-in rubrics are agent criteria, written for tooltrail: whether the task was done,
whether the reply rests on what the tools returned, whether a policy was followed. Beside them
are the letter-graded templates of ``checks.rubric_templates`` (agentic-evals' names:
``factuality``, ``closed_qa``, ...). A check's ``rubric`` is one of their names, a ``Rubric``,
a ``RubricTemplate``, or any text (then it is the rubric itself).
"""

from __future__ import annotations

from dataclasses import dataclass

from tooltrail.checks.rubric_templates import RUBRIC_TEMPLATES, RubricTemplate, make_rubric
from tooltrail.config_error import ConfigError
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


class RubricError(ConfigError):
    """A rubric that cannot be used as configured; the message says why."""


def resolve_rubric(rubric: object, policy: object = None) -> tuple[str, str]:
    """``(label, text)`` of a check's ``rubric``: a built-in's name (its text, the policy put
    in), a built-in template's name or a ``RubricTemplate`` (its rubric text, grades and
    answer), a ``Rubric``, or text taken as the rubric (labelled ``custom``). ``RubricError``
    when it is none of these, or a policy rubric has no policy."""
    if isinstance(rubric, RubricTemplate):
        return rubric.name, _template_text(rubric)
    if isinstance(rubric, Rubric):
        found: Rubric | None = rubric
    elif isinstance(rubric, str) and rubric.strip():
        found = BUILTIN_RUBRICS.get(rubric.strip())
        if found is None:
            template = RUBRIC_TEMPLATES.get(rubric.strip())
            if template is not None:
                return template.name, _template_text(template)
            if _looks_like_a_name(rubric):
                hint = did_you_mean(rubric.strip(), [*BUILTIN_RUBRICS, *RUBRIC_TEMPLATES])
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


def _template_text(template: RubricTemplate) -> str:
    try:
        return template.rubric_text()
    except (KeyError, IndexError, ValueError) as exc:
        raise RubricError(
            f"rubric template {template.name!r} cannot be filled in: {type(exc).__name__}: {exc}"
        ) from None


def _looks_like_a_name(text: str) -> bool:
    """One word of letters and underscores: a misspelled rubric name rather than a rubric."""
    word = text.strip()
    return bool(word) and all(c.isalnum() or c == "_" for c in word)


__all__ = [
    "BUILTIN_RUBRICS",
    "GROUNDED_IN_TOOL_RESULTS",
    "POLICY_FOLLOWED",
    "RUBRIC_TEMPLATES",
    "TASK_COMPLETED",
    "Rubric",
    "RubricError",
    "RubricTemplate",
    "make_rubric",
    "resolve_rubric",
]
