"""Deterministic demo data: an inventory world captured by six CDC feeds, landed in batches.

``changelake generate --out DIR [--events N] [--keys K] [--batches B] [--seed S]``

One world model (customers, products, orders, order lines) runs once per feed, each feed being
its own source database, and every change is encoded the way that feed's connector sends it:

=====================  =====================  ============================================
feed                   format, landing shape  what the feed exercises
=====================  =====================  ============================================
pg_inventory           Debezium PostgreSQL,   schema+payload, logical types, LSN positions,
                       kcat lines             tombstones, PK change headers, TOAST, truncate,
                                              transaction topic, heartbeats, messages
sqlserver_inventory    Debezium SQL Server,   commit/change LSN + event_serial_no, PK change
                       Connect sink files     as delete 1 + insert 2, keys from configuration
dtle_inventory (+ddl)  dtle MySQL, kcat       binlog file/pos/row, DDL topic, PK headers
dataworks_inventory    DataWorks, kcat        full sync (sequenceId -1), two-record and
                                              one-record updates, transactions, heartbeats
tencent_inventory      Tencent Format I, kcat values as text, keys from configuration
canal_inventory        Canal flat JSON, kcat  multi-row messages, partial ``old``, DDL
=====================  =====================  ============================================

Delivery is what Kafka and landing give: two partitions per table topic (by key), so changes
of one table arrive out of order across partitions; some partition files land one batch late;
kcat files overlap the previous file of their partition (at-least-once re-delivery, the same
offsets twice); a few records are malformed or in another feed's format.

The world model also writes ``expected.json``: per feed and table, each live key's row image
(as of its last change, in the feed's canonical encoding, see :mod:`python_udfs.layout`) and
the number of SCD-2 versions the history must hold, plus how many records landed and how many
must reach the quarantine.

Examples
--------
>>> import tempfile, json, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> summary = generate(out, events=600, keys=20, batches=2, seed=7)
>>> sorted(json.loads((out / "expected.json").read_text())["feeds"]) == sorted(FEEDS)
True
>>> summary == generate(pathlib.Path(tempfile.mkdtemp()), events=600, keys=20, batches=2, seed=7)
True
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import gzip
import random
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

import orjson

from python_udfs.values import decimal_text, dump_json, timestamp_text

FEEDS = (
    "pg_inventory",
    "sqlserver_inventory",
    "dtle_inventory",
    "dataworks_inventory",
    "tencent_inventory",
    "canal_inventory",
)
PARTITIONS = 2
# records per landed file at most, like a Kafka Connect sink's flush.size: a landed file is read
# as one row (so each record keeps its file and line), which must fit in an executor's memory
FILE_RECORDS = 10_000
# topics landed in a feed of their own (dtle's DDL topic has its own envelope format)
FEED_OF_TOPIC = {"dtle.schema-changes": "dtle_inventory_ddl"}
START = dt.datetime(2026, 1, 5, 8, 0, 0)
EPOCH = dt.datetime(1970, 1, 1)

# --------------------------------------------------------------------------------------------
# The world: tables, columns (name, type), keys
# --------------------------------------------------------------------------------------------

# types: int, long, string, bool, decimal:P:S, double, timestamp (no zone), timestamptz, date,
# bytes, json
TABLES: dict[str, dict[str, Any]] = {
    "customers": {
        "key": ["id"],
        "columns": [
            ("id", "int"),
            ("first_name", "string"),
            ("last_name", "string"),
            ("email", "string"),
            ("is_active", "bool"),
            ("created_at", "timestamp"),
            ("profile", "json"),
        ],
    },
    "products": {
        "key": ["id"],
        "columns": [
            ("id", "int"),
            ("name", "string"),
            ("description", "string"),
            ("price", "decimal:10:2"),
            ("weight", "double"),
            ("image", "bytes"),
        ],
    },
    "orders": {
        "key": ["order_number"],
        "columns": [
            ("order_number", "int"),
            ("customer_id", "int"),
            ("order_date", "date"),
            ("status", "string"),
            ("total", "decimal:12:2"),
            ("updated_at", "timestamptz"),
        ],
    },
    "order_lines": {
        "key": ["order_number", "line_number"],
        "columns": [
            ("order_number", "int"),
            ("line_number", "int"),
            ("product_id", "int"),
            ("quantity", "int"),
            ("unit_price", "decimal:10:2"),
        ],
    },
}
ADDED_COLUMN = ("customers", "loyalty_tier", "string")  # added by DDL half way through
FIRST = ["Anne", "Sally", "George", "Edward", "Mei", "Ravi", "Olga", "Kwame", "Lucía", "Jürgen"]
LAST = ["Kretchmar", "Thomas", "Bailey", "Walker", "Chen", "Patel", "Ivanova", "Mensah", "Soto"]
WORDS = ["scooter", "battery", "drill", "hammer", "rocks", "jacket", "spare tire", "lamp"]
STATUSES = ["new", "paid", "packed", "shipped", "delivered", "returned"]
TIERS = ["bronze", "silver", "gold", None]


@dataclass
class Change:
    """One row change or table event in source order, in world values."""

    kind: str  # row, truncate, ddl
    table: str
    op: str | None = None  # r, c, u, d
    before: dict[str, Any] | None = None
    after: dict[str, Any] | None = None
    toast: tuple[str, ...] = ()  # columns the source does not send (PostgreSQL TOAST)
    new_key_of: dict[str, Any] | None = None  # PK change: delete's new key / insert's old key
    pk_change: str | None = None  # "delete" or "insert" half, or "update" (one record)
    ddl: str | None = None
    seq: int = 0  # global order within the feed's source
    row: int = 0  # row within the transaction


@dataclass
class Txn:
    changes: list[Change]
    commit: dt.datetime
    txid: int
    snapshot: bool = False


class LiveKeys:
    """The live rows of one table: O(1) insert, delete and random choice."""

    def __init__(self) -> None:
        self.rows: dict[tuple, dict[str, Any]] = {}
        self._keys: list[tuple] = []
        self._index: dict[tuple, int] = {}

    def put(self, key: tuple, row: dict[str, Any]) -> None:
        if key not in self._index:
            self._index[key] = len(self._keys)
            self._keys.append(key)
        self.rows[key] = row

    def remove(self, key: tuple) -> None:
        index = self._index.pop(key)
        last = self._keys.pop()
        if index < len(self._keys):
            self._keys[index] = last
            self._index[last] = index
        del self.rows[key]

    def choice(self, rng: random.Random) -> tuple | None:
        return self._keys[rng.randrange(len(self._keys))] if self._keys else None

    def __len__(self) -> int:
        return len(self._keys)


def key_of(table: str, row: dict[str, Any]) -> tuple:
    return tuple(row[c] for c in TABLES[table]["key"])


class World:
    """The inventory database of one feed: generates transactions and tracks live rows."""

    def __init__(self, rng: random.Random, keys: int, capabilities: set[str]) -> None:
        self.rng = rng
        self.keys = keys
        self.can = capabilities
        self.live = {t: LiveKeys() for t in TABLES}
        self.deleted_customers: list[dict[str, Any]] = []
        self.columns = {t: [c for c, _ in spec["columns"]] for t, spec in TABLES.items()}
        self.types = {t: dict(spec["columns"]) for t, spec in TABLES.items()}
        self.clock = START
        self.txid = 500
        self.seq = 0
        self.next_id = {"customers": 1001, "products": 101, "orders": 10001}
        self.lines_of: dict[int, int] = {}

    # values ---------------------------------------------------------------------------
    def _ts(self) -> dt.datetime:
        return self.clock.replace(microsecond=(self.clock.microsecond // 1000) * 1000)

    def customer(self, cid: int) -> dict[str, Any]:
        r = self.rng
        first, last = r.choice(FIRST), r.choice(LAST)
        row = {
            "id": cid,
            "first_name": first,
            "last_name": last,
            "email": f"{first.lower()}.{last.lower()}{cid}@example.com",
            "is_active": r.random() < 0.9,
            "created_at": self._ts(),
            "profile": {"newsletter": r.random() < 0.5, "segment": r.choice("ABC")},
        }
        if "loyalty_tier" in self.columns["customers"]:
            row["loyalty_tier"] = r.choice(TIERS)
        return row

    def product(self, pid: int) -> dict[str, Any]:
        r = self.rng
        word = r.choice(WORDS)
        return {
            "id": pid,
            "name": f"{word} {pid}",
            "description": f"The {word} model {pid}. " + "Long description text. " * 120,
            "price": Decimal(r.randrange(100, 100000)) / 100,
            "weight": round(r.uniform(0.1, 40.0), 2),
            "image": bytes(r.randrange(256) for _ in range(12)),
        }

    def order(self, number: int, customer_id: int) -> dict[str, Any]:
        return {
            "order_number": number,
            "customer_id": customer_id,
            "order_date": self.clock.date(),
            "status": "new",
            "total": Decimal(0).quantize(Decimal("0.01")),
            "updated_at": self._ts(),
        }

    # changes --------------------------------------------------------------------------
    def _insert(self, table: str, row: dict[str, Any], op: str = "c") -> Change:
        self.live[table].put(key_of(table, row), row)
        return Change("row", table, op, None, dict(row))

    def _update(self, table: str, key: tuple, **values: Any) -> Change:
        old = self.live[table].rows[key]
        new = {**old, **values}
        self.live[table].put(key, new)
        return Change("row", table, "u", dict(old), dict(new))

    def _delete(self, table: str, key: tuple) -> Change:
        old = self.live[table].rows[key]
        self.live[table].remove(key)
        return Change("row", table, "d", dict(old), None)

    def snapshot(self) -> Iterator[Change]:
        for _ in range(self.keys):
            yield self._insert("customers", self.customer(self._next("customers")), "r")
        for _ in range(max(1, self.keys // 2)):
            yield self._insert("products", self.product(self._next("products")), "r")
        for _ in range(self.keys):
            cid = self.live["customers"].choice(self.rng)
            number = self._next("orders")
            order = self.order(number, cid[0])
            lines = []
            for line in range(1, self.rng.randint(1, 3) + 1):
                lines.append(self._line(number, line))
            order["total"] = sum(
                (li.after["unit_price"] * li.after["quantity"] for li in lines), Decimal("0.00")
            )
            self.live["orders"].put((number,), order)
            yield Change("row", "orders", "r", None, dict(order))
            for li in lines:
                li.op = "r"
                yield li

    def _next(self, table: str) -> int:
        value = self.next_id[table]
        self.next_id[table] += 1
        return value

    def _line(self, number: int, line: int) -> Change:
        pid = self.live["products"].choice(self.rng)
        price = self.live["products"].rows[pid]["price"]
        self.lines_of[number] = max(self.lines_of.get(number, 0), line)
        return self._insert(
            "order_lines",
            {
                "order_number": number,
                "line_number": line,
                "product_id": pid[0],
                "quantity": self.rng.randint(1, 5),
                "unit_price": price,
            },
        )

    def transaction(self) -> list[Change]:
        """One transaction of the stream (the one-off DDL and truncate are placed by stream)."""
        r = self.rng
        pick = r.random()
        live = self.live
        if pick < 0.20 or len(live["orders"]) < 3:
            cid = live["customers"].choice(r)
            if cid is None:
                return [self._insert("customers", self.customer(self._next("customers")))]
            number = self._next("orders")
            order = self.order(number, cid[0])
            lines = [self._line(number, n) for n in range(1, r.randint(1, 3) + 1)]
            order["total"] = sum(
                (li.after["unit_price"] * li.after["quantity"] for li in lines), Decimal("0.00")
            )
            return [self._insert("orders", order), *lines]
        if pick < 0.45:
            key = live["orders"].choice(r)
            status = r.choice(STATUSES)
            return [self._update("orders", key, status=status, updated_at=self._ts())]
        if pick < 0.57:
            key = live["customers"].choice(r)
            if key is None:
                return []
            values: dict[str, Any] = {"email": f"user{r.randrange(10**6)}@example.org"}
            if r.random() < 0.3:
                values["is_active"] = not live["customers"].rows[key]["is_active"]
            if "loyalty_tier" in self.columns["customers"] and r.random() < 0.5:
                values["loyalty_tier"] = r.choice(TIERS)
            return [self._update("customers", key, **values)]
        if pick < 0.62:
            # an update that changes nothing (a trigger touching the row, for example)
            key = live["customers"].choice(r)
            return [] if key is None else [self._update("customers", key)]
        if pick < 0.70:
            key = live["products"].choice(r)
            price = Decimal(r.randrange(100, 100000)) / 100
            change = self._update("products", key, price=price)
            if "toast" in self.can:
                change.toast = ("description",)
            return [change]
        if pick < 0.77:
            key = live["orders"].choice(r)
            number = key[0]
            changes = [
                self._delete("order_lines", (number, n))
                for n in range(1, self.lines_of.get(number, 0) + 1)
                if (number, n) in live["order_lines"].rows
            ]
            return [*changes, self._delete("orders", key)]
        if pick < 0.83:
            key = live["order_lines"].choice(r)
            if key is None:
                return []
            return [self._update("order_lines", key, quantity=r.randint(1, 9))]
        if pick < 0.89:
            return [self._insert("customers", self.customer(self._next("customers")))]
        if pick < 0.92 and len(live["customers"]) > 2:
            key = live["customers"].choice(r)
            self.deleted_customers.append(live["customers"].rows[key])
            return [self._delete("customers", key)]
        if pick < 0.94 and self.deleted_customers:
            # the same key inserted again after its delete: a new version after a gap
            row = self.deleted_customers.pop(r.randrange(len(self.deleted_customers)))
            row = {**row, "email": f"back{r.randrange(10**6)}@example.org"}
            if "loyalty_tier" in self.columns["customers"]:
                row.setdefault("loyalty_tier", None)
            return [self._insert("customers", row)]
        if pick < 0.96:
            return self.pk_change()
        key = live["products"].choice(r)
        return [self._update("products", key, weight=round(r.uniform(0.1, 40.0), 2))]

    def pk_change(self) -> list[Change]:
        key = self.live["customers"].choice(self.rng)
        if key is None:
            return []
        old = self.live["customers"].rows[key]
        new = {**old, "id": self._next("customers")}
        self.live["customers"].remove(key)
        self.live["customers"].put((new["id"],), new)
        if "pk_update" in self.can:  # MySQL binlog: one update whose key changed
            return [Change("row", "customers", "u", dict(old), dict(new), pk_change="update")]
        return [
            Change(
                "row",
                "customers",
                "d",
                dict(old),
                None,
                new_key_of={"id": new["id"]},
                pk_change="delete",
            ),
            Change(
                "row",
                "customers",
                "c",
                None,
                dict(new),
                new_key_of={"id": old["id"]},
                pk_change="insert",
            ),
        ]

    def truncate(self, table: str) -> Change:
        for key in list(self.live[table].rows):
            self.live[table].remove(key)
        if table == "order_lines":
            self.lines_of.clear()
        return Change("truncate", table)

    def add_column(self) -> Change:
        table, column, kind = ADDED_COLUMN
        self.columns[table].append(column)
        self.types[table][column] = kind
        for key, row in list(self.live[table].rows.items()):
            self.live[table].rows[key] = {**row, column: None}
        return Change("ddl", table, ddl=f"ALTER TABLE {table} ADD COLUMN {column} VARCHAR(16) NULL")

    def stream(self, events: int) -> Iterator[Txn]:
        """The snapshot transaction(s), then the stream, until ``events`` row changes."""
        snapshot = list(self.snapshot())
        emitted = len(snapshot)
        yield Txn(snapshot, self.clock, self._txid(), snapshot=True)
        ddl_at, truncate_at = 0.5, 0.7
        while emitted < events:
            progress = emitted / max(events, 1)
            self.clock += dt.timedelta(milliseconds=self.rng.randint(5, 4000))
            if ddl_at is not None and progress >= ddl_at:
                ddl_at = None
                yield Txn([self.add_column()], self.clock, self._txid())
                continue
            if truncate_at is not None and progress >= truncate_at and "truncate" in self.can:
                truncate_at = None
                yield Txn([self.truncate("order_lines")], self.clock, self._txid())
                continue
            changes = self.transaction()
            if changes:
                emitted += sum(1 for c in changes if c.kind == "row")
                yield Txn(changes, self.clock, self._txid())

    def _txid(self) -> int:
        self.txid += 1
        return self.txid


# --------------------------------------------------------------------------------------------
# Canonical renderings (what the decoders emit; see python_udfs.layout)
# --------------------------------------------------------------------------------------------


def _ms(moment: dt.datetime) -> int:
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)


def _zoned(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _mysql_text(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "bool":
        return "1" if value else "0"
    if kind.startswith("decimal"):
        return decimal_text(_quantized(kind, value))
    if kind in ("timestamp", "timestamptz"):
        return value.strftime("%Y-%m-%d %H:%M:%S.") + f"{value.microsecond // 1000:03d}"
    if kind == "date":
        return value.isoformat()
    if kind == "bytes":
        return value.hex()
    if kind == "json":
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return str(value)


def mysql_image(world: World, table: str, row: dict[str, Any] | None) -> dict[str, Any] | None:
    """A row as MySQL text values (Tencent, Canal); None stays None."""
    if row is None:
        return None
    types = world.types[table]
    return {c: _mysql_text(types[c], row[c]) for c in world.columns[table] if c in row}


def _bytes_and_json(kind: str, value: Any) -> Any:
    """Bytes as base64 text and JSON documents as sorted compact text; others unchanged."""
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "json":
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return value


def _quantized(kind: str, value: Decimal) -> Decimal:
    scale = int(kind.split(":")[2])
    return Decimal(value).quantize(Decimal(1).scaleb(-scale))


def canonical(family: str, kind: str, value: Any) -> Any:
    """A world value as the feed's decoder renders it in the row image."""
    if value is None:
        return None
    if family == "text":  # Tencent and Canal send every value as MySQL text
        return _mysql_text(kind, value)
    if kind.startswith("decimal"):
        return decimal_text(_quantized(kind, value))
    if kind in ("bytes", "json"):
        return _bytes_and_json(kind, value)
    if family == "dataworks":
        if kind in ("timestamp", "timestamptz"):
            return timestamp_text(_ms(value) * 1_000_000, zone="Z")
        if kind == "date":
            return timestamp_text(_ms(dt.datetime.combine(value, dt.time())) * 1_000_000, "Z")
        return value
    if kind == "timestamp":
        return timestamp_text(_ms(value) * 1_000_000, zone=None)
    if kind == "timestamptz":
        return _zoned(value)
    if kind == "date":
        return value.isoformat()
    return value


