"""One reader of chat messages, whatever shape and encoding they were recorded in.

Most instrumentations record, somewhere, the messages a model was sent and what it answered.
Where (which attribute, event or log record) is data: ``rules.json`` ``messages``. How they
are written varies twice over, and both are read here:

- **encodings** (``decode``): JSON text, JSON text inside a JSON string, a Python repr
  (``str()`` of a list of dicts or of a framework's message objects: ``dialects.pyrepr``,
  parsed, never executed), structured OTLP values (arrays, kvlists), and keys flattened with
  indexes (``gen_ai.prompt.0.content``, ``llm.output_messages.0.message.tool_calls.0...``:
  ``unflatten``);
- **shapes** (``read``): the providers' message formats, which frameworks pass on:
  OpenAI chat (``role``, ``content``, ``tool_calls[].function.{name,arguments}``, ``tool``
  messages with ``tool_call_id``, the older ``function_call``), a chat completion's
  ``choices[].message``, OpenAI Responses items (``message``, ``function_call``,
  ``function_call_output``), Anthropic content blocks (``text``, ``tool_use``,
  ``tool_result``), Gemini contents (``parts`` of ``text``, ``functionCall`` /
  ``function_call``, ``functionResponse`` / ``function_response``; ``candidates[].content``),
  Bedrock Converse blocks (``text``, ``toolUse``, ``toolResult``), the GenAI ``parts``
  form (``text``, ``tool_call``, ``tool_call_response``), Vercel's parts (``tool-call``,
  ``tool-result``), LangChain messages (``type`` ``human``/``ai``/``tool``, serialized
  ``{"lc": 1, ...}``, or their reprs) and message objects' reprs whose fields carry the same
  names (a leading underscore dropped: Haystack's ``ChatMessage(_role=..., _content=[...])``
  with ``ToolCall`` and ``ToolCallResult`` parts).

Each message comes out as a ``Message``: its role (``user``, ``assistant``, ``system``,
``tool``), its text, the tool calls it asks for (``ModelCall``) and the tool results it
carries (``ToolResult``). Reasoning parts are not text. Markers of content that was hidden
(``values.placeholders``) are no text and no value.

Bounded: at most ``MAX_MESSAGES`` messages and ``MAX_PARTS`` parts per message, containers
followed ``MAX_DEPTH`` deep; reprs over ``pyrepr.MAX_REPR_CHARS`` are not read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from tooltrail.dialects import rules
from tooltrail.dialects.pyrepr import REPR_TYPE, python_value
from tooltrail.dialects.values import args_from, ident, is_marker

MAX_MESSAGES = 10_000
MAX_PARTS = 10_000
MAX_DEPTH = 6

USER = "user"
ASSISTANT = "assistant"
SYSTEM = "system"
TOOL = "tool"

#: Role names as instrumentations and providers write them -> the four roles.
_ROLES = {
    "user": USER,
    "human": USER,
    "assistant": ASSISTANT,
    "model": ASSISTANT,
    "ai": ASSISTANT,
    "bot": ASSISTANT,
    "system": SYSTEM,
    "developer": SYSTEM,
    "tool": TOOL,
    "function": TOOL,
    "ipython": TOOL,
    "tool_result": TOOL,
}
#: A message object's class name -> its role, when it has no role field (LangChain).
_TYPE_ROLES = (
    ("Human", USER),
    ("User", USER),
    ("AI", ASSISTANT),
    ("Assistant", ASSISTANT),
    ("Tool", TOOL),
    ("Function", TOOL),
    ("System", SYSTEM),
)
#: Part types that carry text, and those that are reasoning (never reply text).
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_REASONING_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking", "thought"})
#: Keys a container (a request, a response, a framework's input object) holds messages under,
#: in the order tried.
_MESSAGE_LISTS = (
    "messages",
    "contents",
    "input",
    "history",
    "prompt",
    "inputs",
    "output",
    "replies",
)
#: Wrappers around one message or one part (an OpenAI choice, OpenInference's flattened
#: ``message`` / ``message_content`` / ``tool_call``, Haystack's serialized parts).
_ONE_MESSAGE = ("message", "delta")
#: Vercel's members of a listed call (``models.vercel_calls``): its tool's name and call id.
_VERCEL_NAME = rules.at("models", "vercel_calls", "fields", "name")
_VERCEL_ID = rules.at("models", "vercel_calls", "fields", "call_id")


@dataclass(slots=True)
class ModelCall:
    """A tool call as the model emitted it (in its response), in emission order."""

    name: str
    call_id: str | None
    args: dict[str, Any] | None
    #: Position in the model's response (0-based).
    position: int
    source: str


@dataclass(slots=True)
class ToolResult:
    """A tool's result carried by a message, matched to its call by ``call_id`` (else by
    ``name`` and ``args``, when the record gives them)."""

    call_id: str | None
    value: Any
    name: str | None = None
    args: dict[str, Any] | None = None
    error: bool = False


@dataclass(slots=True)
class Message:
    role: str
    text: str | None = None
    calls: list[ModelCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)


# --- encodings -------------------------------------------------------------------------------


def decode(raw: Any, depth: int = 0) -> Any:
    """A recorded value as plain Python: JSON text parsed (and the JSON string it may hold,
    once more), a Python repr read (``dialects.pyrepr``), bytes as UTF-8; structured values
    and plain text as they are."""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode()
        except UnicodeDecodeError:
            return None
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if not text or text[0] not in "[{\"'(" and not text[0].isalpha():
        return raw
    if text[0] in '[{"':
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = _repr(text)
        else:
            if isinstance(value, str) and depth < 2 and value[:1] in ("[", "{"):
                return decode(value, depth + 1)  # JSON text inside a JSON string
            return value
        return raw if value is None else value
    if text[0] == "'" or (text[-1:] in (")", "]") and "(" in text):
        value = _repr(text)  # a repr: ``'text'``, ``Message(...)``, ``[Message(...)]``
        return raw if value is None else value
    return raw


def _repr(text: str) -> Any:
    return python_value(text) if text[-1:] in ("]", "}", ")", "'", '"') else None


def unflatten(attrs: Mapping[str, Any], prefix: str) -> list[Any] | None:
    """Keys ``{prefix}{i}.a.b`` (indexed, dotted) as the list of nested values they flatten;
    ``None`` when ``attrs`` has no such key. Numbered levels become lists in index order."""
    root: dict[str, Any] = {}
    found = False
    for key in attrs:
        if not key.startswith(prefix):
            continue
        path = key[len(prefix) :].split(".")
        if not path[0].isdigit():
            continue
        found = True
        node = root
        for step in path[:-1]:
            child = node.get(step)
            if not isinstance(child, dict):
                child = node[step] = {}
            node = child
        node.setdefault(path[-1], attrs.get(key))
    return _listed(root) if found else None


def _listed(node: Any) -> Any:
    """Nested dicts whose keys are all digits as lists, in index order."""
    if not isinstance(node, dict):
        return node
    if node and all(key.isdigit() for key in node):
        return [_listed(node[key]) for key in sorted(node, key=int)]
    return {key: _listed(value) for key, value in node.items()}


# --- shapes ----------------------------------------------------------------------------------


def read(raw: Any) -> list[Message]:
    """The messages ``raw`` holds (any encoding, any shape above), in order; ``[]`` when it
    holds none."""
    value = decode(raw)
    found: list[Message] = []
    _collect(value, found, 0)
    return found


def _collect(value: Any, found: list[Message], depth: int) -> None:
    if depth > MAX_DEPTH or len(found) >= MAX_MESSAGES:
        return
    if isinstance(value, str):
        value = decode(value) if depth else value
        if isinstance(value, str):
            return
    if isinstance(value, list):
        for item in value[:MAX_MESSAGES]:
            item = decode(item) if isinstance(item, str) else item
            if isinstance(item, dict):
                message = _message(item, depth)
                if message is not None:
                    found.append(message)
                    continue
                _collect(item, found, depth + 1)
            elif isinstance(item, list):
                _collect(item, found, depth + 1)
        return
    if not isinstance(value, dict):
        return
    message = _message(value, depth)
    if message is not None:
        found.append(message)
        return
    for key in ("choices", "candidates"):  # a response: each choice's message
        choices = value.get(key)
        if isinstance(choices, list):
            _collect(choices[:1] if key == "choices" else choices, found, depth + 1)
            return
    for key in _MESSAGE_LISTS:
        held = value.get(key)
        if isinstance(held, (list, dict)) or (isinstance(held, str) and held[:1] in "[{"):
            before = len(found)
            _collect(held, found, depth + 1)
            if len(found) > before:
                return


def _message(item: dict[str, Any], depth: int) -> Message | None:
    """One message of any shape, or ``None`` when ``item`` is none."""
    item = _fields(item)
    for key in _ONE_MESSAGE:  # an OpenAI choice, OpenInference's flattened ``message``
        inner = item.get(key)
        if isinstance(inner, dict) and "role" not in item:
            return _message(inner, depth + 1) if depth < MAX_DEPTH else None
    content = item.get("content")
    if isinstance(content, dict) and "role" not in item and isinstance(content.get("parts"), list):
        item = {"role": content.get("role", ASSISTANT), "parts": content["parts"]}  # Gemini
    if item.get("lc") == 1 and isinstance(item.get("kwargs"), dict):  # serialized LangChain
        kind = item.get("id")
        role = _type_role(kind[-1] if isinstance(kind, list) and kind else None)
        item = {**_fields(item["kwargs"]), "role": role}
    data = item.get("data")
    if isinstance(data, dict) and isinstance(item.get("type"), str) and "role" not in item:
        item = {**_fields(data), "type": item["type"]}  # LangChain's ``message_to_dict``
    kind = item.get("type")
    if kind == "function_call" and "role" not in item:  # OpenAI Responses items
        call = _call(item, 0)
        return Message(ASSISTANT, calls=[call]) if call is not None else None
    if kind == "function_call_output":
        return Message(TOOL, results=_result_list(item.get("call_id"), item.get("output")))
    role = _role(item)
    if role is None:
        return None
    message = Message(role)
    parts = item.get("parts")
    if not isinstance(parts, list):
        parts = item.get("content", item.get("contents"))
    texts: list[str] = []
    if isinstance(parts, list):
        for part in parts[:MAX_PARTS]:
            _part(
                decode(part) if isinstance(part, str) and part[:1] == "{" else part, message, texts
            )
    elif parts is not None:
        said = _text(parts)
        if said is not None:
            texts.append(said)
    _message_calls(item, message)
    if role == TOOL and not message.results:  # the message is the result (OpenAI chat)
        name = item.get("name", item.get("tool_name"))
        value = result_value(parts if not texts else "".join(texts))
        if value is not None:
            failed = (
                item.get("tool_call_error") is True
                or item.get("is_error") is True
                or item.get("status") == "error"
            )
            message.results.append(
                ToolResult(
                    call_id=ident(item.get("tool_call_id", item.get("id"))),
                    value=value,
                    name=name if isinstance(name, str) else None,
                    error=failed,
                )
            )
        texts = []
    message.text = "".join(texts) if texts else None
    return message


def _fields(item: dict[str, Any]) -> dict[str, Any]:
    """An object repr's fields under their public names (``_role`` -> ``role``)."""
    if not any(key[:1] == "_" for key in item):
        return item
    named = dict(item)
    for key, value in item.items():
        if key[:1] == "_" and key != REPR_TYPE:
            named.setdefault(key.lstrip("_"), value)
    return named


