"""Section 7: ChangeLake against the Spark SQL a user would write instead.

The peer is the pipeline a data engineer writes in an afternoon for one Debezium PostgreSQL
feed: the kcat lines read with an explicit schema, the payload parsed by ``from_json`` with an
explicit schema, logical types converted in SQL, a change seen twice (same key, same LSN)
kept once, SCD-2 by window functions per key in LSN order (``lead`` for ``valid_to``), history
and current written as parquet. It is built here on the same landed files as ChangeLake, in the
same process and Spark session, and what it gets wrong is counted, not fixed: it keeps no-op
updates as versions, keeps TOAST placeholders as values, ignores truncates, and drops what it
cannot parse without a word."""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from python_udfs import generator, runtime
from python_udfs.bench.measure import timed
from python_udfs.bench.pipeline import dbt_command, generate, model_seconds, node_seconds, world
from python_udfs.generator.world import ADDED_COLUMN, TABLES

FEED = "pg_inventory"
TOPIC_PREFIX = "pg_server.public."
TOAST = "__debezium_unavailable_value"

# a kcat line as `kcat -J` writes it
_KCAT = "topic string, partition int, offset bigint, key string, payload string"
# the JSON type each column arrives as (Debezium's JSON converter), and its SQL conversion
_WIRE = {
    "int": "int",
    "long": "bigint",
    "string": "string",
    "bool": "boolean",
    "double": "double",
    "timestamp": "bigint",  # io.debezium.time.MicroTimestamp
    "timestamptz": "string",  # io.debezium.time.ZonedTimestamp
    "date": "int",  # io.debezium.time.Date: days since the epoch
    "bytes": "string",  # base64
    "json": "string",  # io.debezium.data.Json
}


def _columns() -> dict[str, str]:
    """Every column of the feed's tables with its world type: one ``after`` struct serves all
    four tables (columns of equal names have equal types), so the lines are parsed once."""
    columns: dict[str, str] = {}
    for spec in TABLES.values():
        columns.update(dict(spec["columns"]))
    columns[ADDED_COLUMN[1]] = ADDED_COLUMN[2]
    return columns


def _wire(kind: str) -> str:
    return "string" if kind.startswith("decimal") else _WIRE[kind]


def _converted(column: str, kind: str) -> str:
    value = f"after.`{column}`"
    if kind.startswith("decimal"):
        # org.apache.kafka.connect.data.Decimal: the unscaled value, big-endian, base64
        _, precision, scale = kind.split(":")
        unscaled = f"cast(conv(hex(unbase64({value})), 16, 10) as decimal(38, 0))"
        return f"cast({unscaled} / {10 ** int(scale)} as decimal({precision}, {scale}))"
    return {
        "timestamp": f"timestamp_micros({value})",
        "timestamptz": f"to_timestamp({value})",
        "date": f"date_from_unix_date({value})",
        "bytes": f"unbase64({value})",
    }.get(kind, value)


def peer_sql(files_view: str) -> str:
    """The peer's history as one query over ``files_view`` (the kcat lines, one column
    ``value``)."""
    columns = _columns()
    after = ", ".join(f"`{c}`: {_wire(k)}" for c, k in columns.items())
    envelope = (
        f"struct<payload: struct<op: string, after: struct<{after}>, "
        "source: struct<ts_ms: bigint, table: string, lsn: bigint, txId: bigint>>>"
    )
    row = ", ".join(f"'{c}', {_converted(c, k)}" for c, k in columns.items())
    return f"""
with lines as (
  select from_json(value, '{_KCAT}') as m from {files_view}
),
changes as (
  select m.topic, from_json(m.key, 'struct<payload: string>').payload as key_text,
         from_json(m.payload, '{envelope}').payload as e
  from lines
  where m.topic like '{TOPIC_PREFIX}%' and m.payload is not null
),
rows as (
  select e.source.table as table_name, key_text, e.op, e.source.lsn as lsn,
         timestamp_millis(e.source.ts_ms) as committed_at, e.after as after
  from changes
  where e.op in ('r', 'c', 'u', 'd')
),
once as (
  select * from rows
  qualify row_number() over (partition by table_name, key_text, lsn order by op) = 1
),
versions as (
  select *,
         lead(committed_at) over w as valid_to,
         lead(lsn) over w as valid_to_lsn
  from once
  window w as (partition by table_name, key_text order by lsn)
)
select table_name, key_text as key, named_struct({row}) as row,
       committed_at as valid_from, valid_to, lsn as valid_from_lsn, valid_to_lsn,
       valid_to_lsn is null as is_current
from versions
where op <> 'd'
"""


