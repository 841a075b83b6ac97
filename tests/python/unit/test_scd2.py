"""SCD-2 semantics, pure: each rule of shared/DESIGN.md section 5 on the fold, and a property
test against an independent reference model."""

from __future__ import annotations

import json
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from python_udfs.scd2 import versions


def ch(change_id, op, position, row=None, unavailable=None, linked=None, offset=0):
    return {
        "change_id": change_id,
        "op": op,
        "position": position,
        "kafka_partition": 0,
        "kafka_offset": offset,
        "row_index": 0,
        "committed_at": None,
        "after_json": None if row is None else json.dumps(row),
        "unavailable_columns": unavailable,
        "linked_key_json": linked,
    }


def summary(vs):
    return [
        (
            json.loads(v["row_json"]),
            v["valid_from_position"],
            v["valid_to_position"],
            v["is_current"],
            v["is_deleted"],
        )
        for v in vs
    ]


def test_versions_follow_position_not_arrival():
    arrived = [
        ch("c3", "u", "3", {"v": 3}),
        ch("c1", "c", "1", {"v": 1}),
        ch("c2", "u", "2", {"v": 2}),
    ]
    assert summary(versions(arrived)) == [
        ({"v": 1}, "1", "2", False, False),
        ({"v": 2}, "2", "3", False, False),
        ({"v": 3}, "3", None, True, False),
    ]


def test_a_late_change_restitches_its_neighbours():
    before = versions([ch("a", "c", "1", {"v": 1}), ch("c", "u", "5", {"v": 5})])
    after = versions(
        [ch("a", "c", "1", {"v": 1}), ch("c", "u", "5", {"v": 5}), ch("b", "u", "3", {"v": 3})]
    )
    assert [v["valid_to_position"] for v in before] == ["5", None]
    assert [v["valid_to_position"] for v in after] == ["3", "5", None]


def test_delete_closes_and_reinsert_opens_after_a_gap():
    vs = versions([ch("a", "c", "1", {"v": 1}), ch("b", "d", "2"), ch("c", "c", "4", {"v": 1})])
    assert summary(vs) == [({"v": 1}, "1", "2", False, True), ({"v": 1}, "4", None, True, False)]
    assert vs[0]["closing_change_id"] == "b"


def test_truncate_closes_the_open_version():
    vs = versions([ch("a", "c", "1", {"v": 1}), ch("t", "t", "2")])
    assert summary(vs) == [({"v": 1}, "1", "2", False, True)]


def test_snapshot_read_joins_the_stream():
    vs = versions([ch("a", "r", "1", {"v": 1}), ch("b", "u", "2", {"v": 2})])
    assert summary(vs) == [({"v": 1}, "1", "2", False, False), ({"v": 2}, "2", None, True, False)]


def test_an_update_that_changes_nothing_opens_no_version():
    vs = versions(
        [ch("a", "c", "1", {"v": 1}), ch("b", "u", "2", {"v": 1}), ch("c", "r", "3", {"v": 1})]
    )
    assert summary(vs) == [({"v": 1}, "1", None, True, False)]


def test_unavailable_columns_carry_the_previous_value_forward():
    vs = versions(
        [
            ch("a", "c", "1", {"id": 1, "doc": "long", "n": 1}),
            ch("b", "u", "2", {"id": 1, "n": 2}, unavailable=["doc"]),
        ]
    )
    assert json.loads(vs[1]["row_json"]) == {"id": 1, "doc": "long", "n": 2}


def test_primary_key_change_links_both_keys():
    closed = versions([ch("a", "c", "1", {"id": 1}), ch("b", "d", "2", linked='{"id":2}')])
    opened = versions([ch("c", "c", "2", {"id": 2}, linked='{"id":1}')])
    assert closed[0]["closed_into_key_json"] == '{"id":2}'
    assert closed[0]["is_deleted"]
    assert opened[0]["opened_from_key_json"] == '{"id":1}'


def test_equal_positions_are_ordered_by_kafka_offset():
    vs = versions([ch("b", "u", "7", {"v": 2}, offset=2), ch("a", "c", "7", {"v": 1}, offset=1)])
    assert [json.loads(v["row_json"])["v"] for v in vs] == [1, 2]


# ----------------------------------------------------------------------------------------------
# property: any change history, in any arrival order, gives what a naive replay gives
# ----------------------------------------------------------------------------------------------


def reference(changes):
    """Replay changes in position order, tracking the row; a version per distinct new state."""
    states = []  # (row, from, to, deleted)
    row = None
    for c in sorted(changes, key=lambda c: (c["position"], c["kafka_offset"])):
        if c["op"] in ("c", "r", "u"):
            new = json.loads(c["after_json"])
            if row is not None and new == row:
                continue
            if states and states[-1][2] is None and row is not None:
                states[-1] = (states[-1][0], states[-1][1], c["position"], False)
            states.append((new, c["position"], None, False))
            row = new
        elif row is not None:  # d or t
            states[-1] = (states[-1][0], states[-1][1], c["position"], True)
            row = None
    return [(r, f, t, t is None, d) for r, f, t, d in states]


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from("ccruudt"), st.integers(0, 2)), max_size=15),
    seed=st.integers(0, 2**32),
)
def test_any_arrival_order_gives_the_replayed_history(ops, seed):
    changes = [
        ch(f"x{i}", op, f"{i:04d}", None if op in "dt" else {"v": value}, offset=i)
        for i, (op, value) in enumerate(ops)
    ]
    shuffled = changes[:]
    random.Random(seed).shuffle(shuffled)
    assert summary(versions(shuffled)) == reference(changes)


# ----------------------------------------------------------------------------------------------
# property: resuming from the last version (the history's frontier) gives the whole fold
# ----------------------------------------------------------------------------------------------


