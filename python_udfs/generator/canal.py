"""How Canal sends a change (flat JSON). Decoded by :mod:`python_udfs.canal`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from python_udfs.generator.record import Record, dumps
from python_udfs.generator.world import TABLES, Change, Txn, World, epoch_ms, key_of, mysql_image


class Canal:
    """Canal flat JSON: one message per table and operation within a transaction."""

    family = "text"
    MYSQL: ClassVar[dict[str, Any]] = {
        "int": "int",
        "long": "bigint",
        "string": "varchar(255)",
        "bool": "tinyint(1)",
        "double": "double",
        "bytes": "varbinary(64)",
        "json": "json",
        "date": "date",
        "timestamp": "datetime(3)",
        "timestamptz": "timestamp(3)",
    }
    SQL_TYPES: ClassVar[dict[str, Any]] = {
        "int": 4,
        "long": -5,
        "string": 12,
        "bool": -7,
        "double": 8,
        "bytes": -3,
        "json": 12,
        "date": 91,
        "timestamp": 93,
        "timestamptz": 93,
    }

    def __init__(self) -> None:
        self.message_id = 0

    def _type(self, kind: str) -> str:
        if kind.startswith("decimal"):
            _, p, s = kind.split(":")
            return f"decimal({p},{s})"
        return self.MYSQL[kind]

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        # commit time in ms is the position: one message per (table, op) run of changes
        ms = epoch_ms(txn.commit)
        groups: list[list[Change]] = []
        for change in txn.changes:
            last = groups[-1] if groups else None
            if (
                last
                and len(last) < 100
                and last[0].kind == "row"
                and change.kind == "row"
                and last[0].table == change.table
                and last[0].op == change.op
            ):
                groups[-1].append(change)
            else:
                groups.append([change])
        for group in groups:
            self.message_id += 1
            first = group[0]
            types = world.types[first.table]
            columns = world.columns[first.table]
            base = {
                "database": "inventory",
                "table": first.table,
                "es": ms,
                "ts": ms + 25,
                "id": self.message_id,
                "gtid": f"gtid-{txn.txid}",
            }
            if first.kind in ("ddl", "truncate"):
                sql = first.ddl or f"TRUNCATE TABLE {first.table}"
                doc = {
                    **base,
                    "data": None,
                    "old": None,
                    "isDdl": True,
                    "pkNames": None,
                    "mysqlType": None,
                    "sqlType": None,
                    "sql": sql,
                    "type": "ALTER" if first.kind == "ddl" else "TRUNCATE",
                }
                yield Record("canal.inventory", None, None, dumps(doc), [], ms)
                continue

            data, old = [], []
            for change in group:
                data.append(
                    mysql_image(
                        world, first.table, change.after if change.op != "d" else change.before
                    )
                )
                if change.op == "u":
                    before = mysql_image(world, first.table, change.before)
                    after = mysql_image(world, first.table, change.after)
                    old.append({c: v for c, v in before.items() if after.get(c) != v})
            doc = {
                **base,
                "data": data,
                "old": old if first.op == "u" else None,
                "isDdl": False,
                "pkNames": TABLES[first.table]["key"],
                "mysqlType": {c: self._type(types[c]) for c in columns},
                "sqlType": {c: self.SQL_TYPES.get(types[c], 3) for c in columns},
                "sql": "",
                "type": {"r": "INIT", "c": "INSERT", "u": "UPDATE", "d": "DELETE"}[first.op],
            }
            route = (first.table, *key_of(first.table, first.after or first.before))
            yield Record("canal.inventory", route, None, dumps(doc), [], ms)