def _role(item: dict[str, Any]) -> str | None:
    raw = item.get("role", item.get("author"))
    if isinstance(raw, dict):  # a repr of an enum member read as its fields
        raw = raw.get("value")
    if isinstance(raw, str):
        return _ROLES.get(raw.lower(), raw.lower() or None)
    kind = item.get("type")
    if isinstance(kind, str) and kind in _ROLES and "content" in item:  # LangChain dicts
        return _ROLES[kind]
    if kind == "message":
        return ASSISTANT
    if "tool_call_id" in item and "content" in item:  # a tool message without its role
        return TOOL
    named = item.get(REPR_TYPE)
    return _type_role(named) if ("content" in item or "parts" in item) else None


def _type_role(name: Any) -> str | None:
    if not isinstance(name, str):
        return None
    for word, role in _TYPE_ROLES:
        if word in name:
            return role
    return None


def _part(part: Any, message: Message, texts: list[str]) -> None:
    """One part (block, content item) of a message's content."""
    if isinstance(part, str):
        if not is_marker(part):
            texts.append(part)
        return
    if not isinstance(part, dict):
        return
    part = _fields(part)
    for wrapper in ("message_content", "tool_call", "tool_call_result"):
        inner = part.get(wrapper)
        if isinstance(inner, dict) and len(part) <= 2:
            part = _fields(inner)
            break
    kind = part.get("type")
    if kind in _REASONING_TYPES or part.get("thought") is True:
        return
    call = _call(part, len(message.calls))
    if call is not None:
        message.calls.append(call)
        return
    if _part_result(part, message):
        return
    if kind is None or kind in _TEXT_TYPES:
        said = part.get("text", part.get("content"))
        if isinstance(said, str) and not is_marker(said):
            texts.append(said)