def resumed(first, rest):
    """Fold ``first``, then fold ``rest`` from the last version only, as a run does."""
    done = versions(first)
    if not done:
        return versions(rest)
    state = done[-1]
    return (
        done[:-1] + versions(rest, state) if state["is_current"] else done + versions(rest, state)
    )


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(
        st.tuples(st.sampled_from("ccruudt"), st.integers(0, 2), st.booleans()), max_size=15
    ),
    cut=st.integers(0, 15),
)
def test_resuming_from_the_last_version_gives_the_whole_fold(ops, cut):
    changes = [
        ch(
            f"x{i}",
            op,
            f"{i:04d}",
            None if op in "dt" else {"v": value, "doc": value},
            # TOAST: the column comes from the version before, also across the resume point
            unavailable=["doc"] if toast and op == "u" else None,
            offset=i,
        )
        for i, (op, value, toast) in enumerate(ops)
    ]
    for c in changes:
        if c["unavailable_columns"]:
            c["after_json"] = json.dumps({"v": json.loads(c["after_json"])["v"]})
    whole = versions(changes)
    assert resumed(changes[:cut], changes[cut:]) == whole


# ----------------------------------------------------------------------------------------------
# island starts: the typed current state, kept by the fold (macros/typed/)
# ----------------------------------------------------------------------------------------------


def island_starts(vs, tracked):
    """What a typed history (macros/typed/) gives as the last version's tracked version: the
    first of the versions up to the last that follow one another, none deleted, with equal
    tracked values as `from_json` to string fields reads them (a string's text, else its JSON)."""

    def seen(version, column):
        value = json.loads(version["row_json"]).get(column)
        return value if value is None or isinstance(value, str) else json.dumps(value)

    start = len(vs) - 1
    while start > 0:
        before, after = vs[start - 1], vs[start]
        if (
            before["is_deleted"]
            or before["valid_to_position"] != after["valid_from_position"]
            or any(seen(before, c) != seen(after, c) for c in tracked)
        ):
            break
        start -= 1
    first = vs[start]
    return {
        "row_json": first["row_json"],
        "valid_from": first["valid_from"],
        "valid_from_position": first["valid_from_position"],
        "opening_change_id": first["opening_change_id"],
    }


TRACKED = [("by_v", ["v"]), ("by_both", ["v", "w"])]


def test_an_island_starts_where_a_tracked_value_last_changed():
    vs = versions(
        [
            ch("a", "c", "1", {"v": 1, "w": "x"}),
            ch("b", "u", "2", {"v": 1, "w": "y"}),
            ch("c", "u", "3", {"v": 2, "w": "y"}),
            ch("d", "u", "4", {"v": 2, "w": "z"}),
        ],
        tracked=TRACKED,
    )
    assert [v["islands"] for v in vs[:-1]] == [None] * 3
    assert {name: start["opening_change_id"] for name, start in vs[-1]["islands"].items()} == {
        "by_v": "c",
        "by_both": "d",
    }
    assert json.loads(vs[-1]["islands"]["by_v"]["row_json"]) == {"v": 2, "w": "y"}


def test_a_delete_ends_an_island_and_a_string_equals_the_number_it_spells():
    vs = versions(
        [
            ch("a", "c", "1", {"v": 1, "w": "x"}),
            ch("b", "d", "2"),
            ch("c", "c", "3", {"v": 1, "w": "x"}),
            ch("d", "u", "4", {"v": "1", "w": "y"}),
        ],
        tracked=TRACKED,
    )
    # as from_json reads them, the number 1 and the string "1" are the same text
    assert vs[-1]["islands"]["by_v"]["opening_change_id"] == "c"
    assert vs[-1]["islands"]["by_both"]["opening_change_id"] == "d"


def test_a_model_newer_than_the_state_gets_a_start_only_where_an_island_opens():
    first = versions([ch("a", "c", "1", {"v": 1, "w": "x", "z": 1})], tracked=TRACKED[:1])
    state = first[-1]
    assert set(state["islands"]) == {"by_v"}
    # z is tracked by neither: both islands go on
    same = versions([ch("b", "u", "2", {"v": 1, "w": "x", "z": 2})], state, tracked=TRACKED)
    # by_both's island would go back past the state, whose fold did not know it: no start
    assert set(same[-1]["islands"]) == {"by_v"}
    assert same[-1]["islands"]["by_v"]["opening_change_id"] == "a"
    moved = versions([ch("c", "u", "3", {"v": 2, "w": "x", "z": 2})], same[-1], tracked=TRACKED)
    assert {name: start["opening_change_id"] for name, start in moved[-1]["islands"].items()} == {
        "by_v": "c",
        "by_both": "c",
    }


VALUES = st.sampled_from([0, 1, "1", "a", None, [1, "a"]])


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(st.tuples(st.sampled_from("ccruuuudt"), VALUES, VALUES), max_size=15),
    cut=st.integers(0, 15),
    seed=st.integers(0, 2**32),
)
def test_island_starts_are_the_typed_historys_whole_or_resumed(ops, cut, seed):
    changes = [
        ch(f"x{i}", op, f"{i:04d}", None if op in "dt" else {"v": v, "w": w}, offset=i)
        for i, (op, v, w) in enumerate(ops)
    ]
    shuffled = changes[:]
    random.Random(seed).shuffle(shuffled)
    whole = versions(shuffled, tracked=TRACKED)
    if not whole:
        return
    expected = {name: island_starts(whole, columns) for name, columns in TRACKED}
    assert whole[-1]["islands"] == expected
    done = versions(changes[:cut], tracked=TRACKED)
    rest = versions(changes[cut:], done[-1] if done else None, tracked=TRACKED)
    last = (rest or done)[-1]
    assert last["islands"] == expected
