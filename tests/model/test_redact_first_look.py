"""Redaction's compiled first look (``core/src/screen.rs``): it may only ever answer ``clear``
where the Python screen finds nothing, on any text, with any rules; and every redaction takes
it when the core is in use, keeps the Python screen when the core is switched off, and pickles
without it."""

from __future__ import annotations

import pickle
import string

import pytest
from core_paths import needs_core
from credential_examples import CREDENTIALS, ORDINARY, SEPARATORS, credentials
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooltrail import redact
from tooltrail.convert import engine
from tooltrail.credentials import SHAPE_NAMES
from tooltrail.redact import Redaction, install_first_look

pytestmark = needs_core

#: Text of the kinds a screen meets: JSON arguments, key names in every spelling, escapes,
#: credential anchors with and without what their guards want, digit runs, control bytes.
pieces = st.sampled_from(
    [
        '{"order_id": "ORD-7731", "amount": 49.99}',
        "password",
        "Pass_Word",
        "API-KEY",
        "cardNumber",
        "\\u0070assword",
        "\\n",
        "sk-",
        "sk-abcdefghijklmnopqrst",
        "ghp_",
        "_abcdefghij",
        "-abcdefghi",
        "Bearer ",
        "bearer x",
        "Basic ",
        "AKIA",
        "AIza",
        "eyJ",
        "J",
        "4111 1111 1111 1111",
        "4111-1111-1111-1111",
        "4111111111111",
        "41111111111",
        " ",
        "\x00",
        "-",
        "_",
        "é",
        "\ud800",
    ]
)
texts = st.lists(pieces | st.text(alphabet=string.printable, max_size=12), max_size=12).map(
    "".join
) | st.text(max_size=40)
rules = st.builds(
    Redaction,
    keys=st.lists(
        st.sampled_from(["password", "api_key", "ssn", "x", "_", "é", "ORD"]), max_size=4
    ).map(tuple),
    credentials=st.lists(st.sampled_from(SHAPE_NAMES), max_size=4, unique=True).map(tuple)
    | st.just(SHAPE_NAMES),
)


@pytest.fixture(autouse=True)
def compiled_first_look():
    """The core's first look installed, whatever an earlier test left; the choice made afresh
    after."""
    engine.reset()
    engine.core_module()
    yield
    engine.reset()
    engine.core_module()


def python_screen(rules: Redaction, text: str) -> bool:
    """The Python screen's answer alone, the first look left out."""
    saved = redact._first_look[:]
    install_first_look(None)
    try:
        return Redaction(keys=rules.keys, credentials=rules.credentials)._names_nothing(text)
    finally:
        install_first_look(saved[0] if saved else None)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rules, text=texts)
def test_the_first_look_is_clear_only_where_the_python_screen_finds_nothing(rules, text):
    look = rules._make_first_look()
    if look is not None and look.clear(text):
        assert python_screen(rules, text), text


@settings(max_examples=300, deadline=None)
@given(
    credential=credentials(),
    before=st.sampled_from(SEPARATORS),
    after=st.sampled_from(SEPARATORS),
)
def test_no_credential_is_clear(credential, before, after):
    look = Redaction()._make_first_look()
    assert not look.clear(f"note{before}{credential.text}{after}end")


def test_every_fixed_credential_and_key_name_is_not_clear_and_ordinary_text_mostly_is():
    look = Redaction()._make_first_look()
    for credential in CREDENTIALS:
        assert not look.clear(f"the value is {credential.text} here"), credential.shape
    assert not look.clear('{"client_secret": "x"}')
    clear = [text for text in ORDINARY if look.clear(text)]
    # what the first look lets through, the Python screen lets through too
    assert all(Redaction()._names_nothing(text) for text in clear)
    assert look.clear('{"order_id": "ORD-7731", "amount": 49.99, "note": "refund"}')


def test_every_redaction_takes_the_core_s_first_look_and_the_switch_leaves_it_out(monkeypatch):
    rules = Redaction()
    assert rules._make_first_look() is not None
    monkeypatch.setenv(engine.CORE_ENV, engine.PYTHON)
    engine.reset()
    engine.core_module()
    assert rules._make_first_look() is None
    assert rules._names_nothing('{"order_id": "ORD-7731"}')
    assert not rules._names_nothing('{"password": "x"}')