def _call(part: dict[str, Any], position: int) -> ModelCall | None:
    """A tool call part of any shape, or ``None``."""
    kind = part.get("type")
    nested = part.get("functionCall", part.get("function_call", part.get("toolUse")))
    if isinstance(nested, dict):  # Gemini, Bedrock Converse
        name = nested.get("name")
        call_id = nested.get("id", nested.get("toolUseId"))
        raw_args = nested.get("args", nested.get("input", nested.get("arguments")))
    elif kind in ("tool_call", "tool_use", "tool-call", "function_call", "function"):
        function = part.get("function")
        if isinstance(function, dict):  # an OpenAI ``tool_calls`` item given as a part
            name, raw_args = function.get("name"), function.get("arguments")
        else:
            name = part.get("name", part.get(_VERCEL_NAME))
            raw_args = part.get("arguments", part.get("input", part.get("args")))
        call_id = part.get("id", part.get("call_id", part.get(_VERCEL_ID)))
    elif "tool_name" in part and "arguments" in part:  # a ToolCall object's fields
        name, raw_args, call_id = part.get("tool_name"), part.get("arguments"), part.get("id")
    else:
        return None
    if not isinstance(name, str) or is_marker(name):
        return None
    args = {} if raw_args is None else args_from(decode(raw_args))
    return ModelCall(name, ident(call_id), args, position, "")


