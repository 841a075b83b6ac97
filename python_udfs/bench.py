"""The benchmark: ChangeLake's decode and pipeline speed against native Spark, in one run.

``changelake bench [--events N] [--large] [--rounds R] [--write-readme]``

All measurements run in one process on one SparkSession (the embedded target unless another is
chosen), on data from :mod:`python_udfs.generator`:

1. **Decode** of the Debezium PostgreSQL feed (``--events`` records, schema blocks included):
   the floor (read the landed lines, write them to Spark's ``noop`` sink), the best native
   path (``from_json`` with an explicit schema plus SQL expressions for the same conversions:
   base64 decimals, micro timestamps, epoch dates, TOAST markers, key JSON, position), the
   transfer (the records to the Python workers and results of the decode's size back, no
   decoding) and the ChangeLake UDF; medians of ``--rounds``. The same over the same
   records without schema blocks (``schemas.enable=false``: key and value their ``payload``
   alone, values as sent). Where the UDF's Python time goes, per record, in this process.
   Then the UDF per feed (all six formats).
2. **End to end**: every model (``dbt build`` without the accounting test) from scratch over
   all six feeds, events/s and seconds per layer; the accounting test timed on its own.
3. **Incremental**: the generator's last batch (1% of the changes, late files included) is
   landed after the first build and built incrementally; its seconds over a full refresh's.
4. **Memory**: peak resident memory of the JVM, the Python UDF workers and this driver, for
   the end-to-end run at ``events / 10`` and at ``events``.
5. **Large files**: one landed file of 100 MB and one of 1 GB, in each landing shape (kcat
   lines of the PostgreSQL feed, a Connect sink file of the SQL Server feed), decoded by their
   decoded model with the default driver memory: seconds, the JVM's peak heap (in use, and
   left after collections), and whether every line kept its number.
6. **Age**: ``--age-runs`` consecutive ``dbt build`` runs (tests included, as users run
   them), each over an equal increment of one world that ages without growing (the
   generator's ``steady`` option: customers and orders stay at about their snapshot's count,
   so a read of the current state compares age, not size): seconds per run, storage on disk against
   a fresh full refresh of the same input (at the second, middle and last run; no middle
   under six runs), the time to read all of ``cdc_current``, one key's ``cdc_history`` and a
   typed current model; then four builds with nothing new (the first right after the last
   run, doing the ledger and segment maintenance it left due; the median of the other
   three), and ``cdc_current`` against a parquet table of its own rows. Each age build's
   node seconds by layer are kept, and the second and last runs compared.

Numbers are wall-clock on whatever machine runs it; ratios within one run are what compare.
Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa

from python_udfs import generator, runtime
from python_udfs.generator.landing import MALFORMED
from python_udfs.generator.world import ADDED_COLUMN, TABLES

KCAT_SCHEMA = (
    "struct<topic: string, partition: int, offset: bigint, headers: array<string>, "
    "key: string, payload: string>"
)
README_START, README_END = "<!-- bench:start -->", "<!-- bench:end -->"


# --------------------------------------------------------------------------------------------
# Measuring
# --------------------------------------------------------------------------------------------


class _Sampler:
    """Calls ``_sample`` every ``interval`` seconds on a thread while the block runs."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        raise NotImplementedError

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


class MemoryPeaks(_Sampler):
    """Samples resident memory (psutil) of the JVM, the Python workers and this process."""

    def __init__(self, interval: float = 0.2) -> None:
        import psutil

        super().__init__(interval)
        self.me = psutil.Process()
        self.peaks = {"jvm": 0, "python_workers": 0, "driver": 0}

    def _sample(self) -> None:
        import psutil

        jvm = workers = 0
        for child in self.me.children(recursive=True):
            try:
                name = child.name()
                rss = child.memory_info().rss
            except psutil.Error:
                continue
            if name == "java":
                jvm += rss
            elif name.startswith("python"):
                workers += rss
        for name, value in (("jvm", jvm), ("python_workers", workers)):
            self.peaks[name] = max(self.peaks[name], value)
        self.peaks["driver"] = max(self.peaks["driver"], self.me.memory_info().rss)


