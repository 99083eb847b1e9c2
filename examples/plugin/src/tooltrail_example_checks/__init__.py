"""An example tooltrail plug-in: ``argument_at_most`` caps a tool's numeric argument.

Installed, it is found through its entry point (``pyproject.toml``), so a suite can say::

    evaluators:
      - name: argument_at_most
        config: {tool: issue_refund, argument: amount, limit: 100}
"""

from __future__ import annotations

from dataclasses import dataclass

from tooltrail import Score
from tooltrail.checks import CheckContext

__all__ = ["ArgumentAtMost"]


@dataclass(frozen=True, slots=True)
class ArgumentAtMost:
    """Every call of ``tool`` passes ``argument`` at most ``limit``: the calls over it are the
    evidence. A call without the argument, or with a value that is not a number, is left
    alone (``expected_tool_arguments`` is the check for required arguments)."""

    tool: str
    argument: str
    limit: float

    def evaluate(self, ctx: CheckContext) -> Score:
        name = f"argument_at_most:{self.tool}.{self.argument}"
        over = []
        for call in ctx.view.calls_of(self.tool):
            value = (call.args or {}).get(self.argument)
            is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if is_number and value > self.limit:
                over.append((call, value))
        if not over:
            return Score.passing(
                name,
                "argument_at_most",
                f"every call of {self.tool!r} passed {self.argument} at most {self.limit}.",
            )
        call, value = over[0]
        return Score.failing(
            name,
            "argument_at_most",
            f"{self.tool!r} was called with {self.argument}={value!r}, over the limit of "
            f"{self.limit} ({len(over)} such call(s)).",
            span_ids=tuple(c.span_id for c, _ in over if c.span_id),
        )