# --------------------------------------------------------------------------------------------
# Encoders: a transaction -> Kafka records (topic, partition key, key, value, headers)
# --------------------------------------------------------------------------------------------


@dataclass
class Record:
    topic: str
    route: Any  # partition routing key (None: partition 0)
    key: str | None
    value: str | None
    headers: list[str] = field(default_factory=list)
    timestamp_ms: int = 0


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


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
            cached = self._schemas[(table, columns)] = _dumps(envelope)
        return cached

    def key_text(self, world: World, table: str, key: dict[str, Any]) -> str:
        fields = [self._field(c, world.types[table][c], False) for c in TABLES[table]["key"]]
        name = f"{self.server}.{self.schema or self.database}.{table}.Key"
        schema = {"type": "struct", "fields": fields, "optional": False, "name": name}
        return _dumps({"schema": schema, "payload": key})

    def _value(self, kind: str, value: Any) -> Any:
        if value is None:
            return None
        if kind.startswith("decimal"):
            unscaled = int(_quantized(kind, value).scaleb(int(kind.split(":")[2])))
            size = max(1, (unscaled.bit_length() + 8) // 8)
            return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()
        if kind == "timestamp":
            ms = _ms(value)
            return ms * 1000 if self.flavour == "postgresql" else ms
        if kind == "timestamptz":
            return _zoned(value)
        if kind == "date":
            return (value - EPOCH.date()).days
        return _bytes_and_json(kind, value)

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
        ms = _ms(txn.commit)
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
        return '{"schema":' + self.schema_text(world, table) + ',"payload":' + _dumps(payload) + "}"

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
            _dumps({"id": payload["id"]}),
            _dumps(payload),
            [],
            ms,
        )

    def heartbeat(self, ms: int) -> Record:
        return Record(
            f"__debezium-heartbeat.{self.server}",
            None,
            _dumps({"serverName": self.server}),
            _dumps({"ts_ms": ms}),
            [],
            ms,
        )


