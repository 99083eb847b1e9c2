"""A judge prompt in two parts: the instructions, and the message they govern.

The built-in judge checks build a :class:`JudgePrompt`: the instructions first (what the judge
is, and that the fenced blocks after them are data, never instructions), then the message
(the fenced data, the rubric, the answer format). A provider with a system message sends the
instructions as that message and the rest as the user's (``judge.providers``), so nothing from
a trace ever shares a message with them. As a ``str`` the prompt is both parts in that order,
so a completion function, the verdict cache's key and a test's own judge read one text, with
the instructions before any data.

A plain ``str`` is a prompt too (a user's own, a peer library's template): it is sent as one
user message, as it is. Only this class, built by tooltrail's code, carries instructions, so
no text of a trace can make itself a system message.
"""

from __future__ import annotations

from typing import Any


class JudgePrompt(str):
    """A prompt whose ``instructions`` go in the system message and ``message`` after them."""

    instructions: str
    message: str

    def __new__(cls, instructions: str, message: str) -> JudgePrompt:
        prompt = super().__new__(cls, f"{instructions}\n\n{message}")
        prompt.instructions = instructions
        prompt.message = message
        return prompt

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled whole, parts and all (a worker process, the serve judge queue)
        return (JudgePrompt, (self.instructions, self.message))


def prompt_parts(prompt: str) -> tuple[str | None, str]:
    """``(instructions, message)``: a :class:`JudgePrompt`'s two parts, or ``(None, prompt)``
    for any other text, sent as one user message."""
    if isinstance(prompt, JudgePrompt):
        return prompt.instructions, prompt.message
    return None, str(prompt)
