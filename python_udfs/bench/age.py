"""Section 6: age, many runs of equal increments of one world."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from python_udfs import generator, runtime
from python_udfs.bench.measure import (
    current_against_parquet,
    read_seconds,
    timed,
)
from python_udfs.bench.pipeline import dbt_command, generate, node_seconds, world


def storage_bytes(spark: Any, schema: str) -> int:
    """Bytes on disk under ``schema``'s warehouse folder (every table, ledgers included)."""
    jvm = spark._jvm
    path = jvm.org.apache.hadoop.fs.Path(spark.catalog.getDatabase(schema).locationUri)
    fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
    return int(fs.getContentSummary(path).getLength()) if fs.exists(path) else 0


def partition_count(spark: Any, table: str) -> int | None:
    """The partitions of ``table`` in the metastore; None when it does not exist."""
    if not spark.catalog.tableExists(table):
        return None
    return spark.sql(f"show partitions {table}").count()


def driver_heap_mib(spark: Any) -> float:
    """MiB of the driver's Java heap in use after a full garbage collection: what a long session
    keeps (a leak shows as a rising floor, long before a job runs out of memory)."""
    jvm = spark._jvm
    jvm.java.lang.System.gc()
    heap = jvm.java.lang.Runtime.getRuntime()
    return (heap.totalMemory() - heap.freeMemory()) / 2**20


def land_batches(batches: list[Path], landing: Path) -> None:
    from python_udfs.project import land_files

    home = runtime.project_dir()
    for batch in batches:
        for feed_dir in sorted(p for p in batch.iterdir() if p.is_dir()):
            land_files(feed_dir.name, [feed_dir], str(landing), home)


def fresh_storage(spark: Any, work: Path, batches: list[Path]) -> int:
    """Storage a fresh full build of ``batches`` writes, in a schema of its own (its models
    alone: data tests write nothing)."""
    landing = work / "landing-age-fresh"
    shutil.rmtree(landing, ignore_errors=True)
    schema = "bench_age_fresh"
    spark.sql(f"drop schema if exists {schema} cascade")
    with world(work, landing, schema):
        land_batches(batches, landing)
        dbt_command("run")
        size = storage_bytes(spark, schema)
    spark.sql(f"drop schema if exists {schema} cascade")
    shutil.rmtree(landing, ignore_errors=True)
    return size


def age_bench(spark: Any, work: Path, runs: int, increment: int) -> dict[str, Any]:
    """``runs`` builds, each after landing one equal increment of one world (see module doc)."""
    data = work / "data-age"
    # a world that ages without growing: a read of its current state returns about as many
    # rows at the last run as at the second, so the reads compare age, not size
    keys = max(20, increment // 10)
    summary = generate(data, events=runs * increment, keys=keys, batches=runs, seed=3, steady=True)
    batches = generator.batch_folders(data)
    landing = work / "landing-age"
    shutil.rmtree(landing, ignore_errors=True)
    schema = "bench_age"
    spark.sql(f"drop schema if exists {schema} cascade")
    # the second, middle and last runs (a short run, the smoke test's, has no middle: each
    # checkpoint costs a full build of its own)
    checkpoints = sorted({min(2, runs), runs} | ({runs // 2} if runs >= 6 else set()))
    out: dict[str, Any] = {
        "runs": [],
        "runs_count": runs,
        "increment": increment,
        "steady_keys": keys,
        "fresh": {},
    }
    key = None
    with world(work, landing, schema):
        for number, batch in enumerate(batches, 1):
            land_batches([batch], landing)
            failed = ""
            nodes: dict[str, float] = {}
            start = time.perf_counter()
            try:
                nodes = node_seconds(dbt_command("build"))
            except runtime.ChangeLakeError as error:
                # recorded and reported; the next run's build retries what this one left pending
                failed = str(error)
                runtime.log(f"bench: age run {number} failed: {failed}")
            seconds = time.perf_counter() - start
            if nodes:
                # parsing, run hooks, compiling: the build's wall time outside its nodes
                nodes["outside nodes"] = max(0.0, seconds - sum(nodes.values()))
            if key is None:
                key = spark.sql(
                    f"select feed, table_name, key_json from {schema}.cdc_current "
                    f"where feed = 'pg_inventory' and table_name = 'customers' "
                    f"order by key_json limit 1"
                ).first()
            reads = {
                "current": f"select * from {schema}.cdc_current",
                "key_history": (
                    f"select * from {schema}.cdc_history where feed = '{key.feed}' and "
                    f"table_name = '{key.table_name}' and key_json = '{key.key_json}'"
                ),
                "typed_current": f"select * from {schema}.typed_pg_customers_current",
            }
            out["runs"].append(
                {
                    "run": number,
                    "seconds": seconds,
                    "failed": failed,
                    "storage": storage_bytes(spark, schema),
                    # the (layer, part) partitions of the history store: a read of one key
                    # opens the live ones holding closed versions, one base per size class
                    "history_partitions": partition_count(spark, f"{schema}.int_history_versions"),
                    "heap": driver_heap_mib(spark),
                    "nodes": nodes,
                    # five reads each: a read takes a tenth of a second or so, and one of
                    # three could land on a collection or another process's burst
                    **{name: read_seconds(spark, sql, 5) for name, sql in reads.items()},
                    # the rows each read returns (a truncate, the live rows' drift, one key's
                    # versions growing with age), so a read's time is judged per row as well
                    **{
                        f"{name}_rows": spark.sql(f"select count(*) from ({sql})").first()[0]
                        for name, sql in reads.items()
                    },
                }
            )
            last = out["runs"][-1]
            runtime.log(
                f"bench: age run {number}/{runs}: {seconds:.1f} s, storage "
                f"{last['storage'] / 2**20:.1f} MiB, reads current {last['current']:.2f} s, "
                f"key history {last['key_history']:.2f} s, typed {last['typed_current']:.2f} s, "
                f"driver heap {last['heap']:.0f} MiB"
            )
        # the first build with nothing new comes right after the last run and does the ledger
        # and segment maintenance that run left due; the three after it have none left
        out["idle"] = timed(lambda: dbt_command("build"))
        out["idle_after"] = [timed(lambda: dbt_command("build")) for _ in range(3)]
        runtime.log(
            f"bench: idle builds {out['idle']:.1f} s, then "
            + ", ".join(f"{seconds:.1f}" for seconds in out["idle_after"])
            + " s"
        )
        out["matched"] = all(r["matched"] for r in generator.compare(spark, schema, summary))
        out["current_rows"], out["current_read"], out["parquet_read"] = current_against_parquet(
            spark, schema
        )
    spark.sql(f"drop schema if exists {schema} cascade")
    for number in checkpoints:
        out["fresh"][number] = fresh_storage(spark, work, batches[:number])
    return out
