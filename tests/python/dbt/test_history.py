"""SCD-2 history and current state over several landing batches, with real dbt runs.

One PostgreSQL table (Debezium, schema-less) receives changes out of order and late, across
batches: the history must equal the hand-written expectation after each batch, a run with
nothing new must change nothing, and a full refresh must give exactly what the runs gave.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import tables_scanned

TOPIC = "pg.public.items"


# the typed current models: views naming the history store's layers, as cdc_current does
TYPED_CURRENT = ["typed_pg_customers_current", "typed_tencent_order_lines_current"]


def message(lsn, op, key, before=None, after=None, offset=None, headers=None, ts_ms=None):
    """A kcat record of a Debezium PostgreSQL change at ``lsn`` (committed at ``ts_ms``)."""
    value = {
        "before": before,
        "after": after,
        "op": op,
        "ts_ms": 1,
        "source": {
            "connector": "postgresql",
            "name": "pg",
            "db": "shop",
            "schema": "public",
            "table": "items",
            "lsn": lsn,
            "ts_ms": 1_700_000_000_000 + lsn if ts_ms is None else ts_ms,
            "txId": lsn,
        },
    }
    if op == "t":
        value.pop("before")
        value.pop("after")
    return {
        "topic": TOPIC,
        "partition": 0,
        "offset": lsn if offset is None else offset,
        "tstype": "create",
        "ts": 0,
        "broker": 0,
        "headers": headers or [],
        "key": None if key is None else json.dumps({"id": key}),
        "payload": json.dumps(value),
    }


def land(dbt, tmp_path, name, messages):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(m) for m in messages) + "\n")
    dbt.land("pg_inventory", path)


def history(spark, schema):
    return [
        (
            r.key_json,
            r.version_number,
            json.loads(r.row_json),
            r.valid_from_position,
            r.valid_to_position,
            r.is_current,
            r.is_deleted,
            r.opened_from_key_json,
            r.closed_into_key_json,
        )
        for r in spark.sql(
            f"select * from {schema}.cdc_history where feed = 'pg_inventory' "
            f"order by key_json, version_number"
        ).collect()
    ]


def current(spark, schema):
    return spark.sql(
        f"select key_json, row_json from {schema}.cdc_current where feed = 'pg_inventory' "
        f"order by key_json"
    ).collect()


def partitions(spark, schema) -> set[str]:
    """The history store's partitions on disk, as 'batch_id/part'."""
    return {
        "/".join(part.split("=", 1)[1] for part in r[0].split("/"))
        for r in spark.sql(f"show partitions {schema}.int_history_versions").collect()
    }


def layers_named_by(spark, schema, view) -> set[str]:
    """The history store's partitions a view names, as 'batch_id/part': its table property
    `changelake.reads`, set when it was built (its `changelake.reads_next`, set for the moment
    of an `alter view`, is empty once the build is through)."""
    properties = dict(spark.sql(f"show tblproperties {schema}.{view}").collect())
    assert properties.get("changelake.reads_next", "") == "", properties
    return set(properties["changelake.reads"].split())


def table_files(spark, table):
    """The data files of a table, by name."""
    location = spark.sql(f"describe formatted {table}").where("col_name = 'Location'").first()
    folder = Path(location.data_type.removeprefix("file:"))
    return sorted(path.name for path in folder.rglob("*.parquet"))


def row(key, run):
    """A row image of ``key`` as of ``run``."""
    return {"id": key, "v": f"{key}-{run}", "doc": "d"}


def p(lsn):
    return f"{lsn:020d}"


