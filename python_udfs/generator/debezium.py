"""How a Debezium connector sends a change: JSON with schemas (PostgreSQL, SQL Server).
Decoded by :mod:`python_udfs.debezium`."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from python_udfs.generator.record import Record, dumps
from python_udfs.generator.world import (
    EPOCH,
    TABLES,
    Change,
    Txn,
    World,
    bytes_and_json,
    epoch_ms,
    quantized,
    zoned_text,
)

_CONNECT_TYPES = {
    "int": ("int32", None),
    "long": ("int64", None),
    "string": ("string", None),
    "bool": ("boolean", None),
    "double": ("double", None),
    "bytes": ("bytes", None),
    "json": ("string", "io.debezium.data.Json"),
    "date": ("int32", "io.debezium.time.Date"),
    "timestamptz": ("string", "io.debezium.time.ZonedTimestamp"),
}


class Debezium:
    """Debezium JSON with schemas (PostgreSQL, SQL Server, and dtle's MySQL flavour)."""

    family = "debezium"

    def __init__(self, flavour: str, server: str, database: str, schema: str | None) -> None:
        self.flavour = flavour  # postgresql | sqlserver | mysql (dtle)
        self.server, self.database, self.schema = server, database, schema
        self._schemas: dict[tuple, str] = {}
        self.lsn = 24_000_000
        self.binlog_pos = 4
        self.change_lsn = 0x758

    def topic(self, table: str) -> str:
        middle = self.schema if self.flavour != "mysql" else self.database
        return f"{self.server}.{middle}.{table}"

    def _field(self, name: str, kind: str, optional: bool) -> dict[str, Any]:
        if kind.startswith("decimal"):
            _, precision, scale = kind.split(":")
            return {
                "type": "bytes",
                "optional": optional,
                "name": "org.apache.kafka.connect.data.Decimal",
                "version": 1,
                "parameters": {"scale": scale, "connect.decimal.precision": precision},
                "field": name,
            }
        if kind == "timestamp":
            name_ = (
                "io.debezium.time.MicroTimestamp"
                if self.flavour == "postgresql"
                else "io.debezium.time.Timestamp"
            )
            return {
                "type": "int64",
                "optional": optional,
                "name": name_,
                "version": 1,
                "field": name,
            }
        connect, logical = _CONNECT_TYPES[kind]
        out = {"type": connect, "optional": optional, "field": name}
        if logical:
            out["name"] = logical
            out["version"] = 1
        return out

    def _source_fields(self) -> list[dict[str, Any]]:
        common = [
            ("version", "string"),
            ("connector", "string"),
            ("name", "string"),
            ("ts_ms", "int64"),
            ("snapshot", "string"),
            ("db", "string"),
        ]
        extra = {
            "postgresql": [
                ("schema", "string"),
                ("table", "string"),
                ("txId", "int64"),
                ("lsn", "int64"),
                ("xmin", "int64"),
            ],
            "sqlserver": [
                ("schema", "string"),
                ("table", "string"),
                ("change_lsn", "string"),
                ("commit_lsn", "string"),
                ("event_serial_no", "int64"),
            ],
            "mysql": [
                ("table", "string"),
                ("server_id", "int64"),
                ("gtid", "string"),
                ("file", "string"),
                ("pos", "int64"),
                ("row", "int32"),
                ("thread", "int64"),
                ("ts_sec", "int64"),
            ],
        }[self.flavour]
        return [
            {"type": t, "optional": n not in ("name", "ts_ms"), "field": n}
            for n, t in common + extra
        ]

    def schema_text(self, world: World, table: str) -> str:
        columns = tuple(world.columns[table])
        cached = self._schemas.get((table, columns))
        if cached is None:
            keys = TABLES[table]["key"]
            row_fields = [self._field(c, world.types[table][c], c not in keys) for c in columns]
            name = f"{self.server}.{self.schema or self.database}.{table}"
            envelope = {
                "type": "struct",
                "fields": [
                    {
                        "type": "struct",
                        "fields": row_fields,
                        "optional": True,
                        "name": f"{name}.Value",
                        "field": "before",
                    },
                    {
                        "type": "struct",
                        "fields": row_fields,
                        "optional": True,
                        "name": f"{name}.Value",
                        "field": "after",
                    },
                    {
                        "type": "struct",
                        "fields": self._source_fields(),
                        "optional": False,
                        "name": f"io.debezium.connector.{self.flavour}.Source",
                        "field": "source",
                    },
                    {"type": "string", "optional": False, "field": "op"},
                    {"type": "int64", "optional": True, "field": "ts_ms"},
                    {
                        "type": "struct",
                        "fields": [
                            {"type": "string", "optional": False, "field": "id"},
                            {"type": "int64", "optional": False, "field": "total_order"},
                            {"type": "int64", "optional": False, "field": "data_collection_order"},
                        ],
                        "optional": True,
                        "field": "transaction",
                    },
                ],
                "optional": False,
                "name": f"{name}.Envelope",
            }
            cached = self._schemas[(table, columns)] = dumps(envelope)
        return cached

    def key_text(self, world: World, table: str, key: dict[str, Any]) -> str:
        fields = [self._field(c, world.types[table][c], False) for c in TABLES[table]["key"]]
        name = f"{self.server}.{self.schema or self.database}.{table}.Key"
        schema = {"type": "struct", "fields": fields, "optional": False, "name": name}
        return dumps({"schema": schema, "payload": key})

    def _value(self, kind: str, value: Any) -> Any:
        if value is None:
            return None
        if kind.startswith("decimal"):
            unscaled = int(quantized(kind, value).scaleb(int(kind.split(":")[2])))
            size = max(1, (unscaled.bit_length() + 8) // 8)
            return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()
        if kind == "timestamp":
            ms = epoch_ms(value)
            return ms * 1000 if self.flavour == "postgresql" else ms
        if kind == "timestamptz":
            return zoned_text(value)
        if kind == "date":
            return (value - EPOCH.date()).days
        return bytes_and_json(kind, value)

    def image(
        self, world: World, table: str, row: dict[str, Any] | None, toast: tuple[str, ...] = ()
    ) -> Any:
        if row is None:
            return None
        types = world.types[table]
        out = {c: self._value(types[c], row[c]) for c in world.columns[table] if c in row}
        for column in toast:
            out[column] = "__debezium_unavailable_value"
        return out

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        ms = epoch_ms(txn.commit)
        if self.flavour == "postgresql" and not txn.snapshot:
            yield self._marker("BEGIN", txn, ms)
        if self.flavour == "mysql":
            self.binlog_pos += 200
        commit_lsn = f"0000002a:{self.change_lsn + 1:08x}:0001"
        for index, change in enumerate(txn.changes):
            if change.kind == "ddl":
                continue  # dtle's DDL goes to its own topic; Debezium PG/SQL Server send none
            self.lsn += 64
            if change.pk_change != "insert":
                self.change_lsn += 1
            source: dict[str, Any] = {
                "version": "2.7.3.Final" if self.flavour != "mysql" else "3.2.0",
                "connector": self.flavour,
                "name": self.server,
                "ts_ms": ms,
                "snapshot": ("last" if index == len(txn.changes) - 1 else "true")
                if txn.snapshot
                else "false",
                "db": self.database,
            }
            if self.flavour == "postgresql":
                source.update(
                    schema=self.schema, table=change.table, txId=txn.txid, lsn=self.lsn, xmin=None
                )
            elif self.flavour == "sqlserver":
                # event_serial_no: 2 for an update and for the insert half of a PK change
                serial = 2 if change.op == "u" or change.pk_change == "insert" else 1
                source.update(
                    schema=self.schema,
                    table=change.table,
                    change_lsn=f"0000002a:{self.change_lsn:08x}:0003",
                    commit_lsn=commit_lsn,
                    event_serial_no=serial,
                )
            else:
                source.update(
                    table=change.table,
                    server_id=1,
                    gtid=f"3e11fa47-71ca-11e1-9e33-c80aa9429562:{txn.txid}",
                    file="mysql-bin.000003",
                    pos=self.binlog_pos,
                    row=index,
                    thread=7,
                    ts_sec=ms // 1000,
                )
                del source["ts_ms"]
            if change.kind == "truncate":
                payload = {
                    "before": None,
                    "after": None,
                    "source": source,
                    "op": "t",
                    "ts_ms": ms + 3,
                }
                yield Record(
                    self.topic(change.table),
                    None,
                    None,
                    self._wrap(world, change.table, payload),
                    [],
                    ms,
                )
                continue
            key = {c: (change.after or change.before)[c] for c in TABLES[change.table]["key"]}
            key_text = self.key_text(world, change.table, self._key_values(world, change, key))
            before = change.before
            if self.flavour == "postgresql" and change.op == "u":
                before = None  # default REPLICA IDENTITY: no old image for updates
            elif self.flavour == "postgresql" and change.op == "d":
                before = key  # ... and only the key columns for deletes
            payload = {
                "before": self.image(world, change.table, before),
                "after": self.image(world, change.table, change.after, change.toast),
                "source": source,
                "op": change.op,
                "ts_ms": ms + 3,
                "transaction": None
                if txn.snapshot
                else {
                    "id": f"{txn.txid}:{self.lsn}",
                    "total_order": index + 1,
                    "data_collection_order": index + 1,
                },
            }
            headers: list[str] = []
            if change.pk_change in ("delete", "insert"):
                name = "__debezium.newkey" if change.pk_change == "delete" else "__debezium.oldkey"
                headers = [name, self.key_text(world, change.table, change.new_key_of)]
            route = (change.table, *key.values())
            yield Record(
                self.topic(change.table),
                route,
                key_text,
                self._wrap(world, change.table, payload),
                headers,
                ms,
            )
            if change.op == "d" and self.flavour != "sqlserver":
                yield Record(self.topic(change.table), route, key_text, None, [], ms)
        if self.flavour == "postgresql" and not txn.snapshot:
            yield self._marker("END", txn, ms, len(txn.changes))

    def _key_values(self, world: World, change: Change, key: dict[str, Any]) -> dict:
        types = world.types[change.table]
        return {c: self._value(types[c], v) for c, v in key.items()}

    def _wrap(self, world: World, table: str, payload: dict[str, Any]) -> str:
        # the JSON converter's layout: the schema block first, then the payload, compact
        return '{"schema":' + self.schema_text(world, table) + ',"payload":' + dumps(payload) + "}"

    def _marker(self, status: str, txn: Txn, ms: int, count: int | None = None) -> Record:
        payload: dict[str, Any] = {
            "status": status,
            "id": f"{txn.txid}:{self.lsn}",
            "event_count": count,
            "data_collections": None,
            "ts_ms": ms,
        }
        if count is not None:
            payload["data_collections"] = [
                {
                    "data_collection": f"{self.schema}.{t}",
                    "event_count": sum(1 for c in txn.changes if c.table == t),
                }
                for t in sorted({c.table for c in txn.changes})
            ]
        return Record(
            f"{self.server}.transaction",
            None,
            dumps({"id": payload["id"]}),
            dumps(payload),
            [],
            ms,
        )

    def heartbeat(self, ms: int) -> Record:
        return Record(
            f"__debezium-heartbeat.{self.server}",
            None,
            dumps({"serverName": self.server}),
            dumps({"ts_ms": ms}),
            [],
            ms,
        )
