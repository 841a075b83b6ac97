"""End to end on embedded Spark: the bundled demo feeds through every model, as `make demo`."""

from __future__ import annotations

import json
import os
import random
from collections import Counter
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[3]
DEMO = PROJECT / "python_udfs" / "demo_data" / "landing"


# feed -> (records landed, changes logged, schema changes, filtered, quarantined), worked out
# by hand from the demo files (python_udfs/demo_data/landing)
EXPECTED_HEALTH = {
    "canal_inventory": (4, 4, 1, 0, 0),  # a 2-row insert, an update, a DDL, a delete
    "dataworks_inventory": (6, 4, 0, 1, 0),  # UPDATE_BEFOR + UPDATE_AFTER merged; a heartbeat
    "dtle_inventory": (1, 1, 0, 0, 0),
    "dtle_inventory_ddl": (1, 0, 1, 0, 0),
    "maxwell_inventory": (2, 2, 0, 0, 0),
    "ogg_inventory": (3, 3, 0, 0, 0),  # insert, update, truncate
    "pg_inventory": (8, 4, 0, 2, 1),  # one create delivered twice; two messages; a bad line
    "sqlserver_inventory": (1, 1, 0, 0, 0),  # a Kafka Connect sink file (.json.gz)
    "tencent_inventory": (9, 3, 6, 0, 0),
}


def test_demo_feeds_build_end_to_end(dbt, spark, tmp_path):
    for feed_dir in sorted(DEMO.iterdir()):
        for file in feed_dir.iterdir():
            dbt.land(feed_dir.name, file)
    result = dbt("build")
    s = dbt.schema
    health = {
        r.feed: (
            r.records_landed,
            r.changes_logged,
            r.schema_changes,
            r.heartbeats + r.tombstones + r.transaction_markers + r.messages,
            r.records_quarantined,
        )
        for r in spark.sql(f"select * from {s}.cdc_feed_health").collect()
    }
    assert health == EXPECTED_HEALTH

    # the documented columns are exactly the built ones, in every model
    for node_result in result.result.results:
        node = node_result.node
        if node.resource_type != "model":
            continue
        built = spark.table(f"{s}.{node.alias}").columns
        assert sorted(node.columns) == sorted(built), node.name

    # keys and images read as JSON objects
    row = spark.sql(
        f"select to_json(key) as k, to_json(after) as a from {s}.cdc_change_log "
        f"where feed = 'ogg_inventory' and op = 'c'"
    ).first()
    assert json.loads(row.k) == {"ID": 1001}
    assert json.loads(row.a) == {"ID": 1001, "EMAIL": "sally@example.com"}

    # a second run with nothing new changes nothing
    # the docs site builds, with the catalog of every public model
    from python_udfs.project import run_dbt

    docs_target = tmp_path / "docs"
    code, _ = run_dbt(["docs", "generate", "--target-path", str(docs_target)])
    assert code == 0
    catalog = json.loads((docs_target / "catalog.json").read_text())
    for model in ("cdc_change_log", "cdc_schema_changes", "cdc_quarantine", "cdc_feed_health"):
        assert f"model.changelake.{model}" in catalog["nodes"]

    # (VARIANT values compare by identity in Python: compare the text columns)
    query = f"select * except (key, before, after) from {s}.cdc_change_log"
    before = sorted(spark.sql(query).collect())
    dbt("build")
    assert sorted(spark.sql(query).collect()) == before


# a history drawn at random each run (conftest draws it; the seed is in the test id; rerun a
# failing one with CHANGELAKE_TEST_SEED=<seed>). Fixed generated worlds are built by the
# connector-restart test (test_faults) and the benchmark's smoke test (test_bench).
RANDOM_SEED = int(os.environ["CHANGELAKE_TEST_SEED"])