def timed(action: Callable[[], Any]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def median_seconds(action: Callable[[], Any], rounds: int) -> float:
    return statistics.median(timed(action) for _ in range(rounds))


# --------------------------------------------------------------------------------------------
# 1. Decode
# --------------------------------------------------------------------------------------------


def _native_type(kind: str) -> str:
    return {
        "int": "int",
        "long": "bigint",
        "bool": "boolean",
        "double": "double",
        "date": "int",
        "timestamp": "bigint",
    }.get(kind, "string")


def _native_column(column: str, kind: str, schemas: bool = True) -> str:
    """SQL turning one Debezium PostgreSQL payload column into the UDF's canonical value;
    without schemas, the value as sent (the UDF has no type to convert it by either)."""
    ref = f"m.payload.after.`{column}`" if schemas else f"m.after.`{column}`"
    if kind == "string":
        return f"nullif({ref}, '__debezium_unavailable_value')"
    if not schemas:
        return ref
    if kind.startswith("decimal"):
        _, precision, scale = kind.split(":")
        return (
            f"cast(cast(conv(hex(unbase64({ref})), 16, 10) as decimal(38, 0)) "
            f"/ power(10, {scale}) as decimal({precision}, {scale}))"
        )
    if kind == "timestamp":
        return f"timestamp_micros({ref})"
    if kind == "date":
        return f"date_add(date'1970-01-01', {ref})"
    return ref


def native_debezium_sql(lines: str, schemas: bool = True) -> str:
    """The native Spark SQL decode of the generated PostgreSQL feed, over view ``lines``: with
    the Connect ``schema`` blocks (values converted by their logical types), or without
    (``schemas.enable=false``: the payload alone, values as sent)."""
    columns: dict[str, str] = {}
    for spec in TABLES.values():
        columns.update(dict(spec["columns"]))
    _, column, kind = ADDED_COLUMN
    columns[column] = kind
    row = ", ".join(
        f"`{c}`: {_native_type(k) if schemas or not k.startswith('decimal') else 'string'}"
        for c, k in columns.items()
    )
    payload = (
        f"struct<before: struct<{row}>, after: struct<{row}>, "
        "source: struct<name: string, db: string, schema: string, `table`: string, "
        "txId: bigint, lsn: bigint, ts_ms: bigint, snapshot: string>, op: string, "
        "ts_ms: bigint>"
    )
    key = "struct<id: int, order_number: int, line_number: int>"
    value_schema, key_schema = (
        (f"struct<payload: {payload}>", f"struct<payload: {key}>") if schemas else (payload, key)
    )
    m = "m.payload" if schemas else "m"
    key_value = f"from_json(r.key, '{key_schema}')" + (".payload" if schemas else "")
    after = ", ".join(f"'{c}', {_native_column(c, k, schemas)}" for c, k in columns.items())
    toast = ", ".join(
        f"if({m}.after.`{c}` = '__debezium_unavailable_value', '{c}', null)"
        for c, k in columns.items()
        if k == "string"
    )
    return f"""
        select
            {m}.source.name as source_name,
            {m}.source.db as database_name,
            {m}.source.schema as schema_name,
            {m}.source.`table` as table_name,
            {m}.op as op,
            to_json({key_value}) as key_json,
            to_json(named_struct({after})) as after_json,
            filter(array({toast}), x -> x is not null) as unavailable_columns,
            timestamp_millis({m}.source.ts_ms) as committed_at,
            cast({m}.source.txId as string) as transaction_id,
            lpad(cast({m}.source.lsn as string), 20, '0') as position
        from (
            select r, from_json(r.payload, '{value_schema}') as m
            from (select from_json(value, '{KCAT_SCHEMA}') as r from {lines})
        )
    """


def schemaless_lines(spark: Any, files: list[str], out: Path) -> list[str]:
    """The kcat lines of ``files`` as a connector with ``schemas.enable=false`` sends them: each
    key and value is its ``payload`` alone (heartbeats and tombstones unchanged)."""
    spark.read.text(files).createOrReplaceTempView("bench_schema_lines")
    spark.sql(
        f"""
        select to_json(named_struct(
            'topic', r.topic, 'partition', r.partition, 'offset', r.offset,
            'headers', r.headers,
            'key', coalesce(get_json_object(r.key, '$.payload'), r.key),
            'payload', coalesce(get_json_object(r.payload, '$.payload'), r.payload)
        )) as value
        from (select from_json(value, '{KCAT_SCHEMA}') as r from bench_schema_lines)
        """
    ).write.mode("overwrite").text(str(out))
    return sorted(str(p) for p in out.glob("part-*"))


def _noop(frame: Any) -> None:
    frame.write.format("noop").mode("overwrite").save()


def _first_decoded_repeated(
    envelope_format: Any, key: Any, value: Any, headers: Any, arrow_type: Any
) -> Any:
    """The transfer's stand-in for the decode UDF: the batch's first record decoded, and
    that one result repeated for every record (a copy in Arrow's C++). What it costs over
    the floor is moving the records to the Python worker and results of the decode's size
    back, without decoding them."""
    from python_udfs.spark_udfs import decode_batch

    columns = (envelope_format, key, value, headers)
    first = decode_batch(*(a.slice(0, 1) for a in columns), arrow_type)
    return first.take(pa.array([0] * len(value), type=pa.int32()))


def _register_transfer_udf(spark: Any) -> None:
    from pyspark.sql.functions import arrow_udf

    from python_udfs.spark_udfs import decode_types

    spark_type, arrow_type = decode_types(spark)

    def changelake_bench_transfer(
        envelope_format: pa.Array, key: pa.Array, value: pa.Array, headers: pa.Array
    ) -> pa.Array:
        return _first_decoded_repeated(envelope_format, key, value, headers, arrow_type)

    spark.udf.register(
        "changelake_bench_transfer", arrow_udf(changelake_bench_transfer, spark_type)
    )


def decode_bench(
    spark: Any, files: list[str], rounds: int, schemas: bool = True
) -> dict[str, float]:
    """Seconds (medians) of floor, native from_json, the transfer to Python and back without
    decoding, and the UDF over the PostgreSQL feed."""
    lines = spark.read.text(files)
    view = "bench_pg_lines" if schemas else "bench_pg_schemaless_lines"
    lines.createOrReplaceTempView(view)
    native = spark.sql(native_debezium_sql(view, schemas))
    _register_transfer_udf(spark)
    records = f"from (select from_json(value, '{KCAT_SCHEMA}') as r from {view})"
    udf, transfer = (
        spark.sql(f"select {name}('debezium', r.key, r.payload, r.headers) as changes {records}")
        for name in ("changelake_decode", "changelake_bench_transfer")
    )
    _noop(lines)  # warm the file listing and the Python workers once
    _noop(udf.limit(1000))
    return {
        "records": lines.count(),
        "floor": median_seconds(lambda: _noop(lines), rounds),
        "native": median_seconds(lambda: _noop(native), rounds),
        "transfer": median_seconds(lambda: _noop(transfer), rounds),
        "udf": median_seconds(lambda: _noop(udf), rounds),
    }


def _spread_sample(files: list[str], sample: int) -> list[bytes]:
    """About ``sample`` lines of ``files``, every n-th of them all: the feed's mix of tables,
    snapshot reads, updates and deletes, where its first lines are one table's (on a
    200,000-change feed the whole batch took 65.9 µs a record spread, 59.9 µs the first)."""
    total = 0
    for path in files:
        with open(path, "rb") as handle:
            while block := handle.read(1 << 24):
                total += block.count(b"\n")
    stride, index, out = max(1, total // max(1, sample)), 0, []
    for path in files:
        with open(path, "rb") as handle:
            for line in handle:
                if index % stride == 0 and line.strip():
                    out.append(line)
                    if len(out) == sample:
                        return out
                index += 1
    return out


def python_breakdown(files: list[str], arrow_type: Any, sample: int = 20_000) -> dict[str, float]:
    """Where the decode UDF's Python time goes, in microseconds a record, over ``sample``
    records spread evenly over ``files``, in this process (one core, no Spark job;
    ``arrow_type`` is the UDF's result type): the records from Arrow to Python values, the
    key's and value's JSON parsed (schema blocks cut out and looked up, as the decoder does),
    the rest of decoding (conversions, images written as JSON, the layout's records), and the
    results built as one Arrow array. Best of 3."""
    import orjson

    from python_udfs import debezium, decode_unchecked
    from python_udfs.spark_udfs import _pairs, decode_batch
    from python_udfs.values import MalformedInput

    rows: list[tuple[Any, Any, Any]] = []
    for line in _spread_sample(files, sample):
        record = orjson.loads(line)
        rows.append((record.get("key"), record.get("payload"), record.get("headers")))
    keys, values, headers = (list(column) for column in zip(*rows, strict=True))
    arrays = (
        pa.array(["debezium"] * len(rows)),
        pa.array(keys, pa.string()),
        pa.array(values, pa.string()),
        pa.array(headers, pa.list_(pa.string())),
    )

    def best(action: Callable[[], Any]) -> float:
        return min(timed(action) for _ in range(3)) * 1e6 / len(rows)

    texts = [(key, "key") for key in keys] + [(value, "value") for value in values]

    def parse() -> None:
        for text, where in texts:
            # the generator's malformed records are errors, as when decoded
            with contextlib.suppress(MalformedInput):
                if text is not None:
                    debezium.split(text, where)

    def decode_all() -> list[list[dict[str, Any]]]:
        return [decode_unchecked("debezium", k, v, _pairs(h)) for k, v, h in rows]

    decoded = decode_all()
    to_python = best(lambda: [a.to_pylist() for a in arrays])
    parsing = best(parse)
    decoding = best(decode_all)
    return {
        "records": len(rows),
        "to_python": to_python,
        "parse": parsing,
        "convert": decoding - parsing,
        "to_arrow": best(lambda: pa.array(decoded, type=arrow_type)),
        "whole": best(lambda: decode_batch(*arrays, arrow_type)),
    }


def per_format_bench(spark: Any, data: Path, rounds: int) -> list[dict[str, Any]]:
    """UDF decode seconds per generated feed (all batches)."""
    formats = {
        "pg_inventory": "debezium",
        "sqlserver_inventory": "debezium",
        "dtle_inventory": "debezium",
        "dataworks_inventory": "dataworks",
        "tencent_inventory": "tencent;time_zone=+08:00",
        "canal_inventory": "canal",
    }
    out = []
    for feed, envelope in formats.items():
        files = sorted(str(p) for p in data.glob(f"batch-*/{feed}/*") if p.is_file())
        lines = spark.read.text(files)
        if feed == "sqlserver_inventory":  # Connect sink lines: the value alone
            frame = lines.selectExpr(
                f"changelake_decode('{envelope}', null, value, null) as changes"
            )
        else:
            frame = lines.selectExpr(f"from_json(value, '{KCAT_SCHEMA}') as r").selectExpr(
                f"changelake_decode('{envelope}', r.key, r.payload, r.headers) as changes"
            )
        records = lines.count()
        seconds = median_seconds(lambda frame=frame: _noop(frame), rounds)
        out.append({"feed": feed, "format": envelope, "records": records, "seconds": seconds})
    return out


# --------------------------------------------------------------------------------------------
# 2-4. Pipeline: end to end, incremental, memory
# --------------------------------------------------------------------------------------------


@contextmanager
def _environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _world(work: Path, landing: Path, schema: str) -> Any:
    """The environment of dbt builds of one world: its landing root, its schema, and a dbt
    target folder of its own, where dbt keeps the project it parsed for that schema (one folder
    for every world would be parsed again, whole, at each switch between worlds)."""
    return _environment(
        CHANGELAKE_LANDING_ROOT=str(landing),
        CHANGELAKE_SCHEMA=schema,
        DBT_TARGET_PATH=str(work / "dbt-targets" / schema),
    )


def _dbt(*args: str, quiet: tuple[str, ...] = ("--quiet",)) -> Any:
    """``dbt *args`` in this process; a failure raises, naming the nodes that failed. dbt's line
    per node goes to logs/dbt.log only (``quiet``); errors still reach the terminal."""
    from python_udfs.project import run_dbt

    code, result = run_dbt([*args, *quiet])
    if code != 0:
        nodes = getattr(getattr(result, "result", None), "results", None) or []
        failures = [
            f"{r.node.name}: {str(r.message or '').strip().splitlines()[0][:300]}"
            for r in nodes
            if str(r.status) in ("error", "fail") and r.message
        ]
        detail = "; ".join(failures) or str(getattr(result, "exception", "") or "")[:300]
        raise runtime.ChangeLakeError(
            f"dbt {' '.join(args)} failed ({code}) in the benchmark: {detail}"
        )
    return result


def _compiled(sql: str) -> str:
    """``sql`` (Jinja using the project's macros) as dbt compiles it in the current world (not
    printed: `dbt compile --quiet` still prints the SQL it compiled)."""
    result = _dbt("compile", "--inline", sql, quiet=("--log-level", "none"))
    return str(result.result.results[0].node.compiled_code)


def _layer(name: str) -> str:
    for prefix, layer in (
        ("decoded_", "decode (decoded_*)"),
        ("stg_", "staging views"),
        ("int_changes", "change log (int_changes_unioned)"),
        ("int_history", "history (int_history_versions)"),
    ):
        if name.startswith(prefix):
            return layer
    return "views and tests"


def _node_seconds(result: Any) -> dict[str, float]:
    """Seconds of a run's dbt nodes by layer, its data tests as one layer."""
    layers: dict[str, float] = {}
    for r in result.result.results:
        layer = "data tests" if r.node.resource_type == "test" else _layer(r.node.name)
        layers[layer] = layers.get(layer, 0.0) + r.execution_time
    return layers


def _slowest_nodes(result: Any, count: int) -> list[tuple[str, float]]:
    """The ``count`` dbt nodes of a run that took longest: (name, seconds)."""
    nodes = [(r.node.name, r.execution_time) for r in result.result.results]
    return sorted(nodes, key=lambda node: -node[1])[:count]


def _model_seconds(result: Any) -> float:
    """Seconds spent building models (tests excluded), summed over dbt's nodes."""
    return sum(r.execution_time for r in result.result.results if r.node.resource_type == "model")


def generate(out: Path, **options: Any) -> dict[str, Any]:
    """Run the generator in a child process (the driver's memory then measures the pipeline
    alone) and return its summary."""
    shutil.rmtree(out, ignore_errors=True)
    args = [sys.executable, "-m", "python_udfs.cli", "generate", "--out", str(out)]
    for name, value in options.items():
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, bool):  # a switch: given when true
            args += [flag] if value else []
            continue
        args += [flag, ",".join(value) if isinstance(value, list) else str(value)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "expected.json").read_text())


