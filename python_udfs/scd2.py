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
)
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
    changes: Iterable[Mapping[str, Any]], state: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The versions of one row, oldest first, from its changes in any order.

    ``state``, when given, is the key's last version (the fields of :data:`VERSION_FIELDS`)
    from a fold of every earlier change; ``changes`` must then all come after every change
    that fold saw. A state without ``row_json`` (earlier changes opened no version) counts as
    none. The result starts with that version when it is open (closed by the new changes or
    left open), and numbers new versions on from it.
    """
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
            out.append(open_version)
            last_row = row
        elif op in CLOSING_OPS and open_version is not None:
            _close(open_version, change, deleted=True)
            if op == "d":
                open_version["closed_into_key_json"] = change.get("linked_key_json")
            open_version = None
    for version in out:
        version["row_json"] = dump_json(version.pop("_row"))
    return out


def _close(version: dict[str, Any], change: Mapping[str, Any], deleted: bool) -> None:
    version["valid_to"] = change.get("committed_at")
    version["valid_to_position"] = change.get("position")
    version["closing_change_id"] = change.get("change_id")
    version["is_current"] = False
    version["is_deleted"] = deleted


def versions_row(changes: list[Any] | None, state: Any = None) -> list[tuple[Any, ...]]:
    """UDF body: changes (and the key's last version, or null) as Spark Rows or dicts ->
    version tuples in VERSION_FIELDS order."""
    plain = [c.asDict() if hasattr(c, "asDict") else c for c in changes or ()]
    if state is not None and hasattr(state, "asDict"):
        state = state.asDict()
    if not plain and state is None:
        return []
    names = [n for n, _ in VERSION_FIELDS]
    return [tuple(v[n] for n in names) for v in versions(plain, state)]
