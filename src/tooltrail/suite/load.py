"""Suite files -> ``TestSuite``: strict keys, typed values, errors with file, line and key path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tooltrail.hints import did_you_mean
from tooltrail.model import ToolCall
from tooltrail.suite.argrules import (
    OPTION_KEYS,
    CompareArgs,
    RuleError,
    options_of,
    read_args_from,
    read_compare_args,
)
from tooltrail.suite.case import (
    ARGS_MODES,
    EvaluatorConfig,
    Expect,
    JudgeConfig,
    ModelPrice,
    Origin,
    Prices,
    TestCase,
    ToolCallArgs,
    Turn,
)
from tooltrail.suite.contains import read_contains_options
from tooltrail.suite.fields import FieldReader, KeyPath, read_document
from tooltrail.suite.gate import gate_from_data
from tooltrail.suite.handoffs import read_handoffs
from tooltrail.suite.match import Match
from tooltrail.suite.reference import Reference
from tooltrail.suite.sample import read_sample
from tooltrail.suite.suite_error import SuiteError
from tooltrail.suite.vocabulary import CASE_TERMS, TURN_TERMS, Term, file_keys

SUITE_KEYS = (
    "name",
    "version",
    "description",
    "gate",
    "prices",
    "check_timeout",
    "judge",
    "cases",
)
CASE_KEYS = (
    "id",
    "name",
    "description",
    "input",
    "match",
    "agent",
    "tags",
    *file_keys(CASE_TERMS),
    "compare_args",
    "contains_options",
    "prices",
    "turns",
    "evaluators",
    "runs",
    "threshold",
    "ignore_failed_calls",
    "check_timeout",
    "metadata",
    "reference",
)
EVALUATOR_KEYS = ("name", "threshold", "config", "required", "agent", "sample")
TURN_KEYS = ("user", "expect", "agent")
EXPECT_KEYS = (*file_keys(TURN_TERMS), "agent")
PRICE_KEYS = ("input", "output")
TOOL_CALL_ARGS_KEYS = ("tool", "args", "mode", "judge", *OPTION_KEYS)
JUDGE_KEYS = ("rubric", "model")
MATCH_KEYS = ("service_name", "agent_name", "root_span_name", "attributes", "all")
REFERENCE_KEYS = ("calls", "file", "trace_id")
REFERENCE_CALL_KEYS = ("tool", "args")


def suite_fields_of_file(path: str | Path) -> dict[str, Any]:
    """Read and validate a suite file: ``TestSuite``'s fields (``TestSuite.load`` builds it;
    this module knows the file format, not the class, so neither imports the other)."""
    data, reader = read_document(path)
    return suite_fields(data, reader)


def suite_fields(data: Any, reader: FieldReader) -> dict[str, Any]:
    """Validate a parsed suite document: ``TestSuite``'s fields by name."""
    top = reader.mapping(data, (), SUITE_KEYS, required=("name", "cases"), what="a suite mapping")
    name = reader.string(top["name"], ("name",))
    version = _version(top.get("version", "1"), reader)
    raw_cases = top["cases"]
    if not isinstance(raw_cases, list) or not raw_cases:
        reader.fail(("cases",), "expected a non-empty list of cases")
    prices = None
    if top.get("prices") is not None:
        prices = _prices(top["prices"], ("prices",), reader)
    cases: list[TestCase] = []
    first_line: dict[str, int] = {}
    for i, raw in enumerate(raw_cases):
        case = read_case(raw, ("cases", i), reader)
        if case.max_cost_usd is not None and case.prices is None and prices is None:
            reader.fail(
                ("cases", i, "max_cost_usd"),
                "max_cost_usd needs a price table: `prices:` in the suite or in the case "
                "(model name -> {input: ..., output: ...} US dollars per million tokens)",
            )
        if case.id in first_line:
            reader.fail(
                ("cases", i, "id"),
                f"duplicate case id {case.id!r} (also cases[{first_line[case.id]}])",
            )
        first_line[case.id] = i
        cases.append(case)
    gate = None
    if top.get("gate") is not None:
        gate = gate_from_data(top["gate"], reader, ("gate",))
    limit = None
    if top.get("check_timeout") is not None:
        limit = check_timeout(top["check_timeout"], ("check_timeout",), reader)
    fields = {
        "name": name,
        "version": version,
        "cases": cases,
        "gate": gate,
        "prices": prices,
        "check_timeout": limit,
    }
    if top.get("judge") is not None:  # only then is the judge engine imported
        fields["judge"] = _judge_settings(top["judge"], reader)
    return fields


