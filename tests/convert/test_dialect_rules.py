"""The dialect rules as data (``dialects/rules.json``): the one place each key is written, a
file that follows its schema, and readers that do what its rows say."""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fixtures import ROOT

from tooltrail import dialects
from tooltrail.dialects import rules
from tooltrail.dialects.content import tool_result, user_input
from tooltrail.dialects.usage import model_usage
from tooltrail.otlp.decode.span import Span

PACKAGE = Path(dialects.__file__).parent
TRACE = "0af7651916cd43dd8448eb211c80319c"
#: A row key that is a bare word (``content``, ``id``) names a field of an event body or of a
#: message: the shape of the nested-message walk, which is code (docs/architecture.md).
_BARE_WORD = re.compile(r"[a-z]+")


def span(name: str, attributes: dict[str, Any]) -> Span:
    return Span(TRACE, "b7ad6b7169203331", name=name, attributes=attributes, events=[])


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value)


#: Fields and lists whose strings are values or directives, not names: marker values, finish
#: reasons, where a name is taken from (``"from": "span_name"``).
_NOT_NAMES = frozenset(
    {"note", "encoding", "answers", "unwrap", "values", "value", "from", "else", "asked_for_tools"}
)


def table_facts(table: dict[str, Any]) -> set[str]:
    """Every attribute key, span name, name prefix, event name, scope, final-answer tool name
    and source label ``table`` states (marker values and notes aside)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, dict):
            for name, value in node.items():
                if name in _NOT_NAMES:
                    continue
                if name in ("key", "not_captured_pair", "when") and isinstance(value, str):
                    if not _BARE_WORD.fullmatch(value):
                        found.add(value)
                    continue
                walk(value)
        elif isinstance(node, str) and node:
            found.add(node)

    roles = table["roles"]
    found.update(roles["by_span_name"], roles["by_name_prefix"])
    found.update(row["key"] for row in roles["by_marker"])
    for section in ("tools", "agents", "models", "conversations", "usage", "content", "messages"):
        walk(table[section])
    found.update(set(_strings(table["events"])) - {"content", "id"})
    for scope, tools in table["final_tools"].items():
        found.add(scope)
        found.update(_strings(tools))
    return {fact for fact in found if not _BARE_WORD.fullmatch(fact) or fact in _NAMED_WORDS}


#: Bare words the table holds as names (an event's name), which code must not spell either.
_NAMED_WORDS = frozenset({"exception", "invocation", "call_llm"})


def code_strings(path: Path) -> Iterator[tuple[int, str]]:
    """The string constants of a module, docstrings aside, with their lines."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            yield node.lineno, node.value


def test_the_table_states_the_keys_the_readers_use() -> None:
    facts = table_facts(rules.RULES)
    # the scope of the next test: a sample of what it covers, so that it cannot pass empty
    for fact in (
        "gen_ai.tool.call.arguments",
        "ai.toolCall.args",
        "tool_response",
        "mlflow.spanInputs",
        "gen_ai.usage.input_tokens",
        "gen_ai.client.inference.operation.details",
        "running tool",
        "execute_tool ",
        "pydantic-ai",
        "final_result",
        "vercel:ai.toolCall.args",
        "llm.input_messages.",
    ):
        assert fact in facts, fact
    assert len(facts) > 150


def test_no_key_of_the_table_is_written_again_in_the_readers() -> None:
    facts = table_facts(rules.RULES)
    written = [
        f"{path.name}:{line}: {value!r}"
        for path in sorted(PACKAGE.glob("*.py"))
        for line, value in code_strings(path)
        if value in facts
    ]
    assert written == [], "keys of rules.json written in code:\n" + "\n".join(written)