# when a build compacts the history store: after every run (a small store's default; or
# merging every older base, one base live), at a large store's limits (8 layers, or a fifth
# of the base's rows), or never
COMPACTION = {
    "every run": {},
    "every run, one base": {"changelake_history_max_bases": 1},
    "large store": {"changelake_history_small_rows": 0},
    "never": {
        "changelake_history_small_rows": 0,
        "changelake_history_max_layers": 1000,
        "changelake_history_max_share": 1000,
    },
}
# how cdc_history applies the supersessions of late keys: as literals in its text (up to 100
# keys, the default), or by an anti join of the superseded rows (none as literals)
SUPERSESSIONS = {"literals": {}, "anti join": {"changelake_history_supersession_literals": 0}}
# row groups of the history store far smaller than its 2 MiB, so this small world's files
# hold several each (the store's option, set when the first build creates it)
SMALL_ROW_GROUPS = {"changelake_history_row_group_bytes": 16384}


@pytest.mark.long(3)
@pytest.mark.parametrize(("seed", "batches"), [(RANDOM_SEED, 3)], ids=lambda v: str(v))
def test_generated_world_in_batches_matches_its_expected_state(dbt, spark, tmp_path, seed, batches):
    """Landing batches (late partition files, re-delivered records, malformed ones), a build
    after each, each with a compaction policy drawn from the seed (so the history is compacted
    at random points, and read over delta layers or not) and a way of applying supersessions
    in cdc_history (literals or an anti join): the live rows and version counts of
    every table equal the generator's world model, the quarantine holds exactly the malformed
    records, the typed models agree, the history store's files hold their rows in key order,
    and a full refresh gives the same history, in one base where a read of one key skips most
    row groups."""
    from python_udfs.generator import batch_folders, compare, generate

    summary = generate(tmp_path / "generated", events=4_000, keys=30, batches=batches, seed=seed)
    draw = random.Random(seed)
    for batch in batch_folders(tmp_path / "generated"):
        for feed_dir in sorted(batch.iterdir()):
            for file in sorted(feed_dir.iterdir()):
                dbt.land(feed_dir.name, file)
        policy, reads = draw.choice(sorted(COMPACTION)), draw.choice(sorted(SUPERSESSIONS))
        print(f"seed {seed}: {batch.name} built with compaction {policy}, supersessions {reads}")
        dbt_vars = json.dumps({**COMPACTION[policy], **SUPERSESSIONS[reads], **SMALL_ROW_GROUPS})
        dbt("build", "--exclude", "tag:accounting", "--vars", dbt_vars)
    dbt("test", "--select", "tag:accounting")
    s = dbt.schema
    check_store_in_key_order(spark, s)
    report = compare(spark, s, summary)
    assert [r for r in report if not r["matched"]] == [], f"seed {seed}"
    assert sum(r["rows_expected"] for r in report) > 500

    quarantined = dict(
        spark.sql(f"select feed, count(*) from {s}.cdc_quarantine group by feed").collect()
    )
    assert quarantined == {f: facts["malformed"] for f, facts in summary["feeds"].items()}

    check_typed_models(spark, s, summary)

    query = (
        f"select feed, key_json, row_json, valid_from_position, valid_to_position, is_deleted, "
        f"opening_change_id, closing_change_id from {s}.cdc_history"
    )
    incremental = sorted(spark.sql(query).collect())
    small = json.dumps(SMALL_ROW_GROUPS)
    dbt("build", "--full-refresh", "--exclude", "tag:accounting", "--vars", small)
    assert sorted(spark.sql(query).collect()) == incremental, f"seed {seed}"
    # one base now: a read of one key's rows skips most of its row groups
    rows = check_store_in_key_order(spark, s)
    # a key with closed versions (the first key of cdc_current may have only its open one)
    key = spark.sql(
        f"select min(key_json) from {s}.int_history_versions where part = 'closed'"
    ).first()[0]
    one_key = spark.sql(
        f"select * from {s}.int_history_versions where key_json = '{key}' and part = 'closed'"
    )
    assert one_key.count() > 0
    scanned = scanned_rows(one_key)
    assert 0 < scanned < rows / 4, (scanned, rows)


