"""How dtle sends a change: Debezium-compatible MySQL JSON plus a DDL topic.
Decoded by :mod:`python_udfs.debezium` and :mod:`python_udfs.dtle`."""

from __future__ import annotations

from collections.abc import Iterator

from python_udfs.generator.debezium import Debezium
from python_udfs.generator.record import Record, dumps
from python_udfs.generator.world import Txn, World, epoch_ms


class Dtle(Debezium):
    """dtle: Debezium-compatible data topics plus a DDL topic (SchemaChangeTopic)."""

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        for change in txn.changes:
            if change.kind == "ddl":
                self.binlog_pos += 200
                doc = {
                    "source": {"server": self.server},
                    "position": {
                        "ts_sec": epoch_ms(txn.commit) // 1000,
                        "file": "mysql-bin.000003",
                        "pos": self.binlog_pos,
                        "gtids": f"3e11fa47:1-{txn.txid}",
                        "snapshot": False,
                    },
                    "databaseName": self.database,
                    "ddl": change.ddl,
                    "tableChanges": [],
                }
                yield Record(
                    "dtle.schema-changes", None, None, dumps(doc), [], epoch_ms(txn.commit)
                )
        yield from super().encode(world, txn)