@pytest.mark.long(2)
def test_history_over_batches_equals_expectation_and_full_refresh(dbt, spark, tmp_path):
    s = dbt.schema
    # ---- batch 1: arrives out of order ------------------------------------------------------
    land(
        dbt,
        tmp_path,
        "b1.jsonl",
        [
            message(30, "u", 1, {"id": 1}, {"id": 1, "v": "c", "doc": "big"}),
            message(10, "c", 1, None, {"id": 1, "v": "a", "doc": "big"}),
            message(20, "c", 2, None, {"id": 2, "v": "x", "doc": "d"}),
            message(40, "d", 2, {"id": 2}),
            # TOAST: doc not sent, carried forward
            message(
                50, "u", 1, {"id": 1}, {"id": 1, "v": "e", "doc": "__debezium_unavailable_value"}
            ),
            # an update that changes nothing
            message(55, "u", 1, {"id": 1}, {"id": 1, "v": "e", "doc": "big"}),
        ],
    )
    dbt("build")
    assert history(spark, s) == [
        ('{"id":1}', 1, {"id": 1, "v": "a", "doc": "big"}, p(10), p(30), False, False, None, None),
        ('{"id":1}', 2, {"id": 1, "v": "c", "doc": "big"}, p(30), p(50), False, False, None, None),
        ('{"id":1}', 3, {"id": 1, "v": "e", "doc": "big"}, p(50), None, True, False, None, None),
        ('{"id":2}', 1, {"id": 2, "v": "x", "doc": "d"}, p(20), p(40), False, True, None, None),
    ]

    # ---- batch 2: a late change, a re-insert after the delete, a truncate, a PK change ------
    land(
        dbt,
        tmp_path,
        "b2.jsonl",
        [
            message(
                25, "u", 1, {"id": 1}, {"id": 1, "v": "b", "doc": "big"}
            ),  # late: between 10 and 30
            message(60, "c", 2, None, {"id": 2, "v": "y", "doc": "d"}),  # re-insert after a gap
            message(30, "u", 1, {"id": 1}, {"id": 1, "v": "c", "doc": "big"}),  # delivered again
            message(70, "t", None),  # truncate: closes 1 and 2
            message(80, "c", 3, None, {"id": 3, "v": "z", "doc": "q"}),
            # PK change 3 -> 4: delete with the new key, create with the old one
            message(
                90,
                "d",
                3,
                {"id": 3},
                None,
                offset=90,
                headers=["__debezium.newkey", json.dumps({"id": 4})],
            ),
            message(
                90,
                "c",
                4,
                None,
                {"id": 4, "v": "z", "doc": "q"},
                offset=91,
                headers=["__debezium.oldkey", json.dumps({"id": 3})],
            ),
        ],
    )
    # decoded first, alone: batch 2's decoded batch is committed, not consumed by the change log
    dbt("run", "--select", "decoded_pg_inventory")
    # this run's start compacts every ledger and merges every table's segments where one batch
    # is consumed (due at once here): batch 1's, not batch 2's decoded batch, which the change
    # log has not read yet (merged, the change log would not find it)
    dbt("build", "--vars", "{changelake_ledger_max_tail: 1, changelake_segments_max_tail: 1}")
    expected = [
        ('{"id":1}', 1, {"id": 1, "v": "a", "doc": "big"}, p(10), p(25), False, False, None, None),
        ('{"id":1}', 2, {"id": 1, "v": "b", "doc": "big"}, p(25), p(30), False, False, None, None),
        ('{"id":1}', 3, {"id": 1, "v": "c", "doc": "big"}, p(30), p(50), False, False, None, None),
        ('{"id":1}', 4, {"id": 1, "v": "e", "doc": "big"}, p(50), p(70), False, True, None, None),
        ('{"id":2}', 1, {"id": 2, "v": "x", "doc": "d"}, p(20), p(40), False, True, None, None),
        ('{"id":2}', 2, {"id": 2, "v": "y", "doc": "d"}, p(60), p(70), False, True, None, None),
        (
            '{"id":3}',
            1,
            {"id": 3, "v": "z", "doc": "q"},
            p(80),
            p(90),
            False,
            True,
            None,
            '{"id":4}',
        ),
        (
            '{"id":4}',
            1,
            {"id": 4, "v": "z", "doc": "q"},
            p(90),
            None,
            True,
            False,
            '{"id":3}',
            None,
        ),
    ]
    assert history(spark, s) == expected
    current = spark.sql(f"select key_json from {s}.cdc_current where feed = 'pg_inventory'")
    assert [r.key_json for r in current.collect()] == ['{"id":4}']
    for table in ("decoded_pg_inventory", "int_changes_unioned"):
        # batch 1 merged into one segment, batch 2 in its own
        segments = [r[0] for r in spark.sql(f"show partitions {s}.{table}").collect()]
        assert len(segments) == 2, segments
        assert sum(segment.startswith("segment=merged-") for segment in segments) == 1, segments

    # ---- batch 3: nothing new, over ledgers compacted once and ledgers of the earlier layout --
    ledgers = {
        r.tableName for r in spark.sql(f"show tables in {s} like 'changelake_ledger__*'").collect()
    }
    assert "changelake_ledger__int_history_versions" in ledgers
    for ledger in ledgers:
        # batch 1's commits compacted into one file of one segment, batch 2's in the tail
        segments = {r[0] for r in spark.sql(f"show partitions {s}.{ledger}").collect()}
        compacted = segments - {"segment=tail"}
        assert len(compacted) <= 1, segments
        assert all(segment.startswith("segment=compacted-") for segment in compacted), segments
        if ledger.endswith("int_history_versions"):
            assert len(compacted) == 1, segments
    # the earlier layout: one unpartitioned table per model, named changelake_batches__<model>
    for model in ("int_changes_unioned", "int_history_versions"):
        spark.sql(
            f"create table {s}.changelake_batches__{model} using parquet as "
            f"select kind, batch_id, committed_at, rows_written from {s}.changelake_ledger__{model}"
        )
        spark.sql(f"drop table {s}.changelake_ledger__{model}")
    tables = ("decoded_pg_inventory", "int_changes_unioned")
    files = {table: table_files(spark, f"{s}.{table}") for table in tables}
    idle = dbt("build")
    assert history(spark, s) == expected
    # nothing new: not even an empty file is added to a table
    assert {table: table_files(spark, f"{s}.{table}") for table in tables} == files
    # and each incremental model ran its hooks alone (no temporary view, describe or insert)
    messages = {
        result.node.name: result.message
        for result in idle.result.results
        if result.node.resource_type == "model" and result.node.config.materialized == "incremental"
    }
    assert len(messages) >= 3, messages
    assert set(messages.values()) == {"nothing new"}, messages
    assert not spark.sql(f"show tables in {s} like 'changelake_batches__*'").collect()
    migrated = spark.sql(f"show partitions {s}.changelake_ledger__int_history_versions")
    assert "segment=earlier" in [r[0] for r in migrated.collect()]

    # ---- batch 4: over tables of the earlier layout (no segment column), one decoded batch of
    # which the change log has not consumed yet
    update = message(100, "u", 4, {"id": 4}, {"id": 4, "v": "w", "doc": "q"})
    land(dbt, tmp_path, "b4.jsonl", [update])
    dbt("run", "--select", "decoded_pg_inventory")
    for table in tables:
        spark.sql(
            f"create table {s}.{table}__earlier using parquet as "
            f"select * except (segment) from {s}.{table}"
        )
        spark.sql(f"drop table {s}.{table}")
        spark.sql(f"alter table {s}.{table}__earlier rename to {s}.{table}")
    dbt("build")
    expected = [
        *expected[:-1],
        (
            '{"id":4}',
            1,
            {"id": 4, "v": "z", "doc": "q"},
            p(90),
            p(100),
            False,
            False,
            '{"id":3}',
            None,
        ),
        ('{"id":4}', 2, {"id": 4, "v": "w", "doc": "q"}, p(100), None, True, False, None, None),
    ]
    assert history(spark, s) == expected
    # no key was late, and the plan asked no query to know it: the history's query, as it ran,
    # read the change log's pending rows once and none of its past (the re-fold of the late
    # keys, none, dropped unread)
    compiled = dbt.target_path / "compiled/changelake/models/intermediate/int_history_versions.sql"
    assert "broadcast(refold_keys)" in compiled.read_text()
    assert tables_scanned(spark, compiled)["int_changes_unioned"] == 1
    for table in tables:
        # consumed batches moved into segment 'earlier'; the pending one kept its own, then
        # the change log's batch of this build
        segments = [r[0] for r in spark.sql(f"show partitions {s}.{table}").collect()]
        assert len(segments) == 2, segments
        assert "segment=earlier" in segments, segments
    assert not spark.sql(f"show tables in {s} like '*segmented'").collect()

    # ---- the YAML unit tests (development-time, off in scheduled builds): the fold's three,
    # the schema changes', the quarantine's and the feed health's ----------------------------
    result = dbt("test", "--select", "test_type:unit", "--vars", "{changelake_unit_tests: true}")
    unit_tests = [r for r in result.result.results if r.node.resource_type == "unit_test"]
    assert [str(r.status) for r in unit_tests] == ["pass"] * 6

    # ---- rebuilt from scratch: exactly what the runs gave ---------------------------------
    dbt("build", "--full-refresh")
    assert history(spark, s) == expected


