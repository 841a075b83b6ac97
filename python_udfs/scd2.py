"""SCD-2 versions of one source row from its changes: the history's semantics in one place.

:func:`versions` folds the changes of one key (of one source table), in source order, into the
row's versions. Pure: no Spark; the `changelake_versions` UDF calls it once per key.

Rules (shared/DESIGN.md section 5):

- changes are ordered by source position, never by arrival (then Kafka partition, offset and
  row index, for changes a position does not tell apart);
- an insert, snapshot read or update opens a version; it closes the open one at its own
  position (``valid_to`` = the next version's ``valid_from``);
- an update that changes no column opens no version;
- a column the source did not send (TOAST) carries the previous version's value forward;
- a delete or a truncate of the table closes the open version (``is_deleted``); a later
  insert opens a new one after the gap;
- primary-key changes are recorded: the version opened by an insert that came from another key
  has ``opened_from_key_json``, the one closed by a delete that moved to another key
  ``closed_into_key_json``.

The fold can resume: given the key's last version as ``state`` (what the history's frontier
keeps per key), folding only the changes that come after it gives what folding every change
from the start gives, from that version on. Its rows: the last version again (closed now, or
still open) when it was open, then every version the new changes open.

Given the typed models of the key's table (their tracked columns), the last version also
keeps, per model, where its run of versions with equal tracked values began: a typed current
model's row, resumed with the rest of the state (see :func:`versions`).

Examples
--------
>>> from python_udfs.scd2 import versions
>>> vs = versions([
...     {"change_id": "a", "op": "c", "position": "1", "after_json": '{"id":1,"v":"x"}'},
...     {"change_id": "b", "op": "u", "position": "2", "after_json": '{"id":1,"v":"y"}'},
...     {"change_id": "c", "op": "d", "position": "3", "after_json": None},
... ])
>>> [(v["row_json"], v["valid_from_position"], v["valid_to_position"], v["is_deleted"])
...  for v in vs]
[('{"id":1,"v":"x"}', '1', '2', False), ('{"id":1,"v":"y"}', '2', '3', True)]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from python_udfs.values import dump_json

# (name, Spark SQL type) of one version, as the UDF returns it
VERSION_FIELDS: tuple[tuple[str, str], ...] = (
    ("version_number", "int"),
    ("row_json", "string"),
    ("valid_from", "timestamp"),
    ("valid_to", "timestamp"),
    ("valid_from_position", "string"),
    ("valid_to_position", "string"),
    ("is_current", "boolean"),
    ("is_deleted", "boolean"),
    ("opening_change_id", "string"),
    ("closing_change_id", "string"),
    ("opened_from_key_json", "string"),
    ("closed_into_key_json", "string"),
    (
        "islands",
        "map<string, struct<row_json: string, valid_from: timestamp, "
        "valid_from_position: string, opening_change_id: string>>",
    ),
)
# the fields of an island start (see `versions`): the first version of a run of versions equal
# in a typed model's tracked columns
ISLAND_FIELDS = ("row_json", "valid_from", "valid_from_position", "opening_change_id")
VERSIONS_SCHEMA = "array<struct<" + ", ".join(f"{n}: {t}" for n, t in VERSION_FIELDS) + ">>"

OPENING_OPS = {"c", "r", "u"}
CLOSING_OPS = {"d", "t"}


def _order(change: Mapping[str, Any]) -> tuple:
    return (
        change.get("position") or "",
        change.get("kafka_partition") or 0,
        change.get("kafka_offset") or 0,
        change.get("row_index") or 0,
    )


def versions(
    changes: Iterable[Mapping[str, Any]],
    state: Mapping[str, Any] | None = None,
    tracked: Iterable[tuple[str, Iterable[str]]] = (),
) -> list[dict[str, Any]]:
    """The versions of one row, oldest first, from its changes in any order.

    ``state``, when given, is the key's last version (the fields of :data:`VERSION_FIELDS`)
    from a fold of every earlier change; ``changes`` must then all come after every change
    that fold saw. A state without ``row_json`` (earlier changes opened no version) counts as
    none. The result starts with that version when it is open (closed by the new changes or
    left open), and numbers new versions on from it.

    ``tracked`` names the typed models of the row's table, each with its tracked columns
    (``(name, columns)``). For each, the last version's ``islands`` maps the name to the start
    of the version's island: the first of the versions up to it that follow one another (each
    opened where the one before closed, none deleted) with equal tracked values, which a typed
    history shows as one version (macros/typed/). The start is the fields of
    :data:`ISLAND_FIELDS` of that first version. Tracked values compare as the typed history
    compares them: a JSON string by its text, any other value by its canonical JSON. A name
    the state has no start for (a model configured after that fold) gets none where the
    island continues from the state, and the version's own where a new island opens. The
    other versions' ``islands`` are None: a resumed fold needs only the last.
    """
    specs = [(name, tuple(columns)) for name, columns in tracked]
    out: list[dict[str, Any]] = []
    open_version: dict[str, Any] | None = None
    last_row: dict[str, Any] | None = None
    first_number = 1
    if state is not None and state.get("row_json") is not None:
        last_row = orjson.loads(state["row_json"])
        first_number = state["version_number"] + 1
        if state["is_current"]:
            open_version = {n: state[n] for n, _ in VERSION_FIELDS if n != "row_json"}
            open_version["_row"] = last_row
            known = _plain_islands(state.get("islands"))
            open_version["islands"] = {name: known[name] for name, _ in specs if name in known}
            out.append(open_version)
            first_number = state["version_number"]
    for change in sorted(changes, key=_order):
        op = change.get("op")
        if op in OPENING_OPS:
            after = change.get("after_json")
            if after is None:
                continue  # an update with no after image says nothing about the row
            row = orjson.loads(after)
            for column in change.get("unavailable_columns") or ():
                # TOAST: the source did not send the value; it is the previous version's
                if last_row is not None and column in last_row:
                    row[column] = last_row[column]
            if open_version is not None and row == open_version["_row"]:
                continue  # no column changed: no new version
            previous = open_version
            if open_version is not None:
                _close(open_version, change, deleted=False)
            open_version = {
                "version_number": first_number + len(out),
                "_row": row,
                "valid_from": change.get("committed_at"),
                "valid_to": None,
                "valid_from_position": change.get("position"),
                "valid_to_position": None,
                "is_current": True,
                "is_deleted": False,
                "opening_change_id": change.get("change_id"),
                "closing_change_id": None,
                # an insert from another key (PK change) or an update that changed the key
                "opened_from_key_json": change.get("linked_key_json"),
                "closed_into_key_json": None,
            }
            if specs:
                open_version["islands"] = _islands(previous, open_version, specs)
            out.append(open_version)
            last_row = row
        elif op in CLOSING_OPS and open_version is not None:
            _close(open_version, change, deleted=True)
            if op == "d":
                open_version["closed_into_key_json"] = change.get("linked_key_json")
            open_version = None
    for version in out:
        version["row_json"] = dump_json(version.pop("_row"))
    for version in out:
        islands = version.pop("islands", None)
        if version is out[-1] and specs:
            version["islands"] = {
                name: _island_start(start) for name, start in (islands or {}).items()
            }
        else:
            version["islands"] = None
    return out


def _tracked_value(value: Any) -> Any:
    """A tracked column's value as the typed history compares it: ``from_json`` to a string
    field gives a JSON string's text and any other value's JSON."""
    if value is None or isinstance(value, str):
        return value
    return dump_json(value)


def _islands(
    previous: dict[str, Any] | None, version: dict[str, Any], specs: list[tuple[str, tuple]]
) -> dict[str, Any]:
    """The island starts of ``version``, which opened where ``previous`` (the open version it
    closed, or None after a delete, a truncate or nothing) closed: per model, the previous
    version's start where the tracked values are equal, else the version itself (its dict: its
    fields are read when the fold ends, its ``row_json`` rendered by then)."""
    starts: dict[str, Any] = {}
    for name, columns in specs:
        if previous is None or any(
            _tracked_value(previous["_row"].get(c)) != _tracked_value(version["_row"].get(c))
            for c in columns
        ):
            starts[name] = version
        elif name in previous["islands"]:
            starts[name] = previous["islands"][name]
    return starts


def _island_start(version: Mapping[str, Any]) -> dict[str, Any]:
    return {field: version[field] for field in ISLAND_FIELDS}


def _plain_islands(islands: Any) -> dict[str, dict[str, Any]]:
    """A stored ``islands`` map as a dict of dicts, whichever way Spark hands it over (a dict
    or a list of pairs; a struct as a Row)."""
    if not islands:
        return {}
    pairs = islands.items() if isinstance(islands, Mapping) else islands
    return {
        name: dict(start.asDict() if hasattr(start, "asDict") else start)
        for name, start in pairs
        if start is not None
    }


def _close(version: dict[str, Any], change: Mapping[str, Any], deleted: bool) -> None:
    version["valid_to"] = change.get("committed_at")
    version["valid_to_position"] = change.get("position")
    version["closing_change_id"] = change.get("change_id")
    version["is_current"] = False
    version["is_deleted"] = deleted


def versions_row(
    changes: list[Any] | None, state: Any = None, tracked: list[Any] | None = None
) -> list[tuple[Any, ...]]:
    """UDF body: changes (and the key's last version, or null; and its table's typed models,
    ``array<struct<model: string, columns: array<string>>>`` or null) as Spark Rows or dicts
    -> version tuples in VERSION_FIELDS order."""
    plain = [c.asDict() if hasattr(c, "asDict") else c for c in changes or ()]
    if state is not None and hasattr(state, "asDict"):
        state = state.asDict()
    if not plain and state is None:
        return []
    specs = [
        (spec["model"], spec["columns"] or ())
        for spec in (s.asDict() if hasattr(s, "asDict") else s for s in tracked or ())
    ]
    names = [n for n, _ in VERSION_FIELDS]
    return [tuple(v[n] for n in names) for v in versions(plain, state, specs)]
