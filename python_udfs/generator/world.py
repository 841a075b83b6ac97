"""The world the demo feeds capture: an inventory database's tables, keys and the
transactions that change them, one run per feed; and the canonical rendering of its values
(what the decoders emit, see :mod:`python_udfs.layout`)."""

from __future__ import annotations

import base64
import datetime as dt
import random
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import orjson

from python_udfs.values import decimal_text, timestamp_text

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

    def __init__(
        self, rng: random.Random, keys: int, capabilities: set[str], steady: bool = False
    ) -> None:
        self.rng = rng
        self.keys = keys
        # steady: customers and orders stay about ``keys`` live rows each (an insert past that
        # deletes one instead), so the world ages without growing
        self.steady = steady
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
        if self.steady and pick < 0.20 and len(live["orders"]) >= self.keys:
            return self._delete_order(live["orders"].choice(r))
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
            return self._delete_order(live["orders"].choice(r))
        if pick < 0.83:
            key = live["order_lines"].choice(r)
            if key is None:
                return []
            return [self._update("order_lines", key, quantity=r.randint(1, 9))]
        if self.steady and pick < 0.94 and len(live["customers"]) >= self.keys:
            pick = 0.90  # a customer inserted (new or again) past ``keys``: one deleted instead
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

    def _delete_order(self, key: tuple) -> list[Change]:
        """An order deleted with its live lines."""
        number = key[0]
        changes = [
            self._delete("order_lines", (number, n))
            for n in range(1, self.lines_of.get(number, 0) + 1)
            if (number, n) in self.live["order_lines"].rows
        ]
        return [*changes, self._delete("orders", key)]

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


def epoch_ms(moment: dt.datetime) -> int:
    return (moment - EPOCH) // dt.timedelta(milliseconds=1)


def zoned_text(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def mysql_text(kind: str, value: Any) -> Any:
    if value is None:
        return None
    if kind == "bool":
        return "1" if value else "0"
    if kind.startswith("decimal"):
        return decimal_text(quantized(kind, value))
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
    return {c: mysql_text(types[c], row[c]) for c in world.columns[table] if c in row}


def bytes_and_json(kind: str, value: Any) -> Any:
    """Bytes as base64 text and JSON documents as sorted compact text; others unchanged."""
    if kind == "bytes":
        return base64.b64encode(value).decode()
    if kind == "json":
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return value


def quantized(kind: str, value: Decimal) -> Decimal:
    scale = int(kind.split(":")[2])
    return Decimal(value).quantize(Decimal(1).scaleb(-scale))


def canonical(family: str, kind: str, value: Any) -> Any:
    """A world value as the feed's decoder renders it in the row image."""
    if value is None:
        return None
    if family == "text":  # Tencent and Canal send every value as MySQL text
        return mysql_text(kind, value)
    if kind.startswith("decimal"):
        return decimal_text(quantized(kind, value))
    if kind in ("bytes", "json"):
        return bytes_and_json(kind, value)
    if family == "dataworks":
        if kind in ("timestamp", "timestamptz"):
            return timestamp_text(epoch_ms(value) * 1_000_000, zone="Z")
        if kind == "date":
            return timestamp_text(epoch_ms(dt.datetime.combine(value, dt.time())) * 1_000_000, "Z")
        return value
    if kind == "timestamp":
        return timestamp_text(epoch_ms(value) * 1_000_000, zone=None)
    if kind == "timestamptz":
        return zoned_text(value)
    if kind == "date":
        return value.isoformat()
    return value