@pytest.mark.long(2)
def test_compaction_merges_older_bases_and_the_history_equals_a_full_refresh(dbt, spark, tmp_path):
    """Seven runs: the first build's layer is a base at once, then a compaction every second
    run (two delta layers make it due): each new base takes in the older bases with few
    versions (retired in the ledger, their partitions dropped), so fewer bases stay live than
    were committed; late changes re-fold keys whose closed versions sit in merged bases and in
    a base that stays, and a truncate closes every key. Then `dbt test` passes on every row,
    and a full refresh gives the same history. (Runs, not builds: the builds' scoped tests are
    covered elsewhere, and this keeps the test short.)"""
    s = dbt.schema
    every_second = (
        "{changelake_history_max_layers: 2, changelake_history_max_share: 1000, "
        "changelake_history_small_rows: 0}"
    )

    for run in range(1, 8):
        batch = [
            message(100 * run, "c" if run == 1 else "u", 1, None, row(1, run)),
            message(100 * run + 10, "c" if run == 1 else "u", 2, None, row(2, run)),
        ]
        if run == 4:
            batch.append(message(100 * run + 50, "t", None))  # closes 1 and 2
        if run == 5:
            # late: between runs 1 and 2, and before run 4's truncate (key 1's closed
            # versions are in the base of run 3's compaction)
            batch.append(message(150, "u", 1, None, row(1, "late")))
        if run == 6:
            batch.append(message(100 * run + 20, "d", 2, {"id": 2}))
        if run == 7:
            # late: between run 6's update and its delete (key 2's closed versions are in the
            # base of run 5 and in run 6's layer)
            batch.append(message(615, "u", 2, None, row(2, "late")))
        land(dbt, tmp_path, f"b{run}.jsonl", batch)
        if run == 1:
            # the first build folds every key: its layer is a base, nothing to compact
            dbt("run", "--vars", every_second)
            kinds = spark.sql(
                f"select kind, count(*) from {s}.changelake_ledger__int_history_versions "
                "where kind != 'consumed' group by kind"
            ).collect()
            assert dict(kinds) == {"base": 1}
            continue
        if run == 5:
            # a view with no record of what it reads (built by an older version, or killed
            # between its create and its record) keeps every partition: the store's compaction
            # drops none, and the views built again record theirs and the run's end drops the rest
            spark.sql(f"alter view {s}.cdc_current unset tblproperties ('changelake.reads')")
            on_disk = partitions(spark, s)
            dbt("run", "--select", "+int_history_versions", "--vars", every_second)
            assert on_disk <= partitions(spark, s)
            dbt("run", "--select", "cdc_history", "cdc_current", *TYPED_CURRENT)
            assert layers_named_by(spark, s, "cdc_current")
            assert not on_disk <= partitions(spark, s), "the compaction replaced nothing"
            continue
        if run != 7:
            dbt("run", "--vars", every_second)
            continue
        # the store alone: its compaction replaces the layers the views name, and they keep
        # showing run 6 whole until they are built again (nothing they name is dropped)
        before = history(spark, s), current(spark, s)
        # the views on the store: cdc_history, cdc_current and the typed current models
        views = ["cdc_history", "cdc_current", *TYPED_CURRENT]
        named = set().union(*(layers_named_by(spark, s, v) for v in views)) & partitions(spark, s)
        dbt("run", "--select", "+int_history_versions", "--vars", every_second)
        assert (history(spark, s), current(spark, s)) == before
        assert named
        assert named <= partitions(spark, s), named
        # built again, the views name the new base; the run's end drops what they named alone
        dbt("run", "--select", *views, "--vars", every_second)
        assert (history(spark, s), current(spark, s)) != before
        renamed = set().union(*(layers_named_by(spark, s, v) for v in views))
        assert named - renamed, "the compaction replaced no layer the views named"
        assert not (named - renamed) & partitions(spark, s)

    ledger = spark.sql(
        f"select kind, batch_id from {s}.changelake_ledger__int_history_versions "
        "where kind in ('base', 'retired')"
    ).collect()
    bases = {r.batch_id for r in ledger if r.kind == "base"}
    retired = {r.batch_id for r in ledger if r.kind == "retired"}
    assert len(bases) == 4, ledger  # run 1's full fold; runs 3, 5 and 7 compacted
    assert retired, ledger  # some bases merged into newer ones
    assert retired < bases, ledger
    on_disk = {spec.split("/")[0] for spec in partitions(spark, s)}
    assert {b for b in on_disk if b in bases} == bases - retired
    # run 7 compacted: cdc_current reads the partitions of its base's frontier by name, with no
    # read of the ledger and no ranking of the rows (no layer came after the base)
    plan = spark.sql(f"select * from {s}.cdc_current")._jdf.queryExecution().executedPlan()
    assert "changelake_ledger" not in plan.toString()
    assert "Window" not in plan.toString()
    newest_base = spark.sql(
        f"select max_by(batch_id, committed_at) from {s}.changelake_ledger__int_history_versions "
        "where kind = 'base'"
    ).first()[0]
    assert layers_named_by(spark, s, "cdc_current") == {f"{newest_base}/frontier"}

    incremental = history(spark, s)
    key_1 = [v for v in incremental if v[0] == '{"id":1}']
    # the late change opened a version between runs 1 and 2; the truncate closed key 1
    assert [v[2]["v"] for v in key_1[:3]] == ["1-1", "1-late", "1-2"]
    assert [v[6] for v in key_1] == [False] * 4 + [True] + [False] * 3
    # the late update of key 2 opened a version between its update and its delete in run 6
    key_2 = [v[2].get("v") for v in incremental if v[0] == '{"id":2}']
    assert key_2[-3:] == ["2-6", "2-late", "2-7"], key_2
    dbt("test")
    dbt("run", "--full-refresh")
    assert history(spark, s) == incremental