def _part_result(part: dict[str, Any], message: Message) -> bool:
    """A tool result part of any shape, added to ``message``: whether ``part`` was one."""
    kind = part.get("type")
    nested = part.get("functionResponse", part.get("function_response"))
    if isinstance(nested, dict):  # Gemini
        message.results += _result_list(
            nested.get("id"), nested.get("response"), nested.get("name")
        )
        return True
    nested = part.get("toolResult")
    if isinstance(nested, dict):  # Bedrock Converse
        message.results += _result_list(
            nested.get("toolUseId"), nested.get("content"), error=nested.get("status") == "error"
        )
        return True
    if kind == "tool_call_response":  # GenAI
        message.results += _result_list(part.get("id"), part.get("response"))
        return True
    if kind == "tool_result":  # Anthropic
        message.results += _result_list(
            part.get("tool_use_id", part.get("id")),
            part.get("content"),
            error=part.get("is_error") is True,
        )
        return True
    if kind == "tool-result":  # Vercel
        raw = part.get("output", part.get("result"))
        if isinstance(raw, dict) and raw.get("type") in _VERCEL_OUTPUT:
            raw = raw.get("value")  # v5: {"type": "json" | "text", "value"}
        message.results += _result_list(part.get(_VERCEL_ID), raw, part.get(_VERCEL_NAME))
        return True
    if kind == "function_call_output":  # Responses, given as a part
        message.results += _result_list(part.get("call_id"), part.get("output"))
        return True
    origin = part.get("origin")
    if "result" in part and isinstance(origin, dict):  # a ToolCallResult object's fields
        call = _call(_fields(origin), 0)
        message.results += _result_list(
            origin.get("id"),
            part.get("result"),
            call.name if call else None,
            call.args if call else None,
            error=part.get("error") is True,
        )
        return True
    return False


_VERCEL_OUTPUT = ("json", "text", "error-text", "error-json")


def _result_list(
    call_id: Any,
    raw: Any,
    name: Any = None,
    args: dict[str, Any] | None = None,
    *,
    error: bool = False,
) -> list[ToolResult]:
    value = result_value(raw)
    if value is None:
        return []
    return [ToolResult(ident(call_id), value, name if isinstance(name, str) else None, args, error)]


def _message_calls(item: dict[str, Any], message: Message) -> None:
    """Calls listed beside the content: OpenAI ``tool_calls`` (``function.{name,
    arguments}``; LangChain ``{name, args, id}``; OpenInference's ``tool_call`` wrapper) and
    the older ``function_call``."""
    listed = decode(item.get("tool_calls"))
    if isinstance(listed, list):
        for entry in listed[:MAX_PARTS]:
            entry = decode(entry)
            if not isinstance(entry, dict):
                continue
            entry = _fields(entry)
            inner = entry.get("tool_call")
            if isinstance(inner, dict):
                entry = inner
            function = decode(entry.get("function"))
            if isinstance(function, dict):
                name, raw_args = function.get("name"), function.get("arguments")
            else:
                name, raw_args = entry.get("name"), entry.get("args", entry.get("arguments"))
            if isinstance(name, str) and not is_marker(name):
                args = {} if raw_args is None else args_from(decode(raw_args))
                message.calls.append(
                    ModelCall(name, ident(entry.get("id")), args, len(message.calls), "")
                )
    legacy = decode(item.get("function_call"))
    if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
        raw_args = legacy.get("arguments")
        args = {} if raw_args is None else args_from(decode(raw_args))
        message.calls.append(ModelCall(legacy["name"], None, args, len(message.calls), ""))


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return None if is_marker(content) else content
    return None


