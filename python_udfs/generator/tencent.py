"""How Tencent CKafka (Format I) sends a change. Decoded by :mod:`python_udfs.tencent`."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

from python_udfs.generator.record import Record, dumps
from python_udfs.generator.world import Txn, World, epoch_ms, key_of, mysql_image


class Tencent:
    """Tencent Official Format I: flat text values, TIME in the server zone (+08:00)."""

    family = "text"
    ZONE = dt.timedelta(hours=8)

    def __init__(self) -> None:
        self.pos = 154

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        ms = epoch_ms(txn.commit)
        for change in txn.changes:
            self.pos += 97
            if change.kind == "ddl":
                doc = {
                    "data": None,
                    "database": "inventory",
                    "es": ms,
                    "id": 0,
                    "isDdl": True,
                    "mysqlType": None,
                    "old": None,
                    "pkNames": None,
                    "sql": change.ddl,
                    "sqlType": None,
                    "table": change.table,
                    "ts": ms + 30,
                    "type": "ALTER",
                }
                yield Record("tencent.inventory", None, None, dumps(doc), [], ms)
                continue
            doc = {
                "BINLOG_NAME": "mysql-bin.000007",
                "BINLOG_POS": self.pos,
                "DATABASE": "inventory",
                "EVENT_SERVER_ID": "1",
                "GLOBAL_ID": f"6ad35dc5-e3b5-11ec-9b3e-525400c6f3a4:{txn.txid}",
                "NEW_VALUES": mysql_image(world, change.table, change.after),
                "OLD_VALUES": mysql_image(world, change.table, change.before),
                "TABLE": change.table,
                "TIME": (txn.commit + self.ZONE).strftime("%Y%m%d%H%M%S"),
                "TYPE": {"r": "I", "c": "I", "u": "U", "d": "D"}[change.op],
            }
            route = (change.table, *key_of(change.table, change.after or change.before))
            yield Record("tencent.inventory", route, None, dumps(doc), [], ms)
