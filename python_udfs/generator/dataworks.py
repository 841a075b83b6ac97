"""How Alibaba DataWorks sends a change. Decoded by :mod:`python_udfs.dataworks`."""

from __future__ import annotations

import datetime as dt
import zlib
from collections.abc import Iterator
from typing import Any, ClassVar

from python_udfs.generator.record import Record, dumps
from python_udfs.generator.world import (
    TABLES,
    Txn,
    World,
    bytes_and_json,
    epoch_ms,
    key_of,
    quantized,
)
from python_udfs.values import decimal_text


class DataWorks:
    family = "dataworks"
    TYPES: ClassVar[dict[str, Any]] = {
        "int": "LONG",
        "long": "LONG",
        "string": "STRING",
        "bool": "BOOLEAN",
        "double": "DOUBLE",
        "bytes": "BYTES",
        "json": "STRING",
        "date": "DATE",
        "timestamp": "DATE",
        "timestamptz": "DATE",
    }

    def __init__(self) -> None:
        self.sequence = 1_620_457_642_589_000_000
        self.database = "inventory_dw"

    def _kind(self, kind: str) -> str:
        return "STRING" if kind.startswith("decimal") else self.TYPES[kind]

    def _value(self, kind: str, value: Any) -> Any:
        if value is None:
            return None
        if kind.startswith("decimal"):
            return decimal_text(quantized(kind, value))
        if kind in ("timestamp", "timestamptz"):
            return epoch_ms(value)
        if kind == "date":
            return epoch_ms(dt.datetime.combine(value, dt.time()))
        return bytes_and_json(kind, value)

    def _doc(
        self,
        world: World,
        table: str,
        op: str,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
        sequence: int,
        txn: Txn,
        ddl: str | None = None,
    ) -> str:
        types = world.types[table]
        columns = world.columns[table]

        def image(row: dict[str, Any] | None) -> dict[str, Any] | None:
            if row is None:
                return None
            return {"dataColumn": {c: self._value(types[c], row[c]) for c in columns if c in row}}

        ms = -1 if txn.snapshot else epoch_ms(txn.commit)
        doc = {
            "schema": {
                "dataColumn": [{"name": c, "type": self._kind(types[c])} for c in columns],
                "primaryKey": TABLES[table]["key"] if table in TABLES else None,
                "source": {
                    "dbType": "mysql",
                    "dbVersion": "8.0.32",
                    "dbName": self.database,
                    "schemaName": self.database,
                    "tableName": table,
                },
            },
            "payload": {
                "before": image(before),
                "after": image(after),
                "sequenceId": str(sequence),
                "scn": str(txn.txid),
                "op": op,
                "timestamp": {"eventTime": ms, "systemTime": ms + 40, "checkpointTime": ms},
                "ddl": None if ddl is None else {"text": ddl, "ddlMeta": None},
            },
            "version": "1.0.0",
        }
        return dumps(doc)

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        topic = "dataworks.inventory"
        ms = epoch_ms(txn.commit)
        if not txn.snapshot:
            self.sequence += 1
            yield Record(topic, None, None, self._marker(world, "TRANSACTION_BEGIN", txn), [], ms)
        for change in txn.changes:
            self.sequence += 1
            seq = -1 if txn.snapshot else self.sequence
            if change.kind == "ddl":
                yield Record(
                    topic,
                    None,
                    None,
                    self._doc(world, change.table, "ALTER", None, None, seq, txn, change.ddl),
                    [],
                    ms,
                )
                continue
            if change.kind == "truncate":
                yield Record(
                    topic,
                    None,
                    None,
                    self._doc(
                        world,
                        change.table,
                        "TRUNCATE",
                        None,
                        None,
                        seq,
                        txn,
                        f"TRUNCATE TABLE {change.table}",
                    ),
                    [],
                    ms,
                )
                continue
            route = (change.table, *key_of(change.table, change.after or change.before))
            if change.op == "u" and zlib.crc32(str(seq).encode()) % 2:
                # the two-record form: UPDATE_BEFOR then UPDATE_AFTER sharing the sequenceId
                yield Record(
                    topic,
                    route,
                    None,
                    self._doc(world, change.table, "UPDATE_BEFOR", change.before, None, seq, txn),
                    [],
                    ms,
                )
                yield Record(
                    topic,
                    route,
                    None,
                    self._doc(world, change.table, "UPDATE_AFTER", None, change.after, seq, txn),
                    [],
                    ms,
                )
                continue
            op = {"r": "INSERT", "c": "INSERT", "u": "UPDATE_AFTER", "d": "DELETE"}[change.op]
            yield Record(
                topic,
                route,
                None,
                self._doc(world, change.table, op, change.before, change.after, seq, txn),
                [],
                ms,
            )
        if not txn.snapshot:
            self.sequence += 1
            yield Record(topic, None, None, self._marker(world, "TRANSACTION_END", txn), [], ms)

    def _marker(self, world: World, op: str, txn: Txn) -> str:
        return self._doc(world, txn.changes[0].table, op, None, None, self.sequence, txn)

    def heartbeat(self, ms: int) -> Record:
        doc = {
            "schema": {
                "dataColumn": [],
                "primaryKey": None,
                "source": {"dbType": "mysql", "dbName": self.database},
            },
            "payload": {
                "before": None,
                "after": None,
                "sequenceId": str(self.sequence),
                "op": "MHEARTBEAT",
                "timestamp": {"eventTime": ms, "systemTime": ms, "checkpointTime": ms},
            },
            "version": "1.0.0",
        }
        return Record("dataworks.inventory", None, None, dumps(doc), [], ms)