def live_bases(spark, schema) -> list[str]:
    """The history store's bases its ledger has not retired, oldest first."""
    return [
        r.batch_id
        for r in spark.sql(
            f"select batch_id from {schema}.changelake_ledger__int_history_versions as ledger "
            "where kind = 'base' and batch_id not in (select batch_id from "
            f"{schema}.changelake_ledger__int_history_versions where kind = 'retired') "
            "group by batch_id order by min(committed_at)"
        ).collect()
    ]


@pytest.mark.long(1)
def test_compaction_keeps_at_most_max_bases_live(dbt, spark, tmp_path):
    """Bases of falling size, each with more versions than the next, which the merge rule
    alone keeps (a base is merged while it holds no more versions than those after it): with
    `changelake_history_max_bases` 2, the third compaction merges the second base too, though
    it holds more versions than the third run's layer, and leaves the first. A late change
    then re-folds a key whose closed versions sit in the base that stayed. Two bases are live
    after the second and third runs and at most two after the late one, when every retired
    base's partitions are gone from disk; the history equals a full refresh's, and `dbt test`
    passes on every row."""
    s = dbt.schema
    capped = (
        "{changelake_history_max_layers: 1, changelake_history_max_share: 1000, "
        "changelake_history_small_rows: 0, changelake_history_max_bases: 2}"
    )

    def updates(key, first_lsn, count):
        # a create, then `count` updates: `count` closed versions and an open one
        return [message(first_lsn, "c", key, None, row(key, 0))] + [
            message(first_lsn + 2 * n, "u", key, None, row(key, n)) for n in range(1, count + 1)
        ]

    # closed versions per run: 20 (the first build's base), 8, 3
    for run, (key, count) in enumerate([(1, 20), (2, 8), (3, 3)], 1):
        land(dbt, tmp_path, f"b{run}.jsonl", updates(key, 100 * run, count))
        dbt("run", "--select", "+int_history_versions", "--vars", capped)
        bases = live_bases(spark, s)
        if run == 2:
            # the first base (20 versions) holds more than the layer (8): both stay
            assert len(bases) == 2, bases
            second = bases[1]
    # the merge rule alone leaves the second base (8 versions against the layer's 3): three
    # bases would stay; the cap merged it into the third
    assert len(bases) == 2, bases
    assert second not in bases
    retired = {
        r.batch_id
        for r in spark.sql(
            f"select batch_id from {s}.changelake_ledger__int_history_versions "
            "where kind = 'retired'"
        ).collect()
    }
    assert second in retired

    # late: between key 1's first two versions, which sit in the first base
    land(dbt, tmp_path, "b4.jsonl", [message(101, "u", 1, None, row(1, "late"))])
    dbt("build", "--vars", capped)
    assert len(live_bases(spark, s)) <= 2
    on_disk = {spec.split("/")[0] for spec in partitions(spark, s) if "-base" in spec}
    assert on_disk <= set(live_bases(spark, s)), on_disk
    incremental = history(spark, s)
    key_1 = [v[2]["v"] for v in incremental if v[0] == '{"id":1}']
    assert key_1[:3] == ["1-0", "1-late", "1-1"], key_1
    assert len(key_1) == 22
    dbt("test")
    dbt("run", "--full-refresh")
    assert history(spark, s) == incremental