# --- values ----------------------------------------------------------------------------------


def result_value(raw: Any) -> Any:
    """A recorded result as a value: JSON text parsed, a Python repr of a dict or list read,
    content blocks (``[{"text": ...}]``, Bedrock's ``[{"json": ...}]``) joined into their text
    (parsed again when that is JSON), markers ``None``."""
    if isinstance(raw, bytes):
        return None
    if isinstance(raw, str) and is_marker(raw):
        return None
    value = _result(raw)
    if isinstance(value, list) and value and all(_is_text_block(b) for b in value):
        joined = "".join(block["text"] for block in value)
        value = None if is_marker(joined) else _result(joined)
    elif isinstance(value, list) and len(value) == 1 and _is_json_block(value[0]):
        value = _result(value[0]["json"])  # Bedrock's ``{"json": ...}`` (JSON text when flattened)
    if isinstance(value, str) and is_marker(value):
        return None
    return value


#: Objects a framework wraps a tool's return value in (``rules.json``
#: ``content.result_envelopes``): (the keys that mark one, the key of the value, the key of
#: its text blocks, read when the value is missing).
_ENVELOPES = tuple(
    (frozenset(row["marks"]), row["value"], row.get("text_blocks"))
    for row in rules.at("content", "result_envelopes")
)


def _unenveloped(value: dict[str, Any]) -> Any:
    """The return value inside a framework's tool-output object, or ``value`` itself."""
    for marks, inner, blocks in _ENVELOPES:
        if marks <= value.keys():
            found = value.get(inner)
            if found is not None:
                return _result(found)
            texts = [b["text"] for b in value.get(blocks) or () if _is_text_block(b)]
            return _result("".join(texts)) if texts else value
    return value


#: Keys one of which a tool message recorded as a result has: its content, or the body of
#: LangChain's serialized (``kwargs``) or dumped (``message_to_dict``: ``data``) message.
_MESSAGE_BODIES = frozenset({"content", "kwargs", "data"})


def tool_payload(value: Any) -> Any:
    """A tool's recorded result that is itself a tool message (LangChain's ``ToolMessage``,
    as a dict, serialized, or its pydantic ``str()`` ``content='...' tool_call_id='...'``) as
    that message's content; a framework's tool-output object (``_ENVELOPES``) as the value it
    holds; any other value as it is."""
    if isinstance(value, dict) and _ENVELOPES:
        value = _unenveloped(value)
    if isinstance(value, str) and value[:8] == "content=":
        parsed = python_value(value)
        value = parsed if isinstance(parsed, dict) else value
    if not isinstance(value, dict) or not _MESSAGE_BODIES & value.keys():
        return value
    found = _message(value, 0)
    if found is not None and found.role == TOOL and found.results:
        return found.results[0].value
    return value


def tool_message_failure(value: Any) -> str | None:
    """What a recorded result that is a tool message marked failed says (LangChain's
    ``ToolMessage`` with ``status: "error"``, serialized or dumped, inside a framework's
    tool-output object or not): its content, ``"error"`` when it has none; ``None`` for any
    other value. LangChain turns a tool's handled exception into such a message, so the
    tool's span itself ends without an error status."""
    if isinstance(value, dict) and _ENVELOPES:
        value = _unenveloped(value)
    if not isinstance(value, dict) or not _MESSAGE_BODIES & value.keys():
        return None
    found = _message(value, 0)
    if found is None or found.role != TOOL or not found.results or not found.results[0].error:
        return None
    said = found.results[0].value
    return said if isinstance(said, str) and said else "error"