class Dtle(Debezium):
    """dtle: Debezium-compatible data topics plus a DDL topic (SchemaChangeTopic)."""

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        for change in txn.changes:
            if change.kind == "ddl":
                self.binlog_pos += 200
                doc = {
                    "source": {"server": self.server},
                    "position": {
                        "ts_sec": _ms(txn.commit) // 1000,
                        "file": "mysql-bin.000003",
                        "pos": self.binlog_pos,
                        "gtids": f"3e11fa47:1-{txn.txid}",
                        "snapshot": False,
                    },
                    "databaseName": self.database,
                    "ddl": change.ddl,
                    "tableChanges": [],
                }
                yield Record("dtle.schema-changes", None, None, _dumps(doc), [], _ms(txn.commit))
        yield from super().encode(world, txn)


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
            return decimal_text(_quantized(kind, value))
        if kind in ("timestamp", "timestamptz"):
            return _ms(value)
        if kind == "date":
            return _ms(dt.datetime.combine(value, dt.time()))
        return _bytes_and_json(kind, value)

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

        ms = -1 if txn.snapshot else _ms(txn.commit)
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
        return _dumps(doc)

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        topic = "dataworks.inventory"
        ms = _ms(txn.commit)
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
        return Record("dataworks.inventory", None, None, _dumps(doc), [], ms)