def test_a_store_with_few_live_keys_is_compacted_every_run_however_old(dbt, spark, tmp_path):
    """Whether a run compacts by size goes by the current state, not the store's age: two keys
    with sixty versions between them, and `small_rows` 10. Each run that changes them leaves
    one base whose frontier `cdc_current` reads alone, though the store holds far more than 10
    rows; a run that makes the current state larger than 10 rows leaves its delta layer, read
    beside the base's frontier."""
    s = dbt.schema
    policy = (
        "{changelake_history_max_layers: 1000, changelake_history_max_share: 1000, "
        "changelake_history_small_rows: 10}"
    )

    def newest_base():
        return spark.sql(
            f"select max_by(batch_id, committed_at) "
            f"from {s}.changelake_ledger__int_history_versions where kind = 'base'"
        ).first()[0]

    # run 1: keys 1 and 2, thirty versions each
    land(
        dbt,
        tmp_path,
        "b1.jsonl",
        [
            message(1000 + 10 * n + key, "c" if n == 0 else "u", key, None, row(key, n))
            for n in range(30)
            for key in (1, 2)
        ],
    )
    dbt("run", "--vars", policy)
    stored = spark.sql(f"select count(*) from {s}.int_history_versions").first()[0]
    assert stored >= 60, stored
    bases = {newest_base()}
    for run in (2, 3):
        land(
            dbt,
            tmp_path,
            f"b{run}.jsonl",
            [message(1000 * run + key, "u", key, None, row(key, f"r{run}")) for key in (1, 2)],
        )
        dbt("run", "--vars", policy)
        base = newest_base()
        assert base not in bases, f"run {run} wrote a delta layer and did not compact"
        bases.add(base)
        assert layers_named_by(spark, s, "cdc_current") == {f"{base}/frontier"}
    # run 4: twelve new keys, a current state of fourteen rows: its layer stays a delta
    land(
        dbt,
        tmp_path,
        "b4.jsonl",
        [message(4000 + key, "c", key, None, row(key, 4)) for key in range(3, 15)],
    )
    dbt("run", "--vars", policy)
    assert newest_base() == base
    named = layers_named_by(spark, s, "cdc_current")
    (delta,) = {name.split("/")[0] for name in named} - {base}
    # the delta's ended keys too: a key it ended hides the base's open row
    assert named == {f"{base}/frontier", f"{delta}/frontier", f"{delta}/ended"}, named
    got = {json.loads(r.key_json)["id"]: json.loads(r.row_json)["v"] for r in current(spark, s)}
    assert got == {1: "1-r3", 2: "2-r3", **{k: f"{k}-4" for k in range(3, 15)}}
    assert len([v for v in history(spark, s) if v[0] == '{"id":1}']) == 32


@pytest.mark.long(3)
def test_ledgers_and_segments_due_in_one_run_are_spread_over_the_runs_after_it(
    dbt, spark, tmp_path
):
    """A new project's ledgers and segmented tables all come due in the same run (here, with
    limits of 2, the third). That run does its share, the accruing tables over the limit and
    one more (five tables: four), most overdue first; the next run does the rest, and no
    ledger's tail ever holds more than twice the limit. The history stays what it should be."""
    s = dbt.schema
    limits = "{changelake_ledger_max_tail: 2, changelake_segments_max_tail: 2}"
    ledgers = [
        f"changelake_ledger__{model}"
        for model in ("decoded_pg_inventory", "int_changes_unioned", "int_history_versions")
    ]
    tables = [*ledgers, "decoded_pg_inventory", "int_changes_unioned"]

    def upkept():
        # (table, partition) of every compacted ledger and merged segment there now
        return {
            (table, r[0])
            for table in tables
            for r in spark.sql(f"show partitions {s}.{table}").collect()
            if r[0].startswith(("segment=compacted-", "segment=merged-"))
        }

    seen: set = set()
    done = []
    for run in range(1, 7):
        land(
            dbt,
            tmp_path,
            f"b{run}.jsonl",
            [message(10 * run, "c" if run == 1 else "u", 1, None, row(1, run))],
        )
        dbt("run", "--vars", limits)
        now = upkept()
        done.append({table for table, _ in now - seen})
        seen |= now
        for ledger in ledgers:
            tail = spark.sql(
                f"select count(distinct committed_at) from {s}.{ledger} where segment = 'tail'"
            ).first()[0]
            assert tail <= 4, (run, ledger, tail)
    assert done[:2] == [set(), set()], done
    # run 3: five due, four done; run 4: the fifth, and the ones due again since
    assert len(done[2]) == 4, done
    assert set(tables) - done[2] <= done[3], done
    assert set().union(*done[4:]) == set(tables), done
    got = [(r.key_json, json.loads(r.row_json)) for r in current(spark, s)]
    assert got == [('{"id":1}', row(1, 6))]
    assert len(history(spark, s)) == 6