def pipeline_bench(spark: Any, work: Path, events: int, label: str) -> dict[str, Any]:
    """Build everything over ``events`` changes (99% then 1%), then refresh fully; time it."""
    from python_udfs.project import land_files

    data = work / f"data-{label}"
    summary = generate(
        data, events=events, keys=max(50, events // 200), batches=2, seed=1, last_share=0.01
    )
    landing = work / f"landing-{label}"
    shutil.rmtree(landing, ignore_errors=True)
    schema = f"bench_{label}"
    spark.sql(f"drop schema if exists {schema} cascade")
    home = runtime.project_dir()
    first, last = generator.batch_folders(data)
    result: dict[str, Any] = {"events": events, "records": 0}
    with _world(work, landing, schema):
        with MemoryPeaks() as memory:
            for feed_dir in sorted(first.iterdir()):
                land_files(feed_dir.name, [feed_dir], str(landing), home)
            result["first_build"] = timed(lambda: _dbt("build", "--exclude", "tag:accounting"))
            for feed_dir in sorted(last.iterdir()):
                land_files(feed_dir.name, [feed_dir], str(landing), home)
            start = time.perf_counter()
            incremental = _dbt("build", "--exclude", "tag:accounting")
            result["incremental"] = time.perf_counter() - start
            result["incremental_models"] = _model_seconds(incremental)
            matched = generator.compare(spark, schema, summary)
            result["matched"] = all(r["matched"] for r in matched)
            # reading all of cdc_current at this size, its store holding the +1%'s layer
            result["current_rows"], result["current_read"], result["parquet_read"] = (
                current_against_parquet(spark, schema)
            )
            start = time.perf_counter()
            full = _dbt("build", "--full-refresh", "--exclude", "tag:accounting")
            result["full_refresh"] = time.perf_counter() - start
            result["full_models"] = _model_seconds(full)
            result["accounting_test"] = timed(lambda: _dbt("test", "--select", "tag:accounting"))
        result["layers"] = _node_seconds(full)
        result["incremental_layers"] = _node_seconds(incremental)
        result["incremental_slowest"] = _slowest_nodes(incremental, 8)
        result["full_slowest"] = _slowest_nodes(full, 8)
        result["memory"] = dict(memory.peaks)
        result["records"] = sum(f["records"] for f in summary["feeds"].values())
    spark.sql(f"drop schema if exists {schema} cascade")
    return result


# --------------------------------------------------------------------------------------------
# 5. Large landed files
# --------------------------------------------------------------------------------------------

# the smaller file fills every core (two splits of 128 MiB): a file of one split runs as one
# task and holds half the memory, which would count the cores, not the file's size
LARGE_FILE_BYTES = (256 * 2**20, 2**30)
# kcat lines, a Connect sink file, and a sink file compressed (.json.gz, a sink's gzip output)
LARGE_FILE_SHAPES = ("kcat", "sink", "sink.gz")
_OFFSET = re.compile(r'"offset":\s*\d+')


def write_large_file(
    lines: list[str], out: Path, size: int, kcat: bool, compressed: bool = False
) -> int:
    """``lines`` written over and over into ``out`` until it holds ``size`` bytes of text
    (``compressed``: gzip, of that text); kcat lines get consecutive offsets (a sink file's
    offsets are its lines). Returns the records."""
    written = records = 0
    # (level 1: the file's text is what is measured, and it compresses 1 GiB in seconds)
    with gzip.open(out, "wt", compresslevel=1) if compressed else out.open("w") as f:
        while written < size:
            for line in lines:
                if kcat:
                    line = _OFFSET.sub(f'"offset":{records}', line, count=1)
                f.write(line + "\n")
                written += len(line) + 1
                records += 1
                if written >= size:
                    break
    return records


class HeapPeak(_Sampler):
    """Samples the JVM's heap (the driver's, which runs the tasks in local mode): ``peak``, the
    most in use (garbage included, so it grows with a job's length), and ``peak_after_gc``, the
    most left after a collection (the heap pools' usage after their last GC, summed; garbage
    promoted to the old generation counts until a collection of that generation). With
    ``live``, each sample first runs a full collection, so ``peak`` is the most the job held
    alive at the samples: its live set, which decides whether it fits (the collections slow
    the job: not a run to time). No figure (0) on Spark Connect."""

    def __init__(self, spark: Any, interval: float = 0.1, live: bool = False) -> None:
        super().__init__(interval)
        self.live = live
        jvm = getattr(spark, "_jvm", None)
        factory = jvm and jvm.java.lang.management.ManagementFactory
        self.bean = factory and factory.getMemoryMXBean()
        self.pools = factory and [
            pool
            for pool in factory.getMemoryPoolMXBeans()
            if str(pool.getType().name()) == "HEAP" and pool.getCollectionUsage() is not None
        ]
        self.peak = self.peak_after_gc = 0

    def _sample(self) -> None:
        if self.bean is None:
            return
        if self.live:
            self.bean.gc()
        self.peak = max(self.peak, int(self.bean.getHeapMemoryUsage().getUsed()))
        after_gc = sum(int(pool.getCollectionUsage().getUsed()) for pool in self.pools)
        self.peak_after_gc = max(self.peak_after_gc, after_gc)

    def __enter__(self) -> Any:
        if self.bean is not None:
            self.bean.gc()
        return super().__enter__()


def large_file_bench(
    spark: Any,
    work: Path,
    sizes: tuple[int, ...] = LARGE_FILE_BYTES,
    shapes: tuple[str, ...] = LARGE_FILE_SHAPES,
    live: bool = True,
) -> list[dict[str, Any]]:
    """Decode one landed file of each size in each shape through its decoded model alone;
    with ``live``, once more (untimed) to sample the live heap. A compressed file's size is
    its text's (``bytes``); ``compressed_bytes`` is the file's."""
    from python_udfs.project import land_files

    data = work / "large-source"
    # the files repeat these records to their size: under 64 MiB (the smoke test's files of
    # kilobytes) 2,000 generated changes serve as well as 20,000
    events = 20_000 if max(sizes) >= 2**26 else 2_000
    generate(
        data,
        events=events,
        keys=events // 40,
        batches=1,
        feeds=["pg_inventory", "sqlserver_inventory"],
    )
    (batch,) = generator.batch_folders(data)
    # the generator's few malformed records are left out: every record of the file decodes,
    # so a quarantined one is an error of the reading
    kcat_lines = [
        line
        for f in sorted((batch / "pg_inventory").iterdir())
        for line in f.read_text().splitlines()
        if json.loads(line)["payload"] not in MALFORMED
    ]
    sink_lines = [
        line
        for f in sorted((batch / "sqlserver_inventory").glob("server1.dbo.*.json.gz"))
        for line in gzip.decompress(f.read_bytes()).decode().splitlines()
        if line not in MALFORMED
    ]
    known = (
        ("kcat", "pg_inventory", "large-pg.jsonl", kcat_lines),
        ("sink", "sqlserver_inventory", "server1.dbo.orders+0+0.json", sink_lines),
        ("sink.gz", "sqlserver_inventory", "server1.dbo.orders+0+0.json.gz", sink_lines),
    )
    out = []
    home = runtime.project_dir()
    for size in sizes:
        for shape, feed, name, lines in (k for k in known if k[0] in shapes):
            source = work / "large-file" / feed
            shutil.rmtree(work / "large-file", ignore_errors=True)
            source.mkdir(parents=True)
            compressed = name.endswith(".gz")
            records = write_large_file(
                lines, source / name, size, kcat=shape == "kcat", compressed=compressed
            )
            landing = work / "landing-large"
            shutil.rmtree(landing, ignore_errors=True)
            schema = "bench_large"
            spark.sql(f"drop schema if exists {schema} cascade")
            with _world(work, landing, schema):
                land_files(feed, [source], str(landing), home)
                with HeapPeak(spark) as heap:
                    seconds = timed(lambda feed=feed: _dbt("run", "--select", f"decoded_{feed}"))
                live_peak = 0
                if live:
                    # the same decode again, its live set sampled each second
                    with HeapPeak(spark, interval=1.0, live=True) as live_heap:
                        _dbt("run", "--select", f"decoded_{feed}", "--full-refresh")
                    live_peak = live_heap.peak
                # the accounting test's count of the landed records (every non-empty line)
                landed_sql = _compiled("{{ changelake_landed_records() }}")
                with HeapPeak(spark) as count_heap:
                    started = time.perf_counter()
                    counted = spark.sql(
                        f"select sum(records_landed) from ({landed_sql}) as landed "
                        f"where feed = '{feed}'"
                    ).first()[0]
                    count_seconds = time.perf_counter() - started
            # a record's line is its place in the file, and so is its offset: the kcat lines
            # were numbered so, a sink file's name starts at offset 0
            lines_seen = spark.sql(
                f"select count(distinct landed_line), min(landed_line), max(landed_line), "
                f"count(error_reason), count_if(kafka_offset is distinct from landed_line) "
                f"from {schema}.decoded_{feed} where landed_line is not null"
            ).first()
            out.append(
                {
                    "shape": shape,
                    "bytes": size if compressed else (source / name).stat().st_size,
                    "compressed_bytes": (source / name).stat().st_size if compressed else 0,
                    "records": records,
                    "seconds": seconds,
                    "heap_peak": heap.peak,
                    "heap_after_gc": heap.peak_after_gc,
                    "heap_live": live_peak,
                    "landed_counted": counted,
                    "count_seconds": count_seconds,
                    "count_heap_peak": count_heap.peak,
                    "exact": tuple(lines_seen[:3]) == (records, 0, records - 1)
                    and lines_seen[4] == 0,
                    "errors": lines_seen[3],
                }
            )
            spark.sql(f"drop schema if exists {schema} cascade")
            shutil.rmtree(landing, ignore_errors=True)
    shutil.rmtree(work / "large-file", ignore_errors=True)
    shutil.rmtree(data, ignore_errors=True)
    return out


# --------------------------------------------------------------------------------------------
# 6. Age: many runs of equal increments
# --------------------------------------------------------------------------------------------


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


def read_seconds(spark: Any, sql: str, rounds: int = 3) -> float:
    """Median seconds to read every row of ``sql`` (written to the noop sink)."""
    return median_seconds(lambda: _noop(spark.sql(sql)), rounds)


def current_against_parquet(spark: Any, schema: str) -> tuple[int, float, float]:
    """The rows of ``schema``'s ``cdc_current``, the median seconds to read them all, and to
    read a parquet table of the same rows (made here, then dropped)."""
    copy = f"{schema}.bench_current_copy"
    spark.sql(f"drop table if exists {copy}")
    spark.sql(f"create table {copy} using parquet as select * from {schema}.cdc_current")
    rows = spark.table(copy).count()
    current = read_seconds(spark, f"select * from {schema}.cdc_current", 5)
    parquet = read_seconds(spark, f"select * from {copy}", 5)
    spark.sql(f"drop table {copy}")
    return rows, current, parquet


def _land_batches(batches: list[Path], landing: Path) -> None:
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
    with _world(work, landing, schema):
        _land_batches(batches, landing)
        _dbt("run")
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
    with _world(work, landing, schema):
        for number, batch in enumerate(batches, 1):
            _land_batches([batch], landing)
            failed = ""
            nodes: dict[str, float] = {}
            start = time.perf_counter()
            try:
                nodes = _node_seconds(_dbt("build"))
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
        out["idle"] = timed(lambda: _dbt("build"))
        out["idle_after"] = [timed(lambda: _dbt("build")) for _ in range(3)]
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


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def machine(spark: Any) -> str:
    import psutil

    java = spark.sparkContext._jvm.java.lang.System.getProperty("java.version")
    return (
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GiB RAM, "
        f"{platform.system()} {platform.machine()}, Python {platform.python_version()}, "
        f"Java {java}, Spark {spark.version} (`{spark.sparkContext.master}`)"
    )


def _mib(value: int) -> str:
    return f"{value / 2**20:,.0f} MiB"


def render(results: dict[str, Any]) -> str:
    """The benchmark's results as Markdown tables."""
    d = results["decode"]
    n = d["records"]
    lines = [
        f"Machine: {results['machine']}. Run of {results['date']}, "
        f"`changelake bench --events {results['events']}` ({results['rounds']} rounds, "
        "medians).",
        "",
        f"**Decode**, Debezium PostgreSQL with schemas, {n:,} records "
        f"(~{results['record_bytes']:,} bytes each), noop sink:",
        "",
        "| path | seconds | records/s | ratio to native |",
        "|---|---:|---:|---:|",
    ]
    bare = results["decode_schemaless"]
    for timings, name, label in (
        (d, "floor", "floor: read + write, no decoding"),
        (d, "native", "native `from_json` + SQL conversions"),
        (d, "transfer", "transfer: to the Python worker and back, no decoding"),
        (d, "udf", "ChangeLake UDF (Arrow batches, orjson, schema cache)"),
        (bare, "native", "schemaless: native `from_json`, values as sent"),
        (bare, "transfer", "schemaless: transfer, no decoding"),
        (bare, "udf", "schemaless: ChangeLake UDF"),
    ):
        seconds = timings[name]
        ratio = seconds / timings["native"]
        lines.append(f"| {label} | {seconds:.2f} | {n / seconds:,.0f} | {ratio:.2f} |")
    lines += render_python_breakdown(d["python"], bare["python"])
    lines += ["", "**Decode per feed** (UDF, every generated record of the feed):", ""]
    lines += ["| feed | format | records | seconds | records/s |", "|---|---|---:|---:|---:|"]
    for f in results["per_format"]:
        lines.append(
            f"| {f['feed']} | {f['format']} | {f['records']:,} | {f['seconds']:.2f} | "
            f"{f['records'] / f['seconds']:,.0f} |"
        )
    lines += [
        "",
        "**Pipeline** (six feeds; first build of 99% of the changes, then the last 1% "
        "incrementally, then `--full-refresh` of everything; `dbt build` without the "
        "accounting test, which is timed on its own):",
        "",
        "| changes | Kafka records | first build s | +1% incremental s | full refresh s | "
        "changes/s (full) | incremental / full | same, models only | accounting test s | "
        "expected state |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for p in results["pipeline"]:
        lines.append(
            f"| {p['events']:,} | {p['records']:,} | {p['first_build']:.1f} | "
            f"{p['incremental']:.1f} | {p['full_refresh']:.1f} | "
            f"{p['events'] / p['full_refresh']:,.0f} | "
            f"{p['incremental'] / p['full_refresh']:.2f} | "
            f"{p['incremental_models'] / p['full_models']:.2f} | "
            f"{p['accounting_test']:.1f} | {'matched' if p['matched'] else 'DIFFERS'} |"
        )
    largest = results["pipeline"][-1]
    lines += [
        "",
        f"Where the time goes at {largest['events']:,} changes, by layer (dbt node seconds, "
        "summed over the build's threads):",
        "",
    ]
    lines += ["| layer | full refresh s | +1% incremental s |", "|---|---:|---:|"]
    full, increment = largest["layers"], largest.get("incremental_layers", {})
    for layer in sorted(set(full) | set(increment), key=lambda k: -full.get(k, 0.0)):
        lines.append(f"| {layer} | {full.get(layer, 0.0):.1f} | {increment.get(layer, 0.0):.1f} |")
    for key, title in (("full_slowest", "full refresh"), ("incremental_slowest", "+1% increment")):
        if largest.get(key):
            lines += ["", f"The {title}'s slowest nodes:", ""]
            lines += ["| node | seconds |", "|---|---:|"]
            lines += [f"| `{name}` | {seconds:.1f} |" for name, seconds in largest[key]]
    lines += ["", "**Peak resident memory** during the pipeline run:", ""]
    lines += ["| changes | JVM (driver + executor) | Python UDF workers | Python driver |"]
    lines += ["|---:|---:|---:|---:|"]
    for p in results["pipeline"]:
        m = p["memory"]
        lines.append(
            f"| {p['events']:,} | {_mib(m['jvm'])} | {_mib(m['python_workers'])} | "
            f"{_mib(m['driver'])} |"
        )
    lines += render_large_files(results.get("large_files") or [])
    lines += render_decoder_goals(results)
    if results.get("age"):
        lines += render_age(results["age"], results["pipeline"][-1])
    return "\n".join(lines) + "\n"


def render_python_breakdown(schemas: dict[str, float], bare: dict[str, float]) -> list[str]:
    """Where the UDF's Python time goes, per record, with and without schema blocks."""
    lines = [
        "",
        "Where the UDF's Python time goes: microseconds a record on one core (this process, "
        f"no Spark; {schemas['records']:,} records spread evenly over the feed, best of 3). "
        "The transfer row above is the rest: the records moved to the Python workers and the "
        "results back, with Spark's conversions at both ends.",
        "",
        "| step | with schemas | schemaless |",
        "|---|---:|---:|",
    ]
    for name, label in (
        ("to_python", "Arrow columns to Python values"),
        ("parse", "key and value JSON parsed (schema blocks cut out and looked up)"),
        ("convert", "the rest of decoding: conversions, images as JSON, layout records"),
        ("to_arrow", "the results built as one Arrow array"),
        ("whole", "the whole batch, as the UDF runs it"),
    ):
        lines.append(f"| {label} | {schemas[name]:.2f} | {bare[name]:.2f} |")
    return lines


def _verdict(value: float, goal: float, at_most: bool = True) -> str:
    met = value <= goal if at_most else value >= goal
    if met:
        return "met"
    ratio = value / goal if at_most else goal / value
    # a near miss as a percentage (by 1.00x would read as met), a far one as a factor
    return (
        f"**missed** by {(ratio - 1) * 100:.1f}%" if ratio < 1.1 else f"**missed** by {ratio:.2f}x"
    )


def render_large_files(large: list[dict[str, Any]]) -> list[str]:
    """One landed file per row, decoded through its decoded model alone."""
    if not large:
        return []
    lines = [
        "",
        "**Large landed files**, one file decoded by its feed's decoded model (default driver "
        "memory):",
        "",
        "| shape | file | records | seconds | records/s | peak heap in use | peak heap after GC "
        "| peak live heap | line numbers and offsets | the accounting's count of its lines |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for f in large:
        exact = "exact" if f["exact"] else "**WRONG**"
        heaps = (f["heap_peak"], f["heap_after_gc"], f.get("heap_live", 0))
        if "landed_counted" in f:
            right = "exact" if f["landed_counted"] == f["records"] else "**WRONG**"
            counted = f"{right}, {f['count_seconds']:.1f} s, peak heap {_mib(f['count_heap_peak'])}"
        else:
            counted = "n/a"
        size = f"{f['bytes'] / 2**20:,.0f} MiB"
        if f.get("compressed_bytes"):
            size += f" of text, {f['compressed_bytes'] / 2**20:,.0f} MiB compressed"
        lines.append(
            f"| {f['shape']} | {size} | {f['records']:,} | "
            f"{f['seconds']:.1f} | {f['records'] / f['seconds']:,.0f} | "
            + " | ".join(_mib(h) if h else "n/a" for h in heaps)
            + f" | {exact} | {counted} |"
        )
    lines += [
        "",
        "Peak live heap: the same decode run again (`--full-refresh`) with a full garbage "
        "collection before each sample, once a second (those runs are not timed): what the "
        "decode holds alive, where the heap after GC above also counts garbage promoted to the "
        "old generation. The accounting's count: the landed records of the file as "
        "`assert_every_landed_record_is_accounted_for` counts them (its non-empty lines, read "
        "line by line; a compressed file's inflated in steps in the Python worker, apart from "
        "the text reader that decodes it), with the heap's peak in use while it ran. A "
        "compressed file is read in one task (gzip cannot be split): one core decodes it.",
    ]
    return lines


def render_decoder_goals(results: dict[str, Any]) -> list[str]:
    """The decoder's goals, each beside its figure; a goal this bench does not measure yet
    has its row all the same, saying so and why."""
    d = results["decode"]
    slowest = min(results["per_format"], key=lambda f: f["records"] / f["seconds"])
    largest = results["pipeline"][-1]
    rows = [
        (
            "UDF / native, Debezium PostgreSQL with schemas",
            "<= 1.00",
            d["udf"] / d["native"],
            1.0,
            True,
        ),
        (
            "UDF / native, schemaless Debezium (payloads alone)",
            "<= 1.00",
            results["decode_schemaless"]["udf"] / results["decode_schemaless"]["native"],
            1.0,
            True,
        ),
        (
            f"slowest feed's decode, records/s ({slowest['feed']})",
            ">= 100,000",
            slowest["records"] / slowest["seconds"],
            100_000,
            False,
        ),
        (
            f"full refresh at {largest['events']:,} changes, changes/s",
            ">= 20,000",
            largest["events"] / largest["full_refresh"],
            20_000,
            False,
        ),
    ]
    lines = ["", "**Decoder goals**:", "", "| goal | target | figure | |", "|---|---:|---:|---|"]
    for label, target, figure, goal, at_most in rows:
        shown = f"{figure:.2f}" if at_most else f"{figure:,.0f}"
        lines.append(f"| {label} | {target} | {shown} | {_verdict(figure, goal, at_most)} |")
    large = results.get("large_files") or []
    for shape in LARGE_FILE_SHAPES:
        runs = sorted((f for f in large if f["shape"] == shape), key=lambda f: f["bytes"])
        if len(runs) < 2 or not runs[0]["heap_after_gc"]:
            continue
        small, big = runs[0], runs[-1]
        measure = "heap_live" if small.get("heap_live") else "heap_after_gc"
        growth = big[measure] / small[measure]
        verdict = _verdict(growth, 1.5) if big["exact"] else "**missed**: line numbers or offsets"
        label = "peak live heap" if measure == "heap_live" else "peak heap after GC"
        lines.append(
            f"| a {big['bytes'] / 2**30:.1f} GiB {shape} file"
            + (" (its text)" if big.get("compressed_bytes") else "")
            + " decodes with the default driver "
            f"memory, lines and offsets exact; {label} against a {small['bytes'] / 2**20:,.0f} "
            f"MiB file | <= 1.50 | {growth:.2f} ({_mib(big[measure])}) | {verdict} |"
        )
    return lines


def render_age(age: dict[str, Any], largest: dict[str, Any]) -> list[str]:
    """The goals of a run's cost at any age, each beside its figure, and the runs behind them."""
    runs = age["runs"]
    second, last = runs[min(1, len(runs) - 1)], runs[-1]
    # (run numbers are text in saved measurements: JSON keys)
    storage = {
        int(n): runs[int(n) - 1]["storage"] / size for n, size in age["fresh"].items() if size
    }
    worst = max(storage, key=storage.get)
    increment = largest["incremental"] / largest["full_refresh"]
    failed = [r["run"] for r in runs if r.get("failed")]
    rows = [
        ("builds that failed", "0", len(failed), 0.0),
        ("last build / second build", "<= 1.20", last["seconds"] / second["seconds"], 1.2),
        (
            f"storage / fresh full refresh (worst of runs {', '.join(map(str, storage))}: "
            f"run {worst})",
            "<= 1.50",
            storage[worst],
            1.5,
        ),
        (
            "read all of cdc_current, last / second",
            "<= 1.20",
            last["current"] / second["current"],
            1.2,
        ),
        (
            "read one key's cdc_history, last / second",
            "<= 1.20",
            last["key_history"] / second["key_history"],
            1.2,
        ),
        (
            "read a typed current model, last / second",
            "<= 1.20",
            last["typed_current"] / second["typed_current"],
            1.2,
        ),
        (
            f"+1% increment / full refresh at {largest['events']:,} changes",
            "<= 0.10",
            increment,
            0.1,
        ),
        (
            "`dbt build` with nothing new, seconds (warm session), right after the last run "
            "(with the maintenance it left due)",
            "< 10",
            age["idle"],
            10.0,
        ),
        # measurements saved before the three builds after it were taken have the first alone
        *(
            [
                (
                    "`dbt build` with nothing new, seconds (warm session), median of the three "
                    "builds after that one",
                    "< 10",
                    statistics.median(age["idle_after"]),
                    10.0,
                )
            ]
            if age.get("idle_after")
            else []
        ),
        (
            "read cdc_current / scan a parquet table of its rows, after the age runs"
            + (f" ({age['current_rows']:,} rows)" if "current_rows" in age else ""),
            "<= 1.50",
            age["current_read"] / age["parquet_read"],
            1.5,
        ),
    ]
    if "current_read" in largest:
        rows.append(
            (
                f"read cdc_current / scan a parquet table of its rows, at "
                f"{largest['events']:,} changes after the +1% ({largest['current_rows']:,} rows, "
                f"{largest['current_read']:.2f} s against {largest['parquet_read']:.2f} s)",
                "<= 1.50",
                largest["current_read"] / largest["parquet_read"],
                1.5,
            )
        )
    lines = [
        "",
        f"**Age**: {age['runs_count']} consecutive `dbt build` runs (tests included), each "
        f"after landing {age['increment']:,} more changes of one world"
        + (
            f" that ages without growing (customers and orders held at about "
            f"{age['steady_keys']:,} live rows a table and feed)"
            if "steady_keys" in age
            else ""
        )
        + "; expected state "
        f"{'matched' if age['matched'] else 'DIFFERS'} after the last.",
        "",
        "| goal | target | figure | |",
        "|---|---:|---:|---|",
    ]
    for label, target, figure, goal in rows:
        if isinstance(figure, int):  # a count: its goal is none
            verdict = f"**missed**: runs {', '.join(map(str, failed))}" if figure else "met"
            lines.append(f"| {label} | {target} | {figure} | {verdict} |")
        else:
            lines.append(f"| {label} | {target} | {figure:.2f} | {_verdict(figure, goal)} |")
    step = max(1, len(runs) // 10)
    shown = sorted({*range(0, len(runs), step), len(runs) - 1})
    lines += [
        "",
        "| run | build s | storage MiB | history store partitions | cdc_current read s "
        "| one key's history s | typed current s | driver heap after GC, MiB |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for i in shown:
        r = runs[i]
        mark = " (failed)" if r.get("failed") else ""
        lines.append(
            f"| {r['run']}{mark} | {r['seconds']:.1f} | {r['storage'] / 2**20:.1f} | "
            f"{r.get('history_partitions') or '-'} | {r['current']:.3f} | "
            f"{r['key_history']:.3f} | {r['typed_current']:.3f} | {r.get('heap', 0):.0f} |"
        )
    lines += [f"\nRun {r['run']} failed: {r['failed']}" for r in runs if r.get("failed")]
    lines += _render_age_medians(runs)
    if second.get("nodes") and last.get("nodes"):
        lines += [
            "",
            f"Where an age build's time goes, run {second['run']} against run {last['run']} "
            "(dbt node seconds by layer; 'outside nodes' is the rest of the build's wall time: "
            "parsing, run hooks, compiling):",
            "",
            f"| layer | run {second['run']} s | run {last['run']} s | last / second |",
            "|---|---:|---:|---:|",
        ]
        layers = sorted(
            set(second["nodes"]) | set(last["nodes"]), key=lambda k: -last["nodes"].get(k, 0.0)
        )
        for layer in layers:
            before, after = second["nodes"].get(layer, 0.0), last["nodes"].get(layer, 0.0)
            ratio = f"{after / before:.2f}" if before else "-"
            lines.append(f"| {layer} | {before:.1f} | {after:.1f} | {ratio} |")
    return lines


def _render_age_medians(runs: list[dict[str, Any]]) -> list[str]:
    """The age runs' figures as medians of ten runs early (from the second) and the last ten:
    one build or read against one other compares two draws, each off by a fifth or more."""
    if len(runs) < 12:
        return []
    early, late = runs[1:11], runs[-10:]
    lines = [
        "",
        f"The same figures as medians of runs {early[0]['run']}-{early[-1]['run']} and "
        f"{late[0]['run']}-{late[-1]['run']}:",
        "",
        f"| figure | runs {early[0]['run']}-{early[-1]['run']} "
        f"| runs {late[0]['run']}-{late[-1]['run']} | late / early |",
        "|---|---:|---:|---:|",
    ]
    for label, key in (
        ("build s", "seconds"),
        ("cdc_current read s", "current"),
        ("one key's history s", "key_history"),
        ("typed current s", "typed_current"),
    ):
        before = statistics.median(r[key] for r in early)
        after = statistics.median(r[key] for r in late)
        lines.append(f"| {label} | {before:.2f} | {after:.2f} | {after / before:.2f} |")
    # the reads per row returned (measurements saved before rows were counted have none):
    # (label, read, whether the figure is microseconds a row rather than the row count)
    for label, key, per_row in (
        ("cdc_current rows", "current", False),
        ("cdc_current read, microseconds a row", "current", True),
        ("one key's history rows", "key_history", False),
        ("typed current rows", "typed_current", False),
        ("typed current read, microseconds a row", "typed_current", True),
    ):
        if any(f"{key}_rows" not in r for r in early + late):
            continue

        def figure(r: dict[str, Any], key: str = key, per_row: bool = per_row) -> float:
            rows = r[f"{key}_rows"]
            return r[key] * 1e6 / max(1, rows) if per_row else rows

        before = statistics.median(figure(r) for r in early)
        after = statistics.median(figure(r) for r in late)
        shown = ".2f" if per_row else ",.0f"
        lines.append(
            f"| {label} | {before:{shown}} | {after:{shown}} | {after / max(before, 1e-9):.2f} |"
        )
    return lines


def write_readme(readme: Path, table: str) -> None:
    text = readme.read_text()
    start, end = text.index(README_START), text.index(README_END)
    readme.write_text(text[: start + len(README_START)] + "\n" + table + text[end:])


def run(
    spark: Any,
    work: Path,
    events: int,
    rounds: int,
    age_runs: int = 50,
    age_increment: int = 2_000,
    tenth: bool = True,
    large_file_sizes: tuple[int, ...] = LARGE_FILE_BYTES,
) -> dict[str, Any]:
    """Every measurement, in order; returns the results ``render`` formats. ``tenth=False``
    leaves out the pipeline at a tenth of the size (the smoke test's shortcut)."""
    work.mkdir(parents=True, exist_ok=True)
    pg = work / "decode-pg"
    generate(pg, events=events, keys=max(50, events // 20), batches=1, feeds=["pg_inventory"])
    pg_files = sorted(str(p) for p in pg.glob("batch-*/pg_inventory/pg_server.public.*"))
    record_bytes = sum(os.path.getsize(p) for p in pg_files) // max(1, events)
    from python_udfs.spark_udfs import decode_types

    runtime.log(f"bench: decoding {events} PostgreSQL records")
    decode = decode_bench(spark, pg_files, rounds)
    runtime.log(
        f"bench: decode floor {decode['floor']:.1f} s, native {decode['native']:.1f} s, "
        f"UDF {decode['udf']:.1f} s ({decode['udf'] / decode['native']:.2f}x native)"
    )
    arrow_type = decode_types(spark)[1]
    decode["python"] = python_breakdown(pg_files, arrow_type)
    runtime.log("bench: decoding the same records without schema blocks")
    schemaless_files = schemaless_lines(spark, pg_files, work / "decode-pg-schemaless")
    schemaless = decode_bench(spark, schemaless_files, rounds, False)
    schemaless["python"] = python_breakdown(schemaless_files, arrow_type)
    runtime.log(
        f"bench: schemaless: native {schemaless['native']:.1f} s, UDF {schemaless['udf']:.1f} s "
        f"({schemaless['udf'] / schemaless['native']:.2f}x native)"
    )
    shutil.rmtree(pg, ignore_errors=True)
    shutil.rmtree(work / "decode-pg-schemaless", ignore_errors=True)
    results: dict[str, Any] = {
        "machine": machine(spark),
        "date": time.strftime("%Y-%m-%d"),
        "events": events,
        "rounds": rounds,
        "record_bytes": record_bytes,
        "decode": decode,
        "decode_schemaless": schemaless,
        "pipeline": [],
    }
    sizes = ((max(1000, events // 10), "tenth"), (events, "full"))
    for size, label in sizes if tenth else sizes[1:]:
        runtime.log(f"bench: pipeline over {size} changes")
        p = pipeline_bench(spark, work, size, label)
        results["pipeline"].append(p)
        runtime.log(
            f"bench: {size} changes: first build {p['first_build']:.1f} s, +1% "
            f"{p['incremental']:.1f} s, full refresh {p['full_refresh']:.1f} s "
            f"({p['incremental'] / p['full_refresh']:.2f}), accounting {p['accounting_test']:.1f} s"
        )
    runtime.log("bench: decode per feed")
    results["per_format"] = per_format_bench(spark, work / "data-full", rounds)
    rates = [f"{f['feed']} {f['records'] / f['seconds']:,.0f}" for f in results["per_format"]]
    runtime.log("bench: decode per feed, records/s: " + ", ".join(rates))
    runtime.log("bench: large landed files")
    results["large_files"] = large_file_bench(spark, work, large_file_sizes)
    for f in results["large_files"]:
        runtime.log(
            f"bench: a {f['bytes'] / 2**20:,.0f} MiB {f['shape']} file: {f['seconds']:.1f} s, "
            f"heap peak {f['heap_peak'] / 2**20:,.0f} MiB, lines and offsets exact: {f['exact']}"
        )
    if age_runs:
        runtime.log(f"bench: {age_runs} runs of {age_increment} changes each")
        results["age"] = age_bench(spark, work, age_runs, age_increment)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="changelake bench", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="changes (default 1M)")
    parser.add_argument("--large", action="store_true", help="10M changes")
    parser.add_argument("--rounds", type=int, default=3, help="decode rounds (medians)")
    parser.add_argument("--age-runs", type=int, default=50, help="runs of the age section")
    parser.add_argument(
        "--age-increment", type=int, default=2_000, help="changes landed before each age run"
    )
    parser.add_argument(
        "--write-readme", action="store_true", help="write the tables into README.md"
    )
    parser.add_argument(
        "--render",
        metavar="RESULTS",
        type=Path,
        help="measure nothing: render the tables of a run's saved measurements (the "
        "bench-results.json it wrote)",
    )
    opts = parser.parse_args(argv)
    events = 10_000_000 if opts.large else opts.events
    from python_udfs.project import RUNTIME

    home = runtime.project_dir()
    if opts.render:
        _show(render(json.loads(opts.render.read_text())), home, opts.write_readme)
        return 0
    os.environ.setdefault("CHANGELAKE_HOME", str(home))
    RUNTIME.start(home, home / "profiles", os.environ.get("DBT_TARGET"))
    work = runtime.state_dir(home) / "bench"
    results = run(RUNTIME.session, work, events, opts.rounds, opts.age_runs, opts.age_increment)
    # the measurements as they are, kept before rendering (a failed render loses none)
    saved = runtime.state_dir(home) / "bench-results.json"
    saved.write_text(json.dumps(results, indent=1, default=str))
    print(f"wrote the measurements to {saved}")
    _show(render(results), home, opts.write_readme)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _show(table: str, home: Path, into_readme: bool) -> None:
    """Print the tables and, with ``into_readme``, write them into the project's README."""
    print(table)
    if into_readme:
        write_readme(home / "README.md", table)
        print(f"wrote the benchmark section of {home / 'README.md'}")
