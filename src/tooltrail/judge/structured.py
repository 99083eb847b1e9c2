"""The verdict's shape as the providers' structured output takes it.

OpenAI's Chat Completions API is given ``response_format`` with this JSON schema (strict:
every key required, no other key), and Anthropic's Messages API one tool whose input is the
verdict, which the model is made to call (``tool_choice``). Either way the answer is still read
by the strict parser (``judge.verdict``), the only judge of what a verdict is: a compatible
server that ignores the schema or the tool and answers with text is read as before.

The schema has no numeric bounds (``minimum``, ``maximum``): not every compatible server's
grammar supports them, and the parser checks the score's range anyway.
"""

from __future__ import annotations

from typing import Any

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "passed": {"type": "boolean", "description": "true when the rubric is met"},
        "score": {"type": "number", "description": "a number from 0 to 1"},
        "reasoning": {"type": "string", "description": "why, in one or two sentences"},
    },
    "required": ["passed", "score", "reasoning"],
    "additionalProperties": False,
}

#: OpenAI's ``response_format``.
OPENAI_RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {"name": "judge_verdict", "strict": True, "schema": VERDICT_SCHEMA},
}

#: The name of the tool an Anthropic judge gives its verdict with.
VERDICT_TOOL_NAME = "record_verdict"
#: Anthropic's ``tools`` entry and the ``tool_choice`` that makes the model call it.
ANTHROPIC_VERDICT_TOOL: dict[str, Any] = {
    "name": VERDICT_TOOL_NAME,
    "description": "Record the verdict on what the agent did, judged by the rubric.",
    "input_schema": VERDICT_SCHEMA,
}
ANTHROPIC_TOOL_CHOICE: dict[str, Any] = {"type": "tool", "name": VERDICT_TOOL_NAME}

#: Words of an HTTP 400's message that say the server refused the structured-output request
#: itself (an OpenAI-compatible server without ``json_schema`` support), not the prompt.
STRUCTURED_OUTPUT_WORDS = ("response_format", "json_schema")