class Tencent:
    """Tencent Official Format I: flat text values, TIME in the server zone (+08:00)."""

    family = "text"
    ZONE = dt.timedelta(hours=8)

    def __init__(self) -> None:
        self.pos = 154

    def encode(self, world: World, txn: Txn) -> Iterator[Record]:
        ms = _ms(txn.commit)
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
                yield Record("tencent.inventory", None, None, _dumps(doc), [], ms)
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
            yield Record("tencent.inventory", route, None, _dumps(doc), [], ms)


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
        ms = _ms(txn.commit)
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
                yield Record("canal.inventory", None, None, _dumps(doc), [], ms)
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
            yield Record("canal.inventory", route, None, _dumps(doc), [], ms)


# feed -> (encoder factory, capabilities, shape, key columns configured by table name prefix)
def _encoders() -> dict[str, tuple[Any, set[str], str]]:
    return {
        "pg_inventory": (
            lambda: Debezium("postgresql", "pg_server", "inventory", "public"),
            {"toast", "truncate"},
            "kcat",
        ),
        "sqlserver_inventory": (
            lambda: Debezium("sqlserver", "server1", "testDB", "dbo"),
            set(),
            "connect",
        ),
        "dtle_inventory": (
            lambda: Dtle("mysql", "dtle_server", "inventory_dtle", None),
            set(),
            "kcat",
        ),
        "dataworks_inventory": (DataWorks, {"pk_update", "truncate"}, "kcat"),
        "tencent_inventory": (Tencent, {"pk_update"}, "kcat"),
        "canal_inventory": (Canal, {"pk_update", "truncate"}, "kcat"),
    }


