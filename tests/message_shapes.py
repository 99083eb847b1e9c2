"""Test support: one conversation written in each provider's message shape, and each shape in
each encoding instrumentations use, for the tests of ``dialects.messages`` and transcripts.

A ``Conversation`` is turns of a user's text, steps of tool calls (each call with its
arguments, id and result) and a reply. ``SHAPES`` writes it as the messages of OpenAI chat,
OpenAI Responses, Anthropic, Gemini (camelCase and the Python SDK's snake_case), Bedrock
Converse, the GenAI ``parts`` form and LangChain; ``ENCODINGS`` turns a list of messages into
what a span attribute holds: the structured value, JSON text, JSON text inside a JSON string, a
Python repr, or flattened indexed keys. Written from the providers' documented formats, not
from tooltrail's reader.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Call:
    name: str
    call_id: str
    args: dict[str, Any]
    result: Any
    error: bool = False


@dataclass(frozen=True)
class Turn:
    user: str
    steps: tuple[tuple[Call, ...], ...]
    reply: str


@dataclass(frozen=True)
class Conversation:
    turns: tuple[Turn, ...]
    system: str | None = None

    def calls(self) -> list[Call]:
        return [call for turn in self.turns for step in turn.steps for call in step]


Messages = list[dict[str, Any]]


def _text_result(call: Call) -> str:
    return call.result if isinstance(call.result, str) else json.dumps(call.result)


def openai_chat(conv: Conversation) -> Messages:
    out: Messages = [{"role": "system", "content": conv.system}] if conv.system else []
    for turn in conv.turns:
        out.append({"role": "user", "content": turn.user})
        for step in turn.steps:
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": c.call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.args)},
                        }
                        for c in step
                    ],
                }
            )
            out += [
                {"role": "tool", "tool_call_id": c.call_id, "content": _text_result(c)}
                for c in step
            ]
        out.append({"role": "assistant", "content": turn.reply})
    return out


def openai_responses(conv: Conversation) -> Messages:
    out: Messages = [{"role": "developer", "content": conv.system}] if conv.system else []
    for turn in conv.turns:
        out.append(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": turn.user}],
            }
        )
        for step in turn.steps:
            out += [
                {
                    "type": "function_call",
                    "call_id": c.call_id,
                    "name": c.name,
                    "arguments": json.dumps(c.args),
                }
                for c in step
            ]
            out += [
                {"type": "function_call_output", "call_id": c.call_id, "output": _text_result(c)}
                for c in step
            ]
        out.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.reply}],
            }
        )
    return out


def anthropic(conv: Conversation) -> Messages:
    out: Messages = []
    for turn in conv.turns:
        out.append({"role": "user", "content": [{"type": "text", "text": turn.user}]})
        for step in turn.steps:
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": c.call_id, "name": c.name, "input": c.args}
                        for c in step
                    ],
                }
            )
            out.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": c.call_id,
                            "content": _text_result(c),
                            **({"is_error": True} if c.error else {}),
                        }
                        for c in step
                    ],
                }
            )
        out.append({"role": "assistant", "content": [{"type": "text", "text": turn.reply}]})
    return out


def _gemini(conv: Conversation, call_key: str, response_key: str) -> Messages:
    out: Messages = []
    for turn in conv.turns:
        out.append({"role": "user", "parts": [{"text": turn.user}]})
        for step in turn.steps:
            out.append(
                {
                    "role": "model",
                    "parts": [
                        {call_key: {"id": c.call_id, "name": c.name, "args": c.args}} for c in step
                    ],
                }
            )
            out.append(
                {
                    "role": "user",
                    "parts": [
                        {
                            response_key: {
                                "id": c.call_id,
                                "name": c.name,
                                "response": c.result
                                if isinstance(c.result, dict)
                                else {"result": c.result},
                            }
                        }
                        for c in step
                    ],
                }
            )
        out.append({"role": "model", "parts": [{"text": turn.reply}]})
    return out


def gemini(conv: Conversation) -> Messages:
    return _gemini(conv, "functionCall", "functionResponse")


def gemini_snake(conv: Conversation) -> Messages:
    return _gemini(conv, "function_call", "function_response")


def bedrock(conv: Conversation) -> Messages:
    out: Messages = []
    for turn in conv.turns:
        out.append({"role": "user", "content": [{"text": turn.user}]})
        for step in turn.steps:
            out.append(
                {
                    "role": "assistant",
                    "content": [
                        {"toolUse": {"toolUseId": c.call_id, "name": c.name, "input": c.args}}
                        for c in step
                    ],
                }
            )
            out.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": c.call_id,
                                "content": [
                                    {"json": c.result}
                                    if isinstance(c.result, dict)
                                    else {"text": c.result}
                                ],
                                **({"status": "error"} if c.error else {}),
                            }
                        }
                        for c in step
                    ],
                }
            )
        out.append({"role": "assistant", "content": [{"text": turn.reply}]})
    return out


def genai_parts(conv: Conversation) -> Messages:
    out: Messages = []
    for turn in conv.turns:
        out.append({"role": "user", "parts": [{"type": "text", "content": turn.user}]})
        for step in turn.steps:
            out.append(
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "tool_call", "id": c.call_id, "name": c.name, "arguments": c.args}
                        for c in step
                    ],
                }
            )
            out.append(
                {
                    "role": "tool",
                    "parts": [
                        {"type": "tool_call_response", "id": c.call_id, "response": c.result}
                        for c in step
                    ],
                }
            )
        out.append({"role": "assistant", "parts": [{"type": "text", "content": turn.reply}]})
    return out


def langchain(conv: Conversation) -> Messages:
    out: Messages = [{"type": "system", "content": conv.system}] if conv.system else []
    for turn in conv.turns:
        out.append({"type": "human", "content": turn.user})
        for step in turn.steps:
            out.append(
                {
                    "type": "ai",
                    "content": "",
                    "tool_calls": [{"name": c.name, "args": c.args, "id": c.call_id} for c in step],
                }
            )
            out += [
                {"type": "tool", "tool_call_id": c.call_id, "content": _text_result(c)}
                for c in step
            ]
        out.append({"type": "ai", "content": turn.reply})
    return out


SHAPES: dict[str, Callable[[Conversation], Messages]] = {
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "gemini_snake": gemini_snake,
    "bedrock": bedrock,
    "genai_parts": genai_parts,
    "langchain": langchain,
}


def expected_result(shape: str, call: Call) -> Any:
    """The result a reader should give for ``call`` in ``shape``: Gemini wraps a result that
    is not an object as ``{"result": ...}``, and that wrapper is what was recorded."""
    if shape.startswith("gemini") and not isinstance(call.result, dict):
        return {"result": call.result}
    return call.result


# --- encodings -------------------------------------------------------------------------------


def flatten(value: Any, prefix: str) -> dict[str, Any]:
    """Nested lists and objects as indexed, dotted keys (``prefix0.role``), the way
    OpenInference and OpenLLMetry write messages; values of ``arguments``, ``args``,
    ``input``, ``response`` and ``json`` stay JSON text, as those instrumentations keep them."""
    flat: dict[str, Any] = {}

    def walk(node: Any, key: str) -> None:
        if isinstance(node, dict):
            for name, item in node.items():
                inner = f"{key}.{name}" if key else name
                if name in ("arguments", "args", "input", "response", "json") and not isinstance(
                    item, str
                ):
                    flat[prefix + inner] = json.dumps(item)
                else:
                    walk(item, inner)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{key}.{index}" if key else str(index))
        elif node is not None:
            flat[prefix + key] = node

    walk(value, "")
    return flat


ENCODINGS: dict[str, Callable[[Messages], Any]] = {
    "structured": lambda messages: messages,
    "json": json.dumps,
    "json_in_json": lambda messages: json.dumps(json.dumps(messages)),
    "python_repr": repr,
}


@dataclass
class Read:
    """What a reader gave back, in the conversation's terms."""

    calls: list[tuple[str, str | None, Any]] = field(default_factory=list)
    results: dict[str, Any] = field(default_factory=dict)
    users: list[str] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