def _judge_settings(raw: Any, reader: FieldReader) -> Any:
    """The suite's ``judge:`` block as ``JudgeSettings``, each key checked where it stands."""
    from tooltrail.judge.config_errors import JudgeConfigError
    from tooltrail.judge.settings import read_judge_settings

    block = reader.free_mapping(raw, ("judge",), "a mapping of judge settings (model, ...)")
    for key, value in block.items():  # one by one: the error names the key's own line
        try:
            read_judge_settings({key: value}, where="judge")
        except JudgeConfigError as exc:
            reader.fail(("judge", key), str(exc))
    try:
        return read_judge_settings(block, where="judge")
    except JudgeConfigError as exc:
        reader.fail(("judge",), str(exc))


def check_timeout(value: Any, path: KeyPath, reader: FieldReader) -> float:
    """A check's time limit: seconds, more than 0."""
    seconds = reader.limit(value, path)
    if seconds <= 0:
        reader.fail(path, f"must be more than 0 seconds, got {value!r}")
    return seconds


def _prices(raw: Any, path: KeyPath, reader: FieldReader) -> Prices:
    """``model: {input: dollars, output: dollars}`` per million tokens."""
    models = reader.free_mapping(raw, path, "a mapping of model name -> {input, output}")
    prices: Prices = {}
    for model, entry in models.items():
        at = path + (model,)
        data = reader.mapping(
            entry, at, PRICE_KEYS, required=PRICE_KEYS, what="an {input, output} mapping"
        )
        prices[model] = ModelPrice(
            input=reader.limit(data["input"], at + ("input",)),
            output=reader.limit(data["output"], at + ("output",)),
        )
    return prices


def _version(value: Any, reader: FieldReader) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        reader.fail(("version",), "expected a version string")
    return str(value)


def read_case(raw: Any, path: KeyPath, reader: FieldReader) -> TestCase:
    """One case mapping of a suite file (at ``path``), read strictly into a ``TestCase``: the
    loader's ``cases:`` and the pytest plugin's YAML agent tests read a case the same way."""
    data = reader.mapping(raw, path, CASE_KEYS, required=("id",), what="a case mapping")
    get = data.get
    fields: dict[str, Any] = {"id": reader.string(data["id"], path + ("id",))}
    for key in ("name", "input"):
        if get(key) is not None:
            fields[key] = reader.string(data[key], path + (key,), allow_empty=True)
    if get("tags") is not None:
        fields["tags"] = reader.string_list(data["tags"], path + ("tags",))
    fields.update(_terms(CASE_TERMS, data, path, reader))
    for key, read in (
        ("compare_args", read_compare_args),
        ("contains_options", read_contains_options),
    ):
        if get(key) is not None:
            fields[key] = _rule(read, data[key], path + (key,), reader)
    if get("prices") is not None:
        fields["prices"] = _prices(data["prices"], path + ("prices",), reader)
    if get("runs") is not None:
        fields["runs"] = reader.integer(data["runs"], path + ("runs",), minimum=1)
    if get("threshold") is not None:
        fields["threshold"] = reader.fraction(data["threshold"], path + ("threshold",))
    if get("ignore_failed_calls") is not None:
        fields["ignore_failed_calls"] = reader.boolean(
            data["ignore_failed_calls"], path + ("ignore_failed_calls",)
        )
    if get("check_timeout") is not None:
        fields["check_timeout"] = check_timeout(
            data["check_timeout"], path + ("check_timeout",), reader
        )
    if get("metadata") is not None:
        fields["metadata"] = reader.free_mapping(data["metadata"], path + ("metadata",))
    if get("agent") is not None:
        fields["agent"] = reader.string(data["agent"], path + ("agent",))
    if get("match") is not None:
        fields["match"] = _match(data["match"], path + ("match",), reader)
    if get("reference") is not None:
        fields["reference"] = _reference(data["reference"], path + ("reference",), reader)
    if get("turns") is not None:
        turns = data["turns"]
        if not isinstance(turns, list):
            reader.fail(path + ("turns",), "expected a list of turns")
        fields["turns"] = [_turn(t, path + ("turns", i), reader) for i, t in enumerate(turns)]
    if get("evaluators") is not None:
        evaluators = data["evaluators"]
        if not isinstance(evaluators, list):
            reader.fail(path + ("evaluators",), "expected a list of evaluators")
        fields["evaluators"] = [
            _evaluator(e, path + ("evaluators", i), reader) for i, e in enumerate(evaluators)
        ]
    try:
        return TestCase(**fields)
    except SuiteError as exc:
        reader.fail(path, exc.message)