# --------------------------------------------------------------------------------------------
# Delivery: partitions, batches, late files, re-delivered overlaps, malformed records
# --------------------------------------------------------------------------------------------

MALFORMED = (
    '{"schema": {"type": "struct"}, "payload": {"op": "c", "after": {"id": 1',  # cut short
    "this is not JSON at all",
    '{"type": "INSERT", "data": "not a list", "database": "inventory", "table": "x"}',
)


class Landing:
    """Writes one feed's records into ``batch-NNNN/<feed>/`` files, kcat or Connect shape."""

    def __init__(self, out: Path, feed: str, shape: str, batches: int, rng: random.Random) -> None:
        self.out, self.feed, self.shape, self.batches, self.rng = out, feed, shape, batches, rng
        self.offsets: dict[tuple[str, int], int] = {}
        self.buffers: dict[tuple[str, int, int], list[tuple[int, str]]] = {}
        self.tail: dict[tuple[str, int], list[tuple[int, str]]] = {}
        self.records = 0  # distinct Kafka records (by topic, partition, offset)
        self.lines = 0  # landed lines, re-deliveries included
        self.malformed = 0  # distinct malformed records
        self.bad_offsets: set[tuple[str, int, int]] = set()
        self.malformed_lines = 0  # landed malformed lines, re-deliveries included

    def partition(self, record: Record) -> int:
        if record.route is None:
            return 0
        return zlib.crc32(repr(record.route).encode()) % PARTITIONS

    def add(self, batch: int, record: Record) -> None:
        partition = self.partition(record)
        offset = self.offsets.get((record.topic, partition), 0)
        self.offsets[(record.topic, partition)] = offset + 1
        self.records += 1
        if self.shape == "connect":
            if record.value is None:
                return  # the sink drops tombstones (behavior.on.null.values=ignore)
            line = record.value
        else:
            line = _dumps(
                {
                    "topic": record.topic,
                    "partition": partition,
                    "offset": offset,
                    "tstype": "create",
                    "ts": record.timestamp_ms + 50,
                    "broker": 0,
                    "headers": record.headers,
                    "key": record.key,
                    "payload": record.value,
                }
            )
        self.buffers.setdefault((record.topic, partition, batch), []).append((offset, line))

    def add_malformed(self, batch: int, topic: str, text: str) -> None:
        self.malformed += 1
        record = Record(topic, None, None, text, [], 0)
        partition = self.partition(record)
        self.bad_offsets.add((topic, partition, self.offsets.get((topic, partition), 0)))
        self.add(batch, record)

    def flush(self) -> None:
        for (topic, partition, batch), lines in sorted(self.buffers.items()):
            overlap: list[tuple[int, str]] = []
            previous = self.tail.get((topic, partition))
            if self.shape == "kcat" and previous and len(previous) > 1 and self.rng.random() < 0.5:
                # re-delivered after a consumer restart: the previous file's last records again
                overlap = previous[-self.rng.randint(1, min(3, len(previous) - 1)) :]
            self.tail[(topic, partition)] = lines
            lines = overlap + lines
            late = batch + 1 < self.batches and partition == 1 and self.rng.random() < 0.3
            if late and len(lines) > 1:
                # the end of this partition's file lands one batch late, as a file of its own
                cut = len(lines) - min(25, len(lines) // 10 + 1)
                self._write(batch, topic, partition, lines[:cut])
                self._write(batch + 1, topic, partition, lines[cut:])
            else:
                self._write(batch, topic, partition, lines)
        self.buffers.clear()

    def _write(self, batch: int, topic: str, partition: int, lines: list[tuple[int, str]]) -> None:
        """Write ``lines`` as files of at most FILE_RECORDS records (a sink's flush size)."""
        folder = self.out / f"batch-{batch:04d}" / FEED_OF_TOPIC.get(topic, self.feed)
        folder.mkdir(parents=True, exist_ok=True)
        self.lines += len(lines)
        # the quarantine holds every landed bad line: a re-delivered one is there twice
        self.malformed_lines += sum((topic, partition, o) in self.bad_offsets for o, _ in lines)
        for first in range(0, len(lines), FILE_RECORDS):
            chunk = lines[first : first + FILE_RECORDS]
            start, end = chunk[0][0], chunk[-1][0]
            text = "\n".join(line for _, line in chunk) + "\n"
            if self.shape == "connect":
                path = folder / f"{topic}+{partition}+{start:010d}.json.gz"
                path.write_bytes(gzip.compress(text.encode(), mtime=0))
            else:
                # kcat files are named by their first and last offsets: a re-delivered range
                # never takes the name of an earlier file
                path = folder / f"{topic}-{partition}-{start:012d}-{end:012d}.jsonl"
                path.write_text(text)


# --------------------------------------------------------------------------------------------
# Expected state, from the world model
# --------------------------------------------------------------------------------------------


class Expectation:
    """Tracks, per table, each live key's last image and the versions the history must hold."""

    def __init__(self, family: str, qualified: dict[str, str]) -> None:
        self.family = family
        self.qualified = qualified  # table -> "database.schema.table" as the decoder names it
        self.images: dict[str, dict[str, str]] = {t: {} for t in TABLES}
        self.versions = dict.fromkeys(TABLES, 0)
        self.changes = 0

    def render(self, world: World, table: str, row: dict[str, Any]) -> dict[str, Any]:
        types = world.types[table]
        return {
            c: canonical(self.family, types[c], row[c]) for c in world.columns[table] if c in row
        }

    def apply(self, world: World, change: Change) -> None:
        images = self.images[change.table]
        if change.kind == "truncate":
            images.clear()
            return
        if change.kind != "row":
            return
        self.changes += 1
        if change.before is not None:
            old_key = self._key(world, change.table, change.before)
            if change.after is None or self._key(world, change.table, change.after) != old_key:
                images.pop(old_key, None)
        if change.after is not None:
            image = self.render(world, change.table, change.after)
            key = self._key(world, change.table, change.after)
            text = dump_json(image)
            if images.get(key) != text:
                self.versions[change.table] += 1
            images[key] = text

    def _key(self, world: World, table: str, row: dict[str, Any]) -> str:
        image = self.render(world, table, {c: row[c] for c in TABLES[table]["key"]})
        return dump_json(image)

    def as_json(self) -> dict[str, Any]:
        return {
            self.qualified[t]: {
                "key_columns": TABLES[t]["key"],
                "versions": self.versions[t],
                "rows": dict(sorted(self.images[t].items())),
            }
            for t in TABLES
        }


def _qualified(feed: str) -> dict[str, str]:
    prefix = {
        "pg_inventory": "inventory.public.",
        "sqlserver_inventory": "testDB.dbo.",
        "dtle_inventory": "inventory_dtle.",
        "dataworks_inventory": "inventory_dw.inventory_dw.",
        "tencent_inventory": "inventory.",
        "canal_inventory": "inventory.",
    }[feed]
    return {t: prefix + t for t in TABLES}


# --------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------


def generate(
    out: Path,
    events: int = 20_000,
    keys: int = 200,
    batches: int = 3,
    seed: int = 42,
    feeds: Sequence[str] = FEEDS,
    last_share: float | None = None,
) -> dict[str, Any]:
    """Write ``batches`` landing batches of every feed under ``out``; return the summary.

    ``events`` row changes in all (snapshot included), split evenly across ``feeds``; ``keys``
    rows per table in each feed's initial snapshot. The batches are equal, or with
    ``last_share`` the last batch holds that share of the changes (0.01: a 1% increment).
    ``out/expected.json`` holds the expected final state. Same arguments, same bytes.
    """
    out.mkdir(parents=True, exist_ok=True)
    encoders = _encoders()
    summary: dict[str, Any] = {
        "events": events,
        "keys": keys,
        "batches": batches,
        "seed": seed,
        "feeds": {},
    }
    per_feed = max(1, events // len(feeds))
    for feed in feeds:
        factory, capabilities, shape = encoders[feed]
        rng = random.Random(f"{seed}/{feed}")
        world = World(rng, keys, capabilities)
        encoder = factory()
        landing = Landing(out, feed, shape, batches, random.Random(f"{seed}/{feed}/landing"))
        expect = Expectation(encoder.family, _qualified(feed))
        emitted = 0
        batch = 0
        data_topic = None
        for txn in world.stream(per_feed):
            for change in txn.changes:
                expect.apply(world, change)
            if last_share is None:
                new_batch = min(batches - 1, emitted * batches // per_feed)
            elif emitted >= per_feed * (1 - last_share):
                new_batch = batches - 1
            else:
                new_batch = min(
                    batches - 2, int(emitted * (batches - 1) / (per_feed * (1 - last_share)))
                )
            emitted += sum(1 for c in txn.changes if c.kind == "row")
            if new_batch != batch:
                landing.flush()
                batch = new_batch
            for record in encoder.encode(world, txn):
                data_topic = data_topic or record.topic
                landing.add(batch, record)
            if hasattr(encoder, "heartbeat") and txn.txid % 50 == 0:
                landing.add(batch, encoder.heartbeat(_ms(txn.commit)))
            if txn.txid % 997 == 0 or (txn.txid % 211 == 0 and landing.malformed < 2):
                landing.add_malformed(batch, data_topic, MALFORMED[txn.txid % len(MALFORMED)])
        landing.flush()
        summary["feeds"][feed] = {
            "shape": shape,
            "records": landing.records,
            "landed_lines": landing.lines,
            "row_changes": expect.changes,
            "malformed": landing.malformed_lines,
            "tables": expect.as_json(),
        }
    (out / "expected.json").write_bytes(orjson.dumps(summary, option=orjson.OPT_INDENT_2))
    return summary


def batch_folders(out: Path) -> list[Path]:
    """The generated batch folders in landing order."""
    return sorted(p for p in out.glob("batch-*") if p.is_dir())


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="changelake generate", description=generate.__doc__)
    parser.add_argument("--out", type=Path, required=True, help="folder to write into")
    parser.add_argument("--events", type=int, default=20_000, help="row changes in all")
    parser.add_argument("--keys", type=int, default=200, help="snapshot rows per table")
    parser.add_argument("--batches", type=int, default=3, help="landing batches")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--feeds", default=",".join(FEEDS), help="comma-separated feeds")
    parser.add_argument("--last-share", type=float, help="share of changes in the last batch")
    opts = parser.parse_args(argv)
    summary = generate(
        opts.out,
        opts.events,
        opts.keys,
        opts.batches,
        opts.seed,
        opts.feeds.split(","),
        opts.last_share,
    )
    for feed, facts in summary["feeds"].items():
        print(
            f"{feed:<22} {facts['records']:>9} records {facts['row_changes']:>9} changes "
            f"{facts['malformed']:>3} malformed ({facts['shape']})"
        )
    print(f"wrote {len(batch_folders(opts.out))} batches and expected.json to {opts.out}")
    return 0


def compare(session: Any, schema: str, summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Per generated feed and table: expected vs built live rows and versions.

    Reads ``cdc_current`` (key -> row) and ``cdc_history`` (versions) of ``schema``; each
    result says whether the table matched and, if not, up to three differing keys.
    """
    feeds = ", ".join(f"'{feed}'" for feed in summary["feeds"])
    table = "concat_ws('.', database_name, schema_name, table_name)"
    current: dict[tuple[str, str], dict[str, str]] = {}
    for r in session.sql(
        f"select feed, {table} as t, key_json, row_json "
        f"from {schema}.cdc_current where feed in ({feeds})"
    ).toLocalIterator():
        current.setdefault((r.feed, r.t), {})[r.key_json] = r.row_json
    counts = {
        (r.feed, r.t): r.n
        for r in session.sql(
            f"select feed, {table} as t, count(*) as n from {schema}.cdc_history "
            f"where feed in ({feeds}) group by 1, 2"
        ).collect()
    }
    report = []
    for feed, facts in summary["feeds"].items():
        for name, expected in facts["tables"].items():
            built = current.get((feed, name), {})
            differing = sorted(
                k
                for k in set(built) | set(expected["rows"])
                if built.get(k) != expected["rows"].get(k)
            )
            versions = counts.get((feed, name), 0)
            report.append(
                {
                    "feed": feed,
                    "table": name,
                    "rows_expected": len(expected["rows"]),
                    "rows_built": len(built),
                    "versions_expected": expected["versions"],
                    "versions_built": versions,
                    "matched": not differing and versions == expected["versions"],
                    "differing_keys": differing[:3],
                }
            )
    return report