def test_the_file_follows_its_schema() -> None:
    rules.check(orjson.loads(Path(rules.RULES_PATH).read_bytes()))
    used: set[str] = set()

    def encodings(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                encodings(item)
        elif isinstance(node, dict):
            if "encoding" in node:
                used.add(node["encoding"])
            for value in node.values():
                encodings(value)

    encodings(rules.RULES)
    assert used <= set(rules.ENCODINGS)


def _broken(change: Any) -> dict[str, Any]:
    table = copy.deepcopy(rules.RULES)
    change(table)
    return table


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            lambda t: t["usage"]["model"][0].update(encoding="yaml"),
            "rules.json.usage.model[0]: encoding 'yaml' is not one of",
            id="unknown-encoding",
        ),
        pytest.param(
            lambda t: t["content"]["tool_result"][1].update(fallback="x"),
            "rules.json.content.tool_result[1]: unknown fields ['fallback']",
            id="unknown-field",
        ),
        pytest.param(
            lambda t: t["roles"]["by_span_name"].update({"ai.embed": "tool:embed"}),
            "rules.json: roles: 'ai.embed' -> unknown role 'tool:embed'",
            id="unknown-reader",
        ),
        pytest.param(
            lambda t: t["tools"]["openinference"]["args"].update(unwrap=["xml"]),
            "unwrap 'xml' is not one of",
            id="unknown-unwrap",
        ),
        pytest.param(
            lambda t: t["content"]["tool_result"][0].update(answers="always"),
            "answers 'always' is not one of",
            id="unknown-answers",
        ),
        pytest.param(
            lambda t: t["usage"]["input_tokens"][0].pop("key"),
            "rules.json.usage.input_tokens[0]: a row needs a key",
            id="row-without-key",
        ),
        pytest.param(
            lambda t: t["messages"]["request"][-1].pop("prefix"),
            "a flat_list row needs a prefix",
            id="flat-list-without-prefix",
        ),
        pytest.param(lambda t: t.pop("usage"), "rules.json: sections", id="missing-section"),
        pytest.param(lambda t: t.update(extra={}), "rules.json: sections", id="unknown-section"),
        pytest.param(lambda t: t.update(schema=2), "schema 2, this reader knows 1", id="schema"),
    ],
)
def test_a_row_out_of_schema_is_refused_by_name(change: Any, message: str) -> None:
    with pytest.raises(rules.RulesError) as raised:
        rules.check(_broken(change))
    assert message in str(raised.value)


def test_a_reader_refuses_a_row_whose_encoding_it_does_not_implement() -> None:
    assert rules.key("tools", "vercel", "call_id", encoding="id") == "ai.toolCall.id"
    with pytest.raises(rules.RulesError, match=r"tools\.vercel\.call_id is not a row of"):
        rules.key("tools", "vercel", "call_id", encoding="json")
    with pytest.raises(rules.RulesError, match=r"usage\.model\[0\] has an encoding"):
        rules.keys("usage", "model", encodings={"count"})


def test_the_file_is_package_data() -> None:
    # (a text match: tomllib is not in Python 3.10, which the package supports)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    section = pyproject.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    shipped = re.search(r"^tooltrail = (\[.*\])$", section, re.MULTILINE)
    assert shipped is not None and "dialects/rules.json" in orjson.loads(shipped.group(1))
    assert Path(rules.RULES_PATH) == PACKAGE / "rules.json"


# --- the readers do what the rows say ---------------------------------------------------------

_ROLE = {"agent": dialects.ROLE_AGENT, "model": dialects.ROLE_MODEL}


def test_every_span_name_and_marker_row_classifies_as_the_table_says() -> None:
    table = rules.RULES["roles"]
    cases = [(name, {}, role) for name, role in table["by_span_name"].items()]
    cases += [
        ("some span", {row["key"]: value}, role)
        for row in table["by_marker"]
        for value, role in row["values"].items()
    ]
    assert len(cases) > 30
    for name, attrs, role in cases:
        names = {"gen_ai.tool.name": "lookup", "ai.toolCall.name": "lookup"}
        found, call = dialects.classify(span(name, {**attrs, **names}))
        if role.startswith("tool:"):
            assert found == dialects.ROLE_TOOL and call is not None, (name, attrs)
            assert call.source.split(":")[0] in {
                "genai", "vercel", "pydantic-ai", "openinference", "traceloop", "mlflow",
                "langsmith", "openllmetry-langchain",
            }  # fmt: skip
        elif role == "workflow":
            assert found == dialects.ROLE_WORKFLOW, (name, attrs)
        else:
            assert found == _ROLE[role], (name, attrs)


def test_every_usage_row_is_read_in_its_order() -> None:
    table = rules.RULES["usage"]
    for side, index in (("input_tokens", 0), ("output_tokens", 1)):
        keys = [row["key"] for row in table[side]]
        for position, key in enumerate(keys):
            attrs = {k: 100 + i for i, k in enumerate(keys[position:])}
            found = model_usage({**attrs, table["model"][-1]["key"]: "m"})
            assert found is not None and found[index] == 100, key
            assert found[2] == "m"
            assert model_usage({key: "42"}) is not None  # an int64 as OTLP/JSON writes it


def test_every_tool_result_row_is_read_in_its_order() -> None:
    rows = rules.RULES["content"]["tool_result"]
    for position, row in enumerate(rows):
        later = {other["key"]: '{"from": "later"}' for other in rows[position + 1 :]}
        value = '{"from": "this"}'
        if row["encoding"] == "json_twice":
            value = orjson.dumps(value).decode()
        found = tool_result(span("execute_tool t", {**later, row["key"]: value}))
        assert found == {"from": "this"}, row["key"]


def test_every_user_input_row_is_read() -> None:
    for row in rules.RULES["content"]["user_input"]:
        value = '[{"role": "user", "content": "refund order 7"}]'
        if row["encoding"] == "json_twice":
            value = orjson.dumps(value).decode()
        assert user_input(span("agent", {row["key"]: value})) == "refund order 7", row["key"]