def peer_pipeline(spark: Any, files: list[str], out: Path) -> None:
    """The peer: read ``files``, write ``out/history`` and ``out/current`` as parquet."""
    shutil.rmtree(out, ignore_errors=True)
    spark.read.text(files).createOrReplaceTempView("peer_lines")
    history = spark.sql(peer_sql("peer_lines"))
    history.write.mode("overwrite").partitionBy("table_name").parquet(str(out / "history"))
    written = spark.read.parquet(str(out / "history"))
    written.where("is_current").write.mode("overwrite").parquet(str(out / "current"))


def peer_differences(spark: Any, files: list[str], out: Path, schema: str) -> dict[str, Any]:
    """Where the peer's tables and ChangeLake's differ, and the cases behind it (untimed)."""
    spark.read.parquet(str(out / "history")).createOrReplaceTempView("peer_history")
    # each line's kcat fields, parsed once
    spark.read.text(files).selectExpr(f"from_json(value, '{_KCAT}') as m").createOrReplaceTempView(
        "peer_messages"
    )
    spark.sql(
        """
select e.source.table as table_name, e.source.lsn as lsn from (
  select from_json(m.payload,
                   'struct<payload: struct<op: string, source: struct<table: string, lsn: bigint>>>'
                  ).payload as e
  from peer_messages)
where e.op = 't'
"""
    ).createOrReplaceTempView("peer_truncates")
    one = spark.sql(
        f"""
select
  (select count(*) from peer_history) as peer_versions,
  (select count(*) from peer_history where is_current) as peer_current,
  (select count(*) from {schema}.cdc_history where feed = '{FEED}') as versions,
  (select count(*) from {schema}.cdc_current where feed = '{FEED}') as current,
  (select count(*) from peer_messages) as lines,
  (select count(*) from peer_messages where m.topic is null
     or (m.payload is not null and m.payload not like '{{%}}')) as unparsed,
  (select count(*) from {schema}.cdc_quarantine where feed = '{FEED}') as quarantined,
  (select count(*) from peer_history where to_json(row) like '%{TOAST}%') as toast_kept,
  (select count(*) from (
     select to_json(row) = to_json(lag(row) over in_order)
            and lag(valid_to_lsn) over in_order = valid_from_lsn as same
     from peer_history
     window in_order as (partition by table_name, key order by valid_from_lsn)) where same)
     as noop_kept,
  (select count(*) from peer_truncates) as truncates,
  (select count(*) from peer_history h join peer_truncates t
     on h.table_name = t.table_name and h.is_current and h.valid_from_lsn < t.lsn)
     as open_after_truncate
"""
    ).first()
    return one.asDict()


def _landed_files(landing: Path) -> list[str]:
    return sorted(str(p) for p in (landing / FEED).rglob("*") if p.is_file())


def peer_bench(spark: Any, work: Path, events: int, rounds: int) -> dict[str, Any]:
    """One Debezium PostgreSQL feed of ``events`` changes, landed at once: ChangeLake's
    ``dbt run --full-refresh`` and ``dbt build --full-refresh``, and the peer (median of
    ``rounds``), on the same files."""
    from python_udfs.project import land_files

    label = f"peer-{events}"
    data = work / f"data-{label}"
    summary = generate(
        data, events=events, keys=max(50, events // 200), batches=1, seed=1, feeds=[FEED]
    )
    landing = work / f"landing-{label}"
    shutil.rmtree(landing, ignore_errors=True)
    schema = f"bench_peer_{events}"
    spark.sql(f"drop schema if exists {schema} cascade")
    (batch,) = generator.batch_folders(data)
    home = runtime.project_dir()
    result: dict[str, Any] = {"events": events}
    with world(work, landing, schema):
        land_files(FEED, [batch / FEED], str(landing), home)
        files = _landed_files(landing)
        result["records"] = summary["feeds"][FEED]["records"]
        result["bytes"] = sum(Path(f).stat().st_size for f in files)
        # a full refresh finds the tables there and the project parsed (a first build also
        # creates the tables and views and parses the project for this world: untimed)
        result["first_run"] = timed(lambda: dbt_command("run"))
        start = time.perf_counter()
        run = dbt_command("run", "--full-refresh")
        result["run"] = time.perf_counter() - start
        result["run_models"] = model_seconds(run)
        result["run_layers"] = node_seconds(run)
        start = time.perf_counter()
        build = dbt_command("build", "--full-refresh", "--exclude", "tag:accounting")
        result["build"] = time.perf_counter() - start
        result["build_layers"] = node_seconds(build)
        result["matched"] = all(r["matched"] for r in generator.compare(spark, schema, summary))
        out = work / f"peer-out-{events}"
        peer = [timed(lambda: peer_pipeline(spark, files, out)) for _ in range(rounds)]
        result["peer"] = statistics.median(peer)
        result["peer_rounds"] = peer
        result["differences"] = peer_differences(spark, files, out, schema)
        shutil.rmtree(out, ignore_errors=True)
    spark.sql(f"drop schema if exists {schema} cascade")
    shutil.rmtree(landing, ignore_errors=True)
    shutil.rmtree(data, ignore_errors=True)
    return result
