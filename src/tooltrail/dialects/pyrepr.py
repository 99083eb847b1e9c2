"""Python reprs read as data: literals, and the reprs of objects, never executed.

Instrumentations often record ``str(value)`` of a Python object instead of JSON: a dict
(``{'role': 'tool', 'content': None}``), a list of a framework's message objects
(``[ChatMessage(_role=<ChatRole.TOOL: 'tool'>, _content=[...])]``), a result object. This
module reads such text with ``ast.parse`` (which only parses) and a walk that turns the tree
into plain values:

- literals (strings, numbers, ``True``, ``None``, lists, tuples, sets, dicts) as themselves;
- a call ``Name(field=value, ...)`` (an object's repr) as a dict of its keyword fields, with
  the class name under ``REPR_TYPE``; positional values under ``REPR_ARGS``;
- a pydantic model's ``str()`` (``content='...' name='f'``: fields apart, no class name) as a
  dict of its fields;
- an angle-bracketed token outside string literals (``<ChatRole.TOOL: 'tool'>``, the repr of
  an enum member) as its value, any other (``<function f at 0x7f...>``) as ``None``;
- anything else (names, operators) as ``None``.

Bounded: text over ``MAX_REPR_CHARS`` is not read, and nesting deeper than the parser allows is
"not a repr" (``None``), as is text that does not parse.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any

#: Longest text read as a repr (parsing work grows with the text).
MAX_REPR_CHARS = 1 << 20
#: The key under which an object repr's class name is kept (``Message(...)`` -> ``Message``).
REPR_TYPE = "__type__"
#: The key under which an object repr's positional values are kept.
REPR_ARGS = "__args__"

_NOTHING = object()
#: Text that starts like a pydantic model's ``str()``: ``field=value field=value``.
_FIELDS = re.compile(r"[A-Za-z_]\w*=\S")
#: The class name a field list is read under (it has none of its own).
_FIELDS_TYPE = "Fields"


def python_value(text: str) -> Any:
    """The value a Python repr stands for, or ``None`` when ``text`` is not one."""
    if len(text) > MAX_REPR_CHARS:
        return None
    source = text.strip()
    if not source:
        return None
    tree = _parse(source)
    if tree is None and "<" in source:
        cleaned = _without_angle_tokens(source)
        tree = _parse(cleaned) if cleaned is not None else None
    if tree is None and _FIELDS.match(source):  # ``content='...' name='f'`` (pydantic's str())
        tree = _parse(f"{_FIELDS_TYPE}({_with_commas(source)})")
    if tree is None:
        return None
    try:
        value = _value(tree.body)
    except RecursionError:
        return None
    return None if value is _NOTHING else value


def _parse(source: str) -> ast.Expression | None:
    try:
        return ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None


def _value(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        value = node.value
        return None if value is Ellipsis else value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [_plain(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        found: dict[str, Any] = {}
        for key, item in zip(node.keys, node.values, strict=True):
            if key is None:  # ``**spread``
                continue
            name = _value(key)
            if isinstance(name, (str, int, float, bool)) or name is None:
                found[str(name) if not isinstance(name, str) else name] = _plain(item)
        return found
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        if isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner if isinstance(node.op, ast.USub) else inner
        return None
    if isinstance(node, ast.Call):
        fields: dict[str, Any] = {}
        name = _dotted(node.func)
        if name is not None:
            fields[REPR_TYPE] = name
        if node.args:
            fields[REPR_ARGS] = [_plain(arg) for arg in node.args]
        for keyword in node.keywords:
            if keyword.arg is not None:
                fields[keyword.arg] = _plain(keyword.value)
        return fields
    return _NOTHING


def _plain(node: ast.AST) -> Any:
    value = _value(node)
    return None if value is _NOTHING else value


def _dotted(node: ast.AST) -> str | None:
    """``Name`` or ``a.b.Name`` of a call, as its last name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _without_angle_tokens(source: str) -> str | None:
    """``source`` with each ``<...>`` outside string literals replaced: an enum member's repr
    ``<Name.MEMBER: value>`` by its value, any other by ``None``. ``None`` when the text does
    not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    out: list[str] = []
    index = 0
    count = len(tokens)
    while index < count:
        token = tokens[index]
        if token.type == tokenize.OP and token.string == "<":
            closing = _closing(tokens, index)
            if closing is None:
                return None
            out.append(_angle_value(tokens[index + 1 : closing]))
            index = closing + 1
            continue
        if token.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER):
            out.append(" ")
        elif token.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT):
            out.append(token.string)
            out.append(" ")
        index += 1
    return "".join(out)


def _with_commas(source: str) -> str:
    """``a=1 b='x'`` as ``a=1, b='x'``: a comma before each ``name=`` outside brackets and
    strings (pydantic writes its fields separated by spaces); unchanged when it does not
    tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source
    out: list[str] = []
    depth = 0
    for index, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if (
            depth == 0
            and out
            and token.type == tokenize.NAME
            and following is not None
            and following.string == "="
        ):
            out.append(",")
        if token.type not in (
            tokenize.NEWLINE,
            tokenize.NL,
            tokenize.ENDMARKER,
            tokenize.INDENT,
            tokenize.DEDENT,
        ):
            out.append(token.string)
    return " ".join(out)


def _closing(tokens: list[tokenize.TokenInfo], start: int) -> int | None:
    depth = 0
    for index in range(start, len(tokens)):
        token = tokens[index]
        if token.type != tokenize.OP:
            continue
        if token.string == "<":
            depth += 1
        elif token.string == ">":
            depth -= 1
            if depth == 0:
                return index
    return None


def _angle_value(inner: list[tokenize.TokenInfo]) -> str:
    """The text standing for one ``<...>`` token: an enum member's value, else ``None``."""
    for index, token in enumerate(inner):
        if token.type == tokenize.OP and token.string == ":":
            head = inner[:index]
            if head and all(t.type == tokenize.NAME or t.string == "." for t in head):
                value = " ".join(t.string for t in inner[index + 1 :]).strip()
                return value if value else "None"
            break
    return "None"
