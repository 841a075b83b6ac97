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

Each connector's encoding has the module of its name, beside the decoder of the same name in
:mod:`python_udfs`: :mod:`~python_udfs.generator.debezium` (PostgreSQL, SQL Server),
:mod:`~python_udfs.generator.dtle`, :mod:`~python_udfs.generator.dataworks`,
:mod:`~python_udfs.generator.tencent` and :mod:`~python_udfs.generator.canal`. They share the
world model (:mod:`~python_udfs.generator.world`: tables, transactions, canonical values), a
Kafka record (:mod:`~python_udfs.generator.record`), the delivery into landed files
(:mod:`~python_udfs.generator.landing`) and the expected state
(:mod:`~python_udfs.generator.expectation`).

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
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from python_udfs import runtime
from python_udfs.generator.canal import Canal
from python_udfs.generator.dataworks import DataWorks
from python_udfs.generator.debezium import Debezium
from python_udfs.generator.dtle import Dtle
from python_udfs.generator.expectation import Expectation, qualified_tables
from python_udfs.generator.landing import MALFORMED, Landing
from python_udfs.generator.tencent import Tencent
from python_udfs.generator.world import World, epoch_ms

FEEDS = (
    "pg_inventory",
    "sqlserver_inventory",
    "dtle_inventory",
    "dataworks_inventory",
    "tencent_inventory",
    "canal_inventory",
)


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


def generate(
    out: Path,
    events: int = 20_000,
    keys: int = 200,
    batches: int = 3,
    seed: int = 42,
    feeds: Sequence[str] = FEEDS,
    last_share: float | None = None,
    progress: Callable[[str], None] | None = None,
    steady: bool = False,
) -> dict[str, Any]:
    """Write ``batches`` landing batches of every feed under ``out``; return the summary.

    ``events`` row changes in all (snapshot included), split evenly across ``feeds``; ``keys``
    rows per table in each feed's initial snapshot. The snapshot goes with the first batch and
    the changes after it are split equally over the batches; or with ``last_share`` the last
    batch holds that share of all the changes (0.01: a 1% increment).
    ``out/expected.json`` holds the expected final state. Same arguments, same bytes.
    ``progress``, when given, is told each feed as it starts. With ``steady`` the world ages
    without growing: customers and orders stay about ``keys`` live rows each (an insert past
    that deletes one instead), so a read of the current state returns about as many rows after
    the last batch as after the first.
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
    if steady:
        summary["steady"] = True
    per_feed = max(1, events // len(feeds))
    for number, feed in enumerate(feeds, 1):
        if progress is not None:
            progress(f"generating {feed} ({number}/{len(feeds)}, {per_feed:,} changes)")
        factory, capabilities, shape = encoders[feed]
        rng = random.Random(f"{seed}/{feed}")
        world = World(rng, keys, capabilities, steady)
        encoder = factory()
        landing = Landing(out, feed, shape, batches, random.Random(f"{seed}/{feed}/landing"))
        expect = Expectation(encoder.family, qualified_tables(feed))
        emitted = 0
        snapshot = 0  # row changes of the snapshot, which goes with the first batch
        batch = 0
        data_topic = None
        for txn in world.stream(per_feed):
            for change in txn.changes:
                expect.apply(world, change)
            if last_share is None:
                # the changes after the snapshot in equal shares: counting the snapshot in, a
                # snapshot larger than a share carried the count past the next batches'
                # boundaries and left those batches empty
                after = max(1, per_feed - snapshot)
                new_batch = min(batches - 1, (emitted - snapshot) * batches // after)
            elif emitted >= per_feed * (1 - last_share):
                new_batch = batches - 1
            else:
                new_batch = min(
                    batches - 2, int(emitted * (batches - 1) / (per_feed * (1 - last_share)))
                )
            emitted += sum(1 for c in txn.changes if c.kind == "row")
            if txn.snapshot:
                snapshot = emitted
            if new_batch != batch:
                landing.flush()
                batch = new_batch
            for record in encoder.encode(world, txn):
                data_topic = data_topic or record.topic
                landing.add(batch, record)
            if hasattr(encoder, "heartbeat") and txn.txid % 50 == 0:
                landing.add(batch, encoder.heartbeat(epoch_ms(txn.commit)))
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
    parser.add_argument(
        "--steady", action="store_true", help="keep customers and orders at about --keys rows"
    )
    opts = parser.parse_args(argv)
    summary = generate(
        opts.out,
        opts.events,
        opts.keys,
        opts.batches,
        opts.seed,
        opts.feeds.split(","),
        opts.last_share,
        runtime.log,
        opts.steady,
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