@pytest.mark.long(2)
def test_cdc_current_takes_each_key_from_the_newest_layer_holding_it(dbt, spark, tmp_path):
    """Four runs and no compaction: the base of the first build and three delta layers, where
    keys change in several layers, one is deleted in one and inserted again in a later one,
    and one stays in the base alone. After each run `cdc_current` holds each live key once,
    from the newest layer holding it, and agrees with the open versions of `cdc_history`; it
    reads the frontier rows in one scan with the deltas' keys broadcast to it: no window, no
    exchange of the rows. The runs of the store name the layers they read and plan the fold once."""
    s = dbt.schema
    no_compaction = (
        "{changelake_history_max_layers: 100, changelake_history_max_share: 1000, "
        "changelake_history_small_rows: 0}"
    )

    runs = [
        # run 1 (the base): keys 1-4
        [message(100 + k, "c", k, None, row(k, 1)) for k in (1, 2, 3, 4)],
        # run 2: 1 and 2 change, 3 is deleted
        [
            message(201, "u", 1, None, row(1, 2)),
            message(202, "u", 2, None, row(2, 2)),
            message(203, "d", 3, {"id": 3}),
        ],
        # run 3: 1 changes again, 3 is inserted again
        [message(301, "u", 1, None, row(1, 3)), message(303, "c", 3, None, row(3, 3))],
        # run 4: 2 is deleted, 1 changes again
        [message(401, "u", 1, None, row(1, 4)), message(402, "d", 2, {"id": 2})],
    ]
    expected = [
        {1: 1, 2: 1, 3: 1, 4: 1},
        {1: 2, 2: 2, 4: 1},
        {1: 3, 2: 2, 3: 3, 4: 1},
        {1: 4, 3: 3, 4: 1},
    ]
    for number, (batch, want) in enumerate(zip(runs, expected, strict=True), 1):
        land(dbt, tmp_path, f"b{number}.jsonl", batch)
        dbt("run", "--vars", no_compaction)
        got = {json.loads(r.key_json)["id"]: json.loads(r.row_json)["v"] for r in current(spark, s)}
        assert got == {k: f"{k}-{run}" for k, run in want.items()}, number
        open_versions = [(v[0], v[2]["v"]) for v in history(spark, s) if v[5]]
        assert open_versions == [
            (r.key_json, json.loads(r.row_json)["v"]) for r in current(spark, s)
        ]
        # a key whose last version a delete closed is kept apart from the open ones, which
        # are all that a read of cdc_current scans
        parts = spark.sql(
            f"select part, is_current, count(*) from {s}.int_history_versions "
            f"where part in ('frontier', 'ended') group by part, is_current"
        ).collect()
        assert {(r[0], r[1]) for r in parts} <= {("frontier", True), ("ended", False)}, parts
        ended = spark.sql(
            f"select key_json from {s}.int_history_versions where part = 'ended' order by 1"
        ).collect()
        assert [json.loads(r[0])["id"] for r in ended] == {2: [3], 3: [3], 4: [2, 3]}.get(
            number, []
        ), number
    kinds = spark.sql(
        f"select kind, count(*) from {s}.changelake_ledger__int_history_versions "
        "where kind != 'consumed' group by kind"
    ).collect()
    assert dict(kinds) == {"base": 1, "batch": 3}
    # the last run's queries (an incremental one) name the store's live layers, read when the
    # run was compiled: no query of the ledger is left in them
    compiled = dbt.target_path / "compiled" / "changelake" / "models" / "intermediate"
    sql = (compiled / "int_history_versions.sql").read_text()
    assert "stored.part in ('frontier', 'ended')" in sql
    assert "stored.batch_id = '" in sql
    assert "changelake_ledger" not in sql
    # and it writes every part of its layer from one pass over the fold: the fold's UDF is
    # planned once, not once per part
    run_plan = spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
    assert run_plan.count("EvalPython") == 1, run_plan
    plan = spark.sql(f"select * from {s}.cdc_current")._jdf.queryExecution().executedPlan()
    text = plan.toString()
    assert "Window" not in text
    assert "BroadcastHashJoin" in text, text
    assert "LeftAnti" in text, text
    assert "hashpartitioning" not in text, text


