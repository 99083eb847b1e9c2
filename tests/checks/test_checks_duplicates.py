"""Duplicate calls found by the call index (orjson keys, nulls settled exactly) are exactly the
calls whose name and canonical arguments (``args_fingerprint``) repeat an earlier call's."""

import random

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tooltrail import ToolCall
from tooltrail.checks import CallView, args_fingerprint


def reference_duplicates(calls: list[ToolCall]) -> list[int]:
    """The rule written out plainly: a call repeats an earlier (name, fingerprint)."""
    seen: set[tuple[str, bytes]] = set()
    dups = []
    for i, call in enumerate(calls):
        key = (call.name, args_fingerprint(call.args))
        if key in seen:
            dups.append(i)
        seen.add(key)
    return dups


# Values that look alike and must not merge (5 / 5.0 / True / "5", None / NaN / inf, 0.0 / -0.0,
# "null" inside a string), plus nesting and integers too wide for orjson.
scalars = st.sampled_from(
    [5, 5.0, True, 1, 0, 0.0, -0.0, "5", None, float("nan"), float("inf"), "null", "", 2**70]
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.sampled_from("xy"), inner),
    max_leaves=4,
)
arguments = st.none() | st.dictionaries(st.sampled_from(["a", "b", "null"]), values, max_size=2)
# Calls drawn from a small pool of arguments, so that repeats and near-repeats are common.
traces = st.lists(arguments, min_size=1, max_size=5).flatmap(
    lambda pool: st.lists(
        st.tuples(st.sampled_from(["lookup", "null_tool"]), st.sampled_from(pool)), max_size=12
    )
)


def calls_of(pairs, rng: random.Random | None = None) -> list[ToolCall]:
    calls = []
    for i, (name, args) in enumerate(pairs):
        if args is not None and rng is not None:  # the same arguments, keys in another order
            keys = list(args)
            rng.shuffle(keys)
            args = {k: args[k] for k in keys}
        calls.append(ToolCall(name, args, span_id=f"s{i}"))
    return calls


NAN, INF = float("nan"), float("inf")


@settings(max_examples=300, deadline=None)
@given(traces)
@example([("lookup", {"a": None}), ("lookup", {"a": NAN}), ("lookup", {"a": float("nan")})])
@example([("lookup", {"a": INF}), ("lookup", {"a": -INF}), ("lookup", {"a": None})])
@example([("lookup", None), ("lookup", {}), ("lookup", None)])
@example([("lookup", {"a": [None, 1]}), ("lookup", {"a": [NAN, 1]}), ("lookup", {"a": [None, 1]})])
def test_duplicates_are_the_repeated_name_and_fingerprint_pairs(pairs):
    calls = calls_of(pairs)
    assert CallView(calls).duplicates() == reference_duplicates(calls)


@settings(max_examples=150, deadline=None)
@given(traces, st.randoms(use_true_random=False))
def test_key_order_never_changes_which_calls_repeat(pairs, rng):
    assert CallView(calls_of(pairs, rng)).duplicates() == CallView(calls_of(pairs)).duplicates()


@settings(max_examples=150, deadline=None)
@given(arguments)
def test_a_call_made_twice_is_one_duplicate(args):
    again = None if args is None else {k: v for k, v in reversed(list(args.items()))}
    calls = [ToolCall("lookup", args), ToolCall("search", {}), ToolCall("lookup", again)]
    assert CallView(calls).duplicates() == [2]


def test_look_alike_arguments_are_not_duplicates():
    calls = [
        ToolCall("pay", {"amount": 5}),
        ToolCall("pay", {"amount": 5.0}),
        ToolCall("pay", {"amount": True}),
        ToolCall("pay", {"amount": 1}),
        ToolCall("pay", {"amount": "5"}),
        ToolCall("pay", {}),
        ToolCall("pay", None),
        ToolCall("pay", {"amount": -0.0}),
        ToolCall("pay", {"amount": 0.0}),
    ]
    assert CallView(calls).duplicates() == []


def test_only_calls_of_tools_called_more_than_once_are_spelled(monkeypatch) -> None:
    """A call of a tool called once repeats nothing: its arguments are never serialized (the
    serializing is most of the search's time)."""
    import tooltrail.checks.view as view_module

    spelled = []

    def counting(args, **options):
        spelled.append(args)
        return view_module.__dict__["_real_dumps"](args, **options)

    monkeypatch.setitem(view_module.__dict__, "_real_dumps", view_module.dumps)
    monkeypatch.setattr(view_module, "dumps", counting)
    calls = [
        ToolCall("lookup", {"id": 1}),
        ToolCall("verify", {"who": "c"}),
        ToolCall("lookup", {"id": 1}),
        ToolCall("refund", {"amount": 2**70}),  # too wide for orjson: it must not matter
    ]
    assert CallView(calls).duplicates() == [2] == reference_duplicates(calls)
    assert spelled == [{"id": 1}] * 3  # each lookup once, the repeat once more (its exact key)
