"""Section 1: decode of the Debezium PostgreSQL feed, against native Spark, and per feed."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from python_udfs.bench.measure import median_seconds, noop, timed
from python_udfs.debezium import NAMED_TYPES
from python_udfs.generator.world import ADDED_COLUMN, TABLES

KCAT_SCHEMA = (
    "struct<topic: string, partition: int, offset: bigint, headers: array<string>, "
    "key: string, payload: string>"
)


def _native_type(kind: str) -> str:
    return {
        "int": "int",
        "long": "bigint",
        "bool": "boolean",
        "double": "double",
        "date": "int",
        "timestamp": "bigint",
    }.get(kind, "string")


def _native_column(column: str, kind: str, schemas: bool = True, image: str = "after") -> str:
    """SQL turning one Debezium PostgreSQL payload column into the UDF's canonical value;
    without schemas, the value as sent (the UDF has no type to convert it by either)."""
    ref = f"m.payload.{image}.`{column}`" if schemas else f"m.{image}.`{column}`"
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


def _feed_columns(schemas: bool) -> tuple[dict[str, str], str]:
    """The generated tables' columns (name to generator kind) and the Spark struct fields an
    image of any of them is read with (a decimal without schemas is the text sent)."""
    columns: dict[str, str] = {}
    for spec in TABLES.values():
        columns.update(dict(spec["columns"]))
    _, added, added_kind = ADDED_COLUMN
    columns[added] = added_kind
    row = ", ".join(
        f"`{c}`: {_native_type(k) if schemas or not k.startswith('decimal') else 'string'}"
        for c, k in columns.items()
    )
    return columns, row


def native_debezium_sql(lines: str, schemas: bool = True) -> str:
    """The native Spark SQL decode of the generated PostgreSQL feed, over view ``lines``: with
    the Connect ``schema`` blocks (values converted by their logical types), or without
    (``schemas.enable=false``: the payload alone, values as sent)."""
    columns, row = _feed_columns(schemas)
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


_SNAPSHOT_FLAGS = (
    "'true', 'first', 'first_in_data_collection', 'last', 'last_in_data_collection', 'incremental'"
)


def native_debezium_layout_sql(lines: str, schemas: bool = True) -> str:
    """The native Spark SQL decode of the generated PostgreSQL feed into the columns the
    layout holds, as a Spark user who needs them writes it: both images, the key and its
    column names, the column types from the schema block, the unavailable (TOAST) columns, a
    changed key, positions, times, the snapshot flag and the kind of each record."""
    columns, row = _feed_columns(schemas)
    key_fields = ("id", "order_number", "line_number")
    payload = (
        f"struct<before: struct<{row}>, after: struct<{row}>, "
        "source: struct<connector: string, name: string, db: string, schema: string, "
        "`table`: string, txId: bigint, lsn: bigint, ts_ms: bigint, snapshot: string>, "
        "op: string, ts_ms: bigint, transaction: struct<id: string>>"
    )
    key = "struct<" + ", ".join(f"{c}: int" for c in key_fields) + ">"
    column_schema = (
        "struct<field: string, type: string, name: string, parameters: map<string, string>>"
    )
    value_schema = (
        "struct<schema: struct<fields: array<struct<field: string, "
        f"fields: array<{column_schema}>>>>, payload: {payload}>"
        if schemas
        else payload
    )
    key_schema = (
        f"struct<schema: struct<fields: array<struct<field: string>>>, payload: {key}>"
        if schemas
        else key
    )
    m = "m.payload" if schemas else "m"
    k = "k.payload" if schemas else "k"
    named = " ".join(f"when '{name}' then '{kind}'" for name, kind in NAMED_TYPES.items())
    type_name = (
        "case when c.name = 'org.apache.kafka.connect.data.Decimal' then concat('decimal(', "
        "coalesce(c.parameters['connect.decimal.precision'], '*'), ',', "
        f"coalesce(c.parameters['scale'], '0'), ')') else coalesce(case c.name {named} end, "
        "lower(c.type)) end"
    )
    column_types = (
        "map_from_entries(transform(filter(m.schema.fields, f -> f.field = 'after')[0].fields, "
        f"c -> struct(c.field, {type_name})))"
        if schemas
        else "cast(null as map<string, string>)"
    )
    key_columns = (
        "transform(k.schema.fields, f -> f.field)"
        if schemas
        else f"filter(array({', '.join(repr(c) for c in key_fields)}), "
        f"c -> get_json_object(r.key, concat('$.', c)) is not null)"
    )

    def image(name: str) -> str:
        values = ", ".join(
            f"'{c}', {_native_column(c, kind, schemas, name)}" for c, kind in columns.items()
        )
        return f"if({m}.{name} is null, null, to_json(named_struct({values})))"

    def toast(name: str) -> str:
        found = ", ".join(
            f"if({m}.{name}.`{c}` = '__debezium_unavailable_value', '{c}', null)"
            for c, kind in columns.items()
            if kind == "string"
        )
        return f"filter(array({found}), x -> x is not null)"

    def header_key(name: str) -> str:
        # a primary-key change's other key, in the kcat headers [name, value, ...]
        at = f"array_position(r.headers, '{name}')"
        text = f"if({at} > 0, element_at(r.headers, cast({at} + 1 as int)), null)"
        # a header keeps its Connect envelope whatever the value's converter does
        return (
            f"to_json(coalesce(from_json({text}, 'struct<payload: {key}>').payload, "
            f"from_json({text}, '{key}')))"
        )

    changed = " or ".join(
        f"not ({m}.before.`{c}` <=> {m}.after.`{c}`)" for c in key_fields if c in columns
    )
    return f"""
        select
            'debezium' as envelope_format,
            0 as row_index,
            {m}.source.connector as source_engine,
            {m}.source.name as source_name,
            {m}.source.db as database_name,
            {m}.source.schema as schema_name,
            {m}.source.`table` as table_name,
            case
                when r.payload is null then 'tombstone'
                when {m}.op in ('c', 'u', 'd', 'r') then 'row'
                when {m}.op = 't' then 'truncate'
                when {m}.op = 'm' then 'message'
            end as kind,
            if({m}.op in ('c', 'u', 'd', 'r'), {m}.op, null) as op,
            {m}.op as op_raw,
            to_json({k}) as key_json,
            {key_columns} as key_columns,
            {image("before")} as before_json,
            {image("after")} as after_json,
            nullif(if(size({toast("after")}) > 0, {toast("after")}, {toast("before")}), array())
                as unavailable_columns,
            {column_types} as column_types,
            case {m}.op
                when 'c' then {header_key("__debezium.oldkey")}
                when 'd' then {header_key("__debezium.newkey")}
                when 'u' then if({m}.before is not null and ({changed}), to_json(named_struct(
                    {", ".join(f"'{c}', {m}.before.`{c}`" for c in key_fields)})), null)
            end as linked_key_json,
            timestamp_millis({m}.source.ts_ms) as committed_at,
            timestamp_millis({m}.ts_ms) as captured_at,
            coalesce({m}.transaction.id, cast({m}.source.txId as string)) as transaction_id,
            lpad(cast({m}.source.lsn as string), 20, '0') as position,
            lower({m}.source.snapshot) in ({_SNAPSHOT_FLAGS}) as is_snapshot
        from (
            select r, from_json(r.payload, '{value_schema}') as m,
                from_json(r.key, '{key_schema}') as k
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
    """Seconds (medians) of floor, native from_json (the after image alone, and every column
    of the layout), the transfer to Python and back without decoding, the UDF over the text
    rows and the reader over the PostgreSQL feed."""
    lines = spark.read.text(files)
    view = "bench_pg_lines" if schemas else "bench_pg_schemaless_lines"
    lines.createOrReplaceTempView(view)
    native = spark.sql(native_debezium_sql(view, schemas))
    native_layout = spark.sql(native_debezium_layout_sql(view, schemas))
    _register_transfer_udf(spark)
    records = f"from (select from_json(value, '{KCAT_SCHEMA}') as r from {view})"
    udf, transfer = (
        spark.sql(f"select {name}('debezium', r.key, r.payload, r.headers) as changes {records}")
        for name in ("changelake_decode", "changelake_bench_transfer")
    )
    reader = reader_frame(spark, files, "debezium")
    noop(lines)  # warm the file listing and the Python workers once
    noop(udf.limit(1000))
    return {
        "records": lines.count(),
        "floor": median_seconds(lambda: noop(lines), rounds),
        "native": median_seconds(lambda: noop(native), rounds),
        "native_layout": median_seconds(lambda: noop(native_layout), rounds),
        "transfer": median_seconds(lambda: noop(transfer), rounds),
        "udf": median_seconds(lambda: noop(udf), rounds),
        "reader": median_seconds(lambda: noop(reader), rounds),
    }


def reader_frame(spark: Any, files: list[str], envelope_format: str) -> Any:
    """The decoded models' reader over ``files``: the data source ``changelake_landed`` (the
    Python workers open the files, split the lines and decode them)."""
    listed = [[path, os.path.getsize(path), 0] for path in files]
    return (
        spark.read.format("changelake_landed")
        .option("files", json.dumps(listed))
        .option("format", envelope_format)
        .option("shape", "auto")
        .load()
    )


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

    from python_udfs import debezium
    from python_udfs.registry import decode_unchecked, header_pairs
    from python_udfs.spark_udfs import decode_batch
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
        return [decode_unchecked("debezium", k, v, header_pairs(h)) for k, v, h in rows]

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
    """Decode seconds per generated feed (all batches), as its decoded model reads it: the
    data source over its files (kcat lines, or Connect sink files, told by their names)."""
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
        frame = reader_frame(spark, files, envelope)
        records = spark.read.text(files).count()
        seconds = median_seconds(lambda frame=frame: noop(frame), rounds)
        out.append({"feed": feed, "format": envelope, "records": records, "seconds": seconds})
    return out
