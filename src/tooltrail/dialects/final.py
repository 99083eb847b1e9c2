"""Built-in "final answer" tools: a framework that ends a run by calling a tool of its own
gives the run's reply as that tool's argument. Such a call is the reply, not a call of the
trajectory.

Recognised by name, and only on spans of the framework's own instrumentation scope (a user's
tool of the same name under another framework stays a call):

- Pydantic AI (scope ``pydantic-ai``): output tools, ``final_result`` and, with several
  output types, ``final_result_<Type>`` (``DEFAULT_OUTPUT_TOOL_NAME``); the model's request
  lists them, no tool span runs them (the converter drops such a request when it matches no
  tool span: ``convert.calls``). An output tool given another name
  (``ToolOutput(name=...)``) is not known from the trace and stays a call.
- smolagents through OpenInference (scope ``openinference.instrumentation.smolagents``):
  ``final_answer`` (``FinalAnswerTool``, argument ``answer``).
- Google ADK (scope ``gcp.vertex.agent``): ``set_model_response``, the tool ADK adds when an
  agent has both an ``output_schema`` and tools.
- DSPy through OpenInference (scope ``openinference.instrumentation.dspy``): ``finish``, the
  tool ``dspy.ReAct`` adds to end its loop (no arguments: the answer comes from the module's
  output).

The reply is the argument's text: a call with one string argument gives that string; any
other arguments (a structured output) their compact JSON.
"""

from __future__ import annotations

from typing import Any

import orjson

from tooltrail.dialects import rules

#: instrumentation scope -> (names of its final-answer tools, name prefixes of them):
#: ``rules.json`` ``final_tools``. ``FINAL_TOOL_NAMES``: every name that a tool span may run
#: one under (tried first: cheap).
FINAL_ANSWER_TOOLS: dict[str, tuple[frozenset[str], tuple[str, ...]]] = {
    scope: (frozenset(tools["names"]), tuple(tools["prefixes"]))
    for scope, tools in rules.at("final_tools").items()
}
FINAL_TOOL_NAMES = frozenset(name for names, _ in FINAL_ANSWER_TOOLS.values() for name in names)


def scope_of(span: Any) -> str:
    """The instrumentation scope name of a decoded span (``scope_name``) or an SDK span."""
    name = getattr(span, "scope_name", None)
    if isinstance(name, str):
        return name
    scope = getattr(span, "instrumentation_scope", None)
    name = getattr(scope, "name", None)
    return name if isinstance(name, str) else ""


def is_final_answer(scope: str, tool: str) -> bool:
    """Whether ``tool`` is the built-in final-answer tool of the framework of ``scope``."""
    known = FINAL_ANSWER_TOOLS.get(scope)
    if known is None:
        return False
    return tool in known[0] or tool.startswith(known[1])


def final_text(args: dict[str, Any] | None) -> str | None:
    """The reply a final-answer call gives: its one string argument, else its arguments as
    compact JSON; ``None`` when the arguments were not captured."""
    if not args:  # not captured, or a tool that only ends the run (DSPy ``finish``)
        return None
    if len(args) == 1:
        (value,) = args.values()
        if isinstance(value, str):
            return value or None
    try:
        return orjson.dumps(args).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None