@pytest.mark.long(3)
def test_cdc_history_applies_supersessions_as_literals_or_by_an_anti_join(dbt, spark, tmp_path):
    """A late change re-folds key 1, whose closed versions sit in the first build's base: its
    superseded row voids them. The base holds many closed versions, so the compaction two runs
    later keeps it and carries the superseded row into its new base. After each run
    `cdc_history` gives the expected versions: with the supersession written into its text as a
    literal (by default), where right after the compaction it is one scan of the store and
    nothing is joined; and with no literal (`changelake_history_supersession_literals: 0`),
    where it anti-joins the superseded rows. A full refresh gives the same history."""
    s = dbt.schema
    every_second = (
        "{changelake_history_max_layers: 2, changelake_history_max_share: 1000, "
        "changelake_history_small_rows: 0}"
    )
    without_literals = every_second[:-1] + ", changelake_history_supersession_literals: 0}"

    def row(key, label):
        return {"id": key, "v": f"{key}-{label}", "doc": "d"}

    # run 1 (the base): key 1 opened and updated twice; keys 2 and 3 updated ten times each,
    # so the base's closed rows outnumber what the later layers write
    first = [
        message(100, "c", 1, None, row(1, 100)),
        message(110, "u", 1, None, row(1, 110)),
        message(120, "u", 1, None, row(1, 120)),
    ]
    for key in (2, 3):
        first += [
            message(200 * key + i, "c" if i == 0 else "u", key, None, row(key, i))
            for i in range(11)
        ]
    runs = [
        first,
        # run 2: late, between key 1's updates at 110 and 120
        [message(115, "u", 1, None, row(1, 115)), message(900, "c", 4, None, row(4, 900))],
        # run 3: a new key; two layers since the base: compacted
        [message(910, "c", 5, None, row(5, 910))],
    ]
    key_1 = [
        ("1-100", p(100), p(110)),
        ("1-110", p(110), p(115)),
        ("1-115", p(115), p(120)),
        ("1-120", p(120), None),
    ]

    def key_1_versions():
        versions = [v for v in history(spark, s) if v[0] == '{"id":1}']
        return [(v[2]["v"], v[3], v[4]) for v in versions]

    def plan(view):
        return (
            spark.sql(f"select * from {s}.{view}")._jdf.queryExecution().executedPlan().toString()
        )

    for number, batch in enumerate(runs, 1):
        land(dbt, tmp_path, f"b{number}.jsonl", batch)
        dbt("run", "--vars", every_second)
        if number == 1:
            assert key_1_versions() == [
                ("1-100", p(100), p(110)),
                ("1-110", p(110), p(120)),
                ("1-120", p(120), None),
            ]
            continue
        text = spark.sql(f"show create table {s}.cdc_history").first()[0]
        assert "layer.committed_at < timestamp_micros(" in text, number
        if number == 3:
            # right after the compaction: one scan, the supersession a literal, no join
            assert "Join" not in plan("cdc_history"), plan("cdc_history")
            assert plan("cdc_history").count("FileScan") == 1, plan("cdc_history")
        assert key_1_versions() == key_1, number
        everything = history(spark, s)
        # (run 2 has a delta layer: its frontier is read with an anti join either way)
        anti_joins = plan("cdc_history").count("LeftAnti")
        dbt("run", "--select", "cdc_history", "--vars", without_literals)
        assert (
            "layer.committed_at < timestamp_micros("
            not in spark.sql(f"show create table {s}.cdc_history").first()[0]
        )
        assert plan("cdc_history").count("LeftAnti") == anti_joins + 1, number
        assert history(spark, s) == everything, number
    ledger = spark.sql(
        f"select kind, count(*) from {s}.changelake_ledger__int_history_versions "
        "where kind in ('base', 'retired') group by kind"
    ).collect()
    assert dict(ledger) == {"base": 2}  # the first build's and run 3's; none retired
    dbt("run", "--full-refresh")
    assert history(spark, s) == everything


@pytest.mark.long(3)
def test_a_build_tests_the_versions_its_layer_wrote_and_dbt_test_every_key(dbt, spark, tmp_path):
    """In a build, cdc_history's SCD-2 rules read the versions the build's history layer wrote
    (a broken version there fails them, one in an older layer is left to `dbt test`), and
    cdc_current is checked, for the keys the layer touched (by table and key), against the
    versions the layer left open; a first build and a full refresh test every row."""
    from python_udfs.project import run_dbt

    land(
        dbt,
        tmp_path,
        "a.jsonl",
        [message(10, "c", 1, after={"id": 1, "v": "a"}), message(11, "c", 2, after={"id": 2})],
    )
    narrowed = ("int_history_versions", "exists (select 1 from")

    def history_test_sql(result) -> dict[str, str]:
        return {
            r.node.name: r.node.compiled_code
            for r in result.result.results
            if r.node.resource_type == "test"
            and r.node.name.startswith(("scd2_rules_cdc_history", "equals_open_versions"))
        }

    # a first build tests every row as it is (each is new): no narrowing
    result = dbt("build")
    assert len(history_test_sql(result)) == 2
    assert not any(n in sql for sql in history_test_sql(result).values() for n in narrowed)
    s = dbt.schema
    # a broken history for key 1: a second current version, in a layer the ledger calls committed
    key_1 = "key_json = '{\"id\":1}'"
    spark.sql(
        f"insert into {s}.int_history_versions by name "
        f"select * except (batch_id, part), 'forged' as batch_id, 'closed' as part "
        f"from {s}.int_history_versions where part = 'frontier' and {key_1}"
    )
    spark.sql(
        f"insert into {s}.changelake_ledger__int_history_versions "
        f"partition (segment = 'tail') values ('batch', 'forged', current_timestamp(), 1)"
    )
    history_tests = ["--select", "cdc_history", "cdc_current"]
    pg_and_downstream = ["--select", "decoded_pg_inventory+"]
    spark.sql(f"create table {s}.current_before using parquet as select * from {s}.cdc_current")

    # a build that updates key 1 checks the versions its layer wrote: the forged one is older
    # (not compacted, so its layer stays live and can be read after the build)
    land(dbt, tmp_path, "b.jsonl", [message(12, "u", 1, after={"id": 1, "v": "b"})])
    never = json.dumps(
        {
            "changelake_history_small_rows": 0,
            "changelake_history_max_layers": 1000,
            "changelake_history_max_share": 1000,
        }
    )
    code, result = run_dbt(["build", *pg_and_downstream, "--vars", never])
    assert code == 0, result.exception
    tests = history_test_sql(result)
    (rules,) = (sql for name, sql in tests.items() if name.startswith("scd2_rules"))
    (open_versions,) = (sql for name, sql in tests.items() if name.startswith("equals_open"))
    (build,) = set(re.findall(r"stored\.batch_id = '([^']+)'", rules))
    assert "key_json in (select" not in rules
    assert "cdc_history" not in rules
    assert f"changelake_layer.batch_id = '{build}'" in open_versions
    assert "changelake_layer.schema_name <=> changelake_scoped.schema_name" in open_versions
    failures = "select count(*) from ({}) as failing"
    layer_rows = f"select count(*) from {s}.int_history_versions where batch_id = '{build}'"
    assert spark.sql(layer_rows).first()[0] > 0
    assert spark.sql(failures.format(rules)).first()[0] == 0
    assert spark.sql(failures.format(open_versions)).first()[0] == 0
    # `dbt test` reads every version: the forged one fails it
    assert run_dbt(["test", *history_tests])[0] == 1
    # a cdc_current that does not show the version the layer left open for key 1 (it shows the
    # one before the build's update) fails the build's check of the open versions
    stale = open_versions.replace(f"{s}.cdc_current ", f"{s}.current_before ")
    assert stale != open_versions
    assert spark.sql(failures.format(stale)).first()[0] == 2
    # a second current version of key 1 in the build's own layer fails the build's rules
    spark.sql(
        f"insert into {s}.int_history_versions by name "
        f"select * except (batch_id, part, copy_part), '{build}' as batch_id, copy_part as part "
        f"from (select * from {s}.int_history_versions "
        f"where batch_id = '{build}' and part = 'frontier' and {key_1}) "
        f"lateral view explode(array('closed', 'frontier')) copies as copy_part"
    )
    assert spark.sql(failures.format(rules)).first()[0] > 0

    # key 2's last version forged to open after everything the source sends next: a build
    # that updates key 2 resumes from it and writes a version that closes before it opens. Its
    # compaction (due: a small store) replaces its layer, which its tests read all the same.
    spark.sql(
        f"insert into {s}.int_history_versions by name "
        f"select * except (batch_id, part, valid_from_position), "
        f"'{'9' * 20}' as valid_from_position, 'forged-2' as batch_id, 'frontier' as part "
        f"from {s}.int_history_versions where part = 'frontier' and key_json = '{{\"id\":2}}'"
    )
    spark.sql(
        f"insert into {s}.changelake_ledger__int_history_versions "
        f"partition (segment = 'tail') values ('batch', 'forged-2', current_timestamp(), 1)"
    )
    land(dbt, tmp_path, "c.jsonl", [message(13, "u", 2, after={"id": 2, "v": "c"})])

    def bases() -> int:
        return spark.sql(
            f"select count(*) from {s}.changelake_ledger__int_history_versions where kind = 'base'"
        ).first()[0]

    bases_before = bases()
    code, result = run_dbt(["build", *pg_and_downstream])
    assert bases() > bases_before
    assert code == 1
    failed = {r.node.name for r in result.result.results if r.status == "fail"}
    assert any(name.startswith("scd2_rules_cdc_history") for name in failed)
    # a full refresh (the forged rows gone with the table) tests every row, not narrowed
    code, result = run_dbt(["build", "--full-refresh", *pg_and_downstream])
    assert code == 0, result.exception
    assert len(history_test_sql(result)) == 2
    assert not any(n in sql for sql in history_test_sql(result).values() for n in narrowed)