def _result(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    text = raw.strip()
    if text[:1] in ("{", "[", '"'):
        value = decode(text)
        return raw if value is None else value
    return raw


def _is_text_block(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and isinstance(block.get("text"), str)
        and block.get("type", "text") == "text"
    )


def _is_json_block(block: Any) -> bool:
    return isinstance(block, dict) and set(block) == {"json"}


# --- what a list of messages says ------------------------------------------------------------


def last_user_text(messages: list[Message]) -> str | None:
    """The text of the last user message that has text."""
    for message in reversed(messages):
        if message.role == USER and message.text is not None:
            return message.text
    return None


def content_text(content: Any) -> str | None:
    """The text of one message's content (a string, or parts and blocks with text)."""
    found = _message({"role": USER, "content": decode(content)}, 0)
    return found.text if found is not None else None


def results_of(messages: list[Message]) -> list[ToolResult]:
    """Every tool result the messages carry, in order."""
    return [result for message in messages for result in message.results]


def output_of(messages: list[Message], source: str) -> tuple[list[ModelCall], str | None]:
    """What a model answered, read from its response messages: the calls it asked for (in its
    order, labelled ``source``) and its text (the assistant messages' text, joined)."""
    calls: list[ModelCall] = []
    texts: list[str] = []
    for message in messages:
        if message.role != ASSISTANT:
            continue
        for call in message.calls:
            call.position = len(calls)
            call.source = source
            calls.append(call)
        if message.text is not None:
            texts.append(message.text)
    return calls, "".join(texts) if texts else None


#: The encodings of ``messages.request`` and ``messages.response`` rows.
_ROW_ENCODINGS = frozenset({"messages", "flat_list", "joined_calls"})


def _rows(side: str) -> tuple[tuple[str, bool, str], ...]:
    """``rules.json`` ``messages.<side>``: (key or prefix, whether it is a flattened prefix,
    the source label of the calls read through it)."""
    return tuple(
        (row["prefix"], True, row.get("source", ""))
        if "prefix" in row
        else (row["key"], False, row.get("source", ""))
        for row in rules.rows("messages", side, encodings=_ROW_ENCODINGS)
        if row["encoding"] != "joined_calls"  # read by ``joined_calls`` below
    )


REQUEST_ROWS = _rows("request")
RESPONSE_ROWS = _rows("response")


#: ``messages.response`` rows of encoding ``joined_calls``: (the arguments' key, the names'
#: key, the ids' key, the separator, the source label).
JOINED_ROWS = tuple(
    (
        row["key"],
        row["fields"]["name"],
        row["fields"]["id"],
        row["fields"]["separator"],
        row.get("source", ""),
    )
    for row in rules.rows("messages", "response", encodings=_ROW_ENCODINGS)
    if row["encoding"] == "joined_calls"
)
_JSON = json.JSONDecoder()


def joined_calls(attrs: Mapping[str, Any]) -> list[ModelCall] | None:
    """The calls a model span lists as joined texts (``JOINED_ROWS``: OpenLIT), or ``None``
    when it has none. The arguments are read one JSON value after another (the separator
    between them may also stand inside one); names and ids are split on the separator and
    paired by position, and only when their counts agree with the arguments'."""
    for key, names_key, ids_key, separator, source in JOINED_ROWS:
        raw = attrs.get(key)
        if not isinstance(raw, str) or len(raw) > MAX_JOINED_CHARS:
            continue
        values = _json_values(raw, separator)
        if not values:
            continue
        names = _split(attrs.get(names_key), separator)
        if len(names) != len(values):
            return None  # an empty field dropped from one list: no pairing is safe
        ids = _split(attrs.get(ids_key), separator)
        ids_of = ids if len(ids) == len(values) else [None] * len(values)
        return [
            ModelCall(name, ident(call_id), args_from(value), position, source)
            for position, (name, call_id, value) in enumerate(
                zip(names, ids_of, values, strict=True)
            )
        ]
    return None


#: Bound on the joined arguments text read (longer is left unread).
MAX_JOINED_CHARS = 1 << 20


def _json_values(text: str, separator: str) -> list[Any]:
    """JSON values one after another with ``separator`` between them; ``[]`` when the text is
    not that."""
    values: list[Any] = []
    gap = separator.strip()
    at = _after_space(text, 0)
    while at < len(text):
        if values:
            if not text.startswith(gap, at):
                return []
            at = _after_space(text, at + len(gap))
        try:
            value, at = _JSON.raw_decode(text, at)
        except ValueError:
            return []
        values.append(value)
        at = _after_space(text, at)
    return values


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _split(raw: Any, separator: str) -> list[str]:
    return [part.strip() for part in raw.split(separator)] if isinstance(raw, str) else []