def _match(raw: Any, path: KeyPath, reader: FieldReader) -> Match:
    if raw == "all":
        return Match(all=True)
    if isinstance(raw, str):
        reader.fail(path, f"expected `all` or a mapping of selectors, got {raw!r}")
    data = reader.mapping(raw, path, MATCH_KEYS, what="`all` or a mapping of selectors")
    fields: dict[str, Any] = {}
    for key in ("service_name", "agent_name", "root_span_name"):
        if data.get(key) is not None:
            fields[key] = reader.string(data[key], path + (key,))
    if data.get("attributes") is not None:
        fields["attributes"] = reader.free_mapping(data["attributes"], path + ("attributes",))
    if data.get("all") is not None:
        fields["all"] = reader.boolean(data["all"], path + ("all",))
    try:
        return Match(**fields)
    except SuiteError as exc:
        reader.fail(path, exc.message)


def _reference(raw: Any, path: KeyPath, reader: FieldReader) -> Reference:
    """``{calls: [...]}`` inline, or ``{file, trace_id}`` of a recorded trace; the file is
    resolved relative to the suite file and must exist (its trace is read when checked)."""
    data = reader.mapping(raw, path, REFERENCE_KEYS, what="a reference mapping")
    if data.get("calls") is not None:
        for key in ("file", "trace_id"):
            if key in data:
                reader.fail(path + (key,), "a reference has `calls` or a `file` and `trace_id`")
        items = data["calls"]
        if not isinstance(items, list):
            reader.fail(path + ("calls",), "expected a list of calls ({tool, args} or a name)")
        calls = tuple(
            _reference_call(item, path + ("calls", i), reader) for i, item in enumerate(items)
        )
        return Reference(calls=calls)
    for key in ("file", "trace_id"):
        if data.get(key) is None:
            reader.fail(
                path, f"missing key {key!r}: a reference has `calls`, or a `file` and a `trace_id`"
            )
    trace_id = reader.string(data["trace_id"], path + ("trace_id",))
    name = reader.string(data["file"], path + ("file",))
    base = os.path.dirname(os.path.abspath(reader.source)) if reader.source else os.getcwd()
    file = os.path.normpath(os.path.join(base, os.path.expanduser(name)))
    if not os.path.isfile(file):
        reader.fail(path + ("file",), f"reference file not found: {file}")
    return Reference(file=file, trace_id=trace_id)


def _reference_call(raw: Any, path: KeyPath, reader: FieldReader) -> ToolCall:
    if isinstance(raw, str):  # a name alone: any arguments
        return ToolCall(name=reader.string(raw, path))
    data = reader.mapping(
        raw, path, REFERENCE_CALL_KEYS, required=("tool",), what="a {tool, args} mapping"
    )
    tool = reader.string(data["tool"], path + ("tool",))
    args = None
    if data.get("args") is not None:
        args = reader.free_mapping(data["args"], path + ("args",), "a mapping of argument values")
    return ToolCall(name=tool, args=args)


def _turn(raw: Any, path: KeyPath, reader: FieldReader) -> Turn:
    data = reader.mapping(raw, path, TURN_KEYS, what="a turn mapping")
    user = (
        reader.string(data["user"], path + ("user",), allow_empty=True)
        if data.get("user") is not None
        else ""
    )
    expect = Expect()
    if data.get("expect") is not None:
        expect = _expect(data["expect"], path + ("expect",), reader)
    return Turn(user=user, expect=expect, agent=_agent(data, path, reader))


def _expect(raw: Any, path: KeyPath, reader: FieldReader) -> Expect:
    data = reader.mapping(raw, path, EXPECT_KEYS, what="an expect mapping")
    return Expect(**_terms(TURN_TERMS, data, path, reader), agent=_agent(data, path, reader))


def _agent(data: dict[str, Any], path: KeyPath, reader: FieldReader) -> str | None:
    """The ``agent:`` of a mapping (a turn, its expect, an evaluator), when it has one."""
    if data.get("agent") is None:
        return None
    return reader.string(data["agent"], path + ("agent",))


def _terms(
    terms: tuple[Term, ...], data: dict[str, Any], path: KeyPath, reader: FieldReader
) -> dict[str, Any]:
    """The expectation fields of ``data`` (``suite.vocabulary``), each read by its kind."""
    fields: dict[str, Any] = {}
    for term in terms:
        value = data.get(term.key)
        if value is not None and term.in_files:
            fields[term.key] = _read_term(term, value, path + (term.key,), reader)
    return fields