def test_the_live_processor_installs_the_first_look_where_nothing_was_read():
    from tooltrail.live import ToolArgsProcessor

    install_first_look(None)
    engine.reset()  # as in an agent process: nothing has asked for the core yet
    assert Redaction()._make_first_look() is None
    ToolArgsProcessor()
    assert Redaction()._make_first_look() is not None


def test_rules_it_cannot_test_keep_the_python_screen_alone():
    rules = Redaction(keys=("straße",))
    assert rules._make_first_look() is None
    assert not rules._names_nothing("STRASSE or straße")
    assert Redaction(key_patterns=("x",))._names_nothing("plain") is False


def test_a_redaction_pickles_without_its_first_look_and_makes_it_again():
    rules = Redaction(keys=("order_id",))
    assert rules._names_nothing("plain text, nothing here")
    copy = pickle.loads(pickle.dumps(rules))
    assert copy == rules
    assert not copy._names_nothing('{"order_id": 1}')
    assert copy._make_first_look() is not None


#: Attribute values of the kinds a tool span holds: the texts above, numbers, flags, and the
#: structured values that send a span to the full path.
values = texts | st.integers() | st.floats(allow_nan=False) | st.booleans() | st.just(["a", 1])
attribute_maps = st.dictionaries(
    st.sampled_from(["tool_name", "tool_args", "gen_ai.tool.name", "input", "n", "k", "password"]),
    values,
    max_size=5,
)
OWN = frozenset({"tool_name", "tool_args"})


def python_strings_screen(rules: Redaction, attributes: dict, extra: str | None) -> bool:
    """``strings_need_no_cleaning`` with the first look left out."""
    saved = redact._first_look[:]
    install_first_look(None)
    try:
        fresh = Redaction(keys=rules.keys, credentials=rules.credentials)
        return fresh.strings_need_no_cleaning(attributes, OWN, extra)
    finally:
        install_first_look(saved[0] if saved else None)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rules=rules, attributes=attribute_maps, extra=st.none() | texts)
def test_a_span_s_strings_screened_in_one_call_are_clear_only_where_each_is(
    rules, attributes, extra
):
    if rules.strings_need_no_cleaning(attributes, OWN, extra):
        # every string (but the skipped keys') needs no cleaning by the Python screen alone,
        # screened one by one as the full path redacts them
        for key, value in attributes.items():
            if type(value) is str and key not in OWN:
                assert python_screen(rules, value) and len(value) <= rules.max_value_chars
            else:
                assert type(value) in (str, int, float, bool), value
        if extra is not None:
            assert python_screen(rules, extra)
        assert extra is not None or any(
            type(v) is str and k not in OWN for k, v in attributes.items()
        )


def test_the_one_call_screen_says_what_it_saw():
    rules = Redaction()
    look = rules._first_look()
    plain = {"gen_ai.tool.name": "lookup_order", "n": 3, "ok": True, "x": 1.5}
    assert look.clear_strings(plain, OWN, rules.max_value_chars) == 1
    assert look.clear_strings(plain, OWN, rules.max_value_chars, '{"a": 1}') == 2
    assert look.clear_strings({"tool_args": "password"}, OWN, 100) == 0  # skipped
    assert look.clear_strings({"note": "password=1"}, OWN, 100) is None
    assert look.clear_strings({"list": ["a"]}, OWN, 100) is None  # structured: full path
    assert look.clear_strings({"long": "a" * 101}, OWN, 100) is None
    assert look.clear_strings({}, OWN, 100, "x" * 101) is None
    assert rules.strings_need_no_cleaning(plain, OWN)
    assert not rules.strings_need_no_cleaning({"n": 1}, OWN)  # no text at all
    assert not Redaction(key_patterns=("x",)).strings_need_no_cleaning(plain, OWN)
    for credential in CREDENTIALS:
        found = {"n": 1, "k": f"the value is {credential.text} here"}
        assert not rules.strings_need_no_cleaning(found, OWN), credential.shape
    assert not rules.strings_need_no_cleaning(plain, OWN, '{"api_key": "x"}')