def check_store_in_key_order(spark, s) -> int:
    """Every file of the history store holds its rows in key order (table, key, version), in
    more than one row group where it is large, and each partition is one file (the writes
    spread their rows by partition: a small store's partition goes to one task, where each
    task of the fold before the write would write a file of every partition); returns the
    store's row count."""
    import pyarrow.parquet as pq

    location = (
        spark.sql(f"describe formatted {s}.int_history_versions")
        .where("col_name = 'Location'")
        .first()
        .data_type
    )
    # the table id, the key, the version (macros/history/, changelake_layer_order)
    order = [
        *("feed", "source_name", "database_name", "schema_name", "table_name"),
        *("key_json", "version_number"),
    ]
    files = sorted(Path(location.removeprefix("file:")).glob("batch_id=*/part=*/*.parquet"))
    assert files
    per_partition = Counter(file.parent for file in files)
    assert set(per_partition.values()) == {1}, per_partition
    rows, groups = 0, []
    for file in files:
        parquet = pq.ParquetFile(file)
        columns = parquet.read(columns=order).to_pylist()
        keys = [tuple((c[name] is not None, c[name]) for name in order) for c in columns]
        assert keys == sorted(keys), file
        rows += len(keys)
        groups.append(parquet.metadata.num_row_groups)
    assert max(groups) > 1, groups
    return rows


def scanned_rows(frame) -> int:
    """Rows the parquet scans of a query read (before its filters), from running it."""
    frame.collect()
    plan = frame._jdf.queryExecution().executedPlan()
    leaves = plan.collectLeaves()
    total = 0
    for i in range(leaves.size()):
        leaf = leaves.apply(i)
        if leaf.nodeName().startswith("Scan parquet"):
            total += leaf.metrics().apply("numOutputRows").value()
    return total


TRACKED = ("first_name", "last_name", "is_active", "loyalty_tier")


def check_typed_models(spark, s, summary):
    """The typed current rows are the expected rows, typed; the typed history's versions are
    cdc_history's versions merged where no tracked column changed (reference written here)."""
    expected = summary["feeds"]["pg_inventory"]["tables"]["inventory.public.customers"]["rows"]
    current = {r.key_json: r for r in spark.table(f"{s}.typed_pg_customers_current").collect()}
    assert set(current) == set(expected)
    for key, row_json in expected.items():
        row = json.loads(row_json)
        typed = current[key]
        # tracked columns (and those that never change) are the latest values; the untracked
        # e-mail is the one of the version's first change
        assert (typed.id, typed.first_name, typed.last_name) == (
            row["id"],
            row["first_name"],
            row["last_name"],
        )
        assert typed.is_active is row["is_active"]
        assert typed.created_at.isoformat() == row["created_at"]  # timestamp_ntz
        assert typed.loyalty_tier == row.get("loyalty_tier")

    versions = spark.sql(
        f"select key_json, row_json, valid_from_position, valid_to_position, is_deleted "
        f"from {s}.cdc_history where feed = 'pg_inventory' and table_name = 'customers' "
        f"order by key_json, valid_from_position"
    ).collect()
    merged: list[tuple] = []
    previous = None
    for v in versions:
        row = json.loads(v.row_json)
        tracked = tuple(row.get(c) for c in TRACKED)
        continues = (
            previous is not None
            and previous[0].key_json == v.key_json
            and not previous[0].is_deleted
            and previous[0].valid_to_position == v.valid_from_position
            and previous[1] == tracked
        )
        if continues:
            start = merged[-1]
            merged[-1] = (start[0], start[1], v.valid_to_position, v.is_deleted)
        else:
            merged.append((v.key_json, v.valid_from_position, v.valid_to_position, v.is_deleted))
        previous = (v, tracked)
    typed = sorted(
        (r.key_json, r.valid_from_position, r.valid_to_position, r.is_deleted)
        for r in spark.table(f"{s}.typed_pg_customers_history").collect()
    )
    assert typed == sorted(merged)
    assert len(typed) < len(versions)  # e-mail-only changes opened no typed version

    lines = summary["feeds"]["tencent_inventory"]["tables"]["inventory.order_lines"]["rows"]
    typed_lines = spark.table(f"{s}.typed_tencent_order_lines_current").collect()
    assert len(typed_lines) == len(lines)
    assert {
        (r.order_number, r.line_number, r.quantity, str(r.unit_price)) for r in typed_lines
    } == {
        (int(v["order_number"]), int(v["line_number"]), int(v["quantity"]), v["unit_price"])
        for v in map(json.loads, lines.values())
    }