def _read_term(term: Term, value: Any, path: KeyPath, reader: FieldReader) -> Any:
    """One expectation value, read by its kind."""
    kind = term.kind
    if kind == "names":
        return reader.string_list(value, path)
    if kind == "count":
        return reader.integer(value, path, minimum=term.minimum)
    if kind == "measure":
        return reader.limit(value, path)
    if kind == "flag":
        return reader.boolean(value, path)
    if kind == "tool_values":
        tools = reader.free_mapping(value, path)
        return {
            tool: reader.free_mapping(args, path + (tool,), "a mapping of argument values")
            for tool, args in tools.items()
        }
    if kind == "tool_names":
        tools = reader.free_mapping(value, path)
        return {tool: reader.string_list(keys, path + (tool,)) for tool, keys in tools.items()}
    if kind == "tool_call_args":
        if not isinstance(value, list):
            reader.fail(path, "expected a list of {tool, args, mode, judge}")
        return [_tool_call_args(item, path + (i,), reader) for i, item in enumerate(value)]
    if kind == "judge":
        return _judge(value, path, reader)
    if kind == "handoffs":
        return _rule(read_handoffs, value, path, reader)
    if kind == "tool_sources":
        return _rule(read_args_from, value, path, reader)
    raise AssertionError(f"no reader for expectation kind {kind!r}")  # the table's kinds


def _rule(read: Any, value: Any, path: KeyPath, reader: FieldReader) -> Any:
    """``read(value)`` (a reader of ``suite.argrules`` or ``suite.contains``), its
    ``RuleError`` reported at the key it names."""
    try:
        return read(value)
    except RuleError as exc:
        reader.fail(path + exc.where, exc.message)


def _tool_call_args(raw: Any, path: KeyPath, reader: FieldReader) -> ToolCallArgs:
    data = reader.mapping(
        raw,
        path,
        TOOL_CALL_ARGS_KEYS,
        required=("tool",),
        what="a {tool, args, mode, judge, abs, rel, ignore, nested} mapping",
    )
    tool = reader.string(data["tool"], path + ("tool",))
    args = None
    if data.get("args") is not None:
        args = reader.free_mapping(data["args"], path + ("args",), "a mapping of argument values")
    mode = data.get("mode", "subset")
    if mode not in ARGS_MODES:
        reader.fail(
            path + ("mode",),
            f"expected 'subset' or 'exact', got {mode!r}{did_you_mean(str(mode), ARGS_MODES)}",
        )
    judge = None
    if data.get("judge") is not None:
        judge = _judge(data["judge"], path + ("judge",), reader)
    compare: CompareArgs = _rule(read_compare_args, options_of(data), path, reader)
    return ToolCallArgs(
        tool=tool,
        args=args,
        mode=mode,
        judge=judge,
        abs=compare.abs,
        rel=compare.rel,
        ignore=list(compare.ignore),
        nested=compare.nested,
    )


def _judge(raw: Any, path: KeyPath, reader: FieldReader) -> JudgeConfig:
    """``{rubric, model}``: pytest-agent-eval's ``judge:`` block."""
    data = reader.mapping(
        raw, path, JUDGE_KEYS, required=("rubric",), what="a {rubric, model} mapping"
    )
    rubric = reader.string(data["rubric"], path + ("rubric",))
    model = None
    if data.get("model") is not None:
        model = reader.string(data["model"], path + ("model",))
    return JudgeConfig(rubric=rubric, model=model)


def _evaluator(raw: Any, path: KeyPath, reader: FieldReader) -> EvaluatorConfig:
    if isinstance(raw, str):  # shorthand: just the scorer's name
        raw = {"name": raw}
    data = reader.mapping(
        raw, path, EVALUATOR_KEYS, required=("name",), what="an evaluator mapping"
    )
    name = reader.string(data["name"], path + ("name",))
    threshold = None
    if data.get("threshold") is not None:
        # A score's value lies in [0, 1]: a threshold outside could never be met (or never missed).
        threshold = reader.fraction(data["threshold"], path + ("threshold",))
    config = reader.free_mapping(data.get("config") or {}, path + ("config",), "a config mapping")
    required = True
    if data.get("required") is not None:
        required = reader.boolean(data["required"], path + ("required",))
    # Which checks exist is the registry's business (``Registry.check(suite)``): keep where
    # the name and config keys stand so that it can name the file and line.
    origin = Origin(
        source=reader.source,
        key_path=path,
        lines={k: v for k, v in reader.lines.items() if k[: len(path)] == path},
    )
    return EvaluatorConfig(
        name=name,
        threshold=threshold,
        config=config,
        required=required,
        origin=origin,
        agent=_agent(data, path, reader),
        sample=(
            _rule(read_sample, data["sample"], path + ("sample",), reader)
            if data.get("sample") is not None
            else None
        ),
    )