def test_scd2_rules_return_each_version_that_breaks_a_rule_naming_it(dbt, spark):
    """The one-pass SCD-2 test (tests/generic/scd2_tests.sql), as dbt compiles it for
    cdc_history, over versions written to break each rule and versions that break none."""
    from datetime import datetime

    result = dbt("compile", "--select", "test_name:scd2_rules")
    sql = next(
        r.node.compiled_code
        for r in result.result.results
        if r.node.name.startswith("scd2_rules_cdc_history")
    )
    relation = f"{dbt.schema}.cdc_history"
    assert relation in sql
    at = datetime(2024, 1, 1, 12)
    earlier = datetime(2024, 1, 1, 11)
    # key, version, valid_from_position, valid_to_position, is_current, valid_from, valid_to
    versions = [
        ('{"id":1}', 1, "0001", "0002", False, at, at),  # closes where the next opens: fine
        ('{"id":1}', 2, "0002", None, True, at, None),
        ('{"id":2}', 1, "0001", None, True, at, None),  # two current versions, the first open
        ('{"id":2}', 2, "0003", None, True, at, None),
        ('{"id":3}', 1, "0005", "0003", False, at, at),  # closes before it opens (position)
        ('{"id":3}', 2, "0006", None, True, at, None),
        ('{"id":4}', 1, "0001", "0004", False, at, at),  # closes after the next opens
        ('{"id":4}', 2, "0003", None, True, at, None),
        ('{"id":5}', 1, "0001", None, True, None, None),  # no valid_from
        ('{"id":6}', 1, "0001", "0002", False, at, earlier),  # closes before it opens (time)
        ('{"id":6}', 2, "0002", "0003", False, at, at),  # closed by a delete: none current
    ]
    spark.createDataFrame(
        [("f", "s", "d", None, "t", *v) for v in versions],
        "feed string, source_name string, database_name string, schema_name string, "
        "table_name string, key_json string, version_number int, valid_from_position string, "
        "valid_to_position string, is_current boolean, valid_from timestamp, valid_to timestamp",
    ).createOrReplaceTempView("crafted_versions")
    broken = {
        (r.key_json, r.version_number): sorted(r.broken_rules)
        for r in spark.sql(sql.replace(relation, "crafted_versions")).collect()
    }
    assert broken == {
        ('{"id":2}', 1): [
            "another version of the key is current too",
            "overlaps the next version",
        ],
        ('{"id":2}', 2): ["another version of the key is current too"],
        ('{"id":3}', 1): ["closes before it opens"],
        ('{"id":4}', 1): ["overlaps the next version"],
        ('{"id":5}', 1): ["valid_from is null"],
        ('{"id":6}', 1): ["closes before it opens"],
    }
