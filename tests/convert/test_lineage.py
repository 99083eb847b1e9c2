"""The one walk up parent spans (``convert.calls.lineage``) and its one cycle guard."""

from __future__ import annotations

from tooltrail.convert.calls import MAX_HOPS, lineage


def test_lineage_lists_the_ids_above_nearest_first_and_stops_at_the_root() -> None:
    links = {"tool": "model", "model": "agent", "agent": ""}
    assert lineage(links, "tool") == ["model", "agent"]
    assert lineage(links, "agent") == []


def test_a_parent_that_never_arrived_is_listed_and_ends_the_walk() -> None:
    assert lineage({"tool": "gone"}, "tool") == ["gone"]
    assert lineage({}, "gone") == []


def test_a_cycle_through_the_start_stops_before_the_start() -> None:
    assert lineage({"a": "b", "b": "a"}, "a") == ["b"]


def test_a_cycle_above_the_start_stops_before_an_id_passed() -> None:
    """Every walk once guarded only against coming back to its start: a cycle above it was
    walked until the hop bound (10,000 hops for every span under it)."""
    links = {"tool": "x", "x": "y", "y": "z", "z": "x"}
    assert lineage(links, "tool") == ["x", "y", "z"]


def test_a_long_cycle_is_told_past_the_short_list() -> None:
    ring = [f"s{i}" for i in range(100)]
    links = {ring[i]: ring[(i + 1) % 100] for i in range(100)}
    links["tool"] = ring[0]
    assert lineage(links, "tool") == ring


def test_a_chain_deeper_than_the_bound_is_cut_at_the_bound() -> None:
    links = {f"s{i}": f"s{i + 1}" for i in range(MAX_HOPS + 50)}
    chain = lineage(links, "s0")
    assert len(chain) == MAX_HOPS
    assert chain[0] == "s1" and chain[-1] == f"s{MAX_HOPS}"
