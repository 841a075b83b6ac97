"""The expected state, from the world model: each live key's row and its number of
SCD-2 versions, per feed and table."""

from __future__ import annotations

from typing import Any

from python_udfs.generator.world import TABLES, Change, World, canonical
from python_udfs.values import dump_json


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


def qualified_tables(feed: str) -> dict[str, str]:
    prefix = {
        "pg_inventory": "inventory.public.",
        "sqlserver_inventory": "testDB.dbo.",
        "dtle_inventory": "inventory_dtle.",
        "dataworks_inventory": "inventory_dw.inventory_dw.",
        "tencent_inventory": "inventory.",
        "canal_inventory": "inventory.",
    }[feed]
    return {t: prefix + t for t in TABLES}
