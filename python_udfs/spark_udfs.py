"""Thin Spark wrappers around the pure decoders; the return type is declared once, here.

SQL usage (after ``register``)::

    select changelake_decode('debezium', key, payload, headers) as changes from raw
    select changelake_versions(collect_list(struct(change_id, op, position, ...))) from changes
    select changelake_folder_exists('s3://bucket/landing/pg_inventory')

``headers`` is the flat kcat list ``[name1, value1, name2, value2, ...]`` (array<string>).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from python_udfs.filesystems import folder_exists
from python_udfs.layout import SPARK_SCHEMA
from python_udfs.registry import decode_unchecked, header_pairs, parse_format

UDF_NAMES = (
    "changelake_decode",
    "changelake_versions",
    "changelake_folder_exists",
)


def decode_batch(
    envelope_format: pa.Array,
    key: pa.Array,
    value: pa.Array,
    headers: pa.Array,
    arrow_type: pa.DataType,
) -> pa.Array:
    """Decode one Arrow batch of records into one Arrow array of change-record lists.

    The records leave Arrow as Python values once (``to_pylist``), and the decoded dicts go
    back in one ``pa.array`` call, whose conversion runs in pyarrow's C++ rather than per
    value in Python (faster than a row-at-a-time Arrow UDF: docs/decisions.md).
    """
    with _without_cycle_collection():
        formats, *rest = (a.to_pylist() for a in (envelope_format, key, value, headers))
        decoded = [
            decode_unchecked(f, k, v, header_pairs(h))
            for f, k, v, h in zip(formats, *rest, strict=True)
        ]
        try:
            return pa.array(decoded, type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            # some record has a field of the wrong type: one bad message must not fail the batch
            return pa.array(_conformed(decoded, formats, arrow_type), type=arrow_type)


@contextlib.contextmanager
def _without_cycle_collection() -> Iterator[None]:
    """Python's cycle collector paused while a batch decodes. Decoding makes some ten dicts and
    lists a record, and every 700 of them start a collection (now and then one that walks
    every object the worker holds); they form no cycles and are freed by reference counting
    when the batch is done, so those collections find nothing but cost time (docs/decisions.md).
    The collector is left as it was found and resumes on its own thresholds."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _conformed(
    decoded: list[list[dict[str, Any]]], formats: list[str | None], arrow_type: pa.DataType
) -> list[list[dict[str, Any]]]:
    """Each Kafka record's decoded records, or its one error record where a field does not
    have its layout type (or, failing that check, Arrow cannot convert them)."""
    from python_udfs.layout import conform, error_record

    out = []
    for records, envelope_format in zip(decoded, formats, strict=True):
        name = parse_format(str(envelope_format))[0]
        records = conform(records, name)
        try:
            pa.array([records], type=arrow_type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            records = [error_record(name, f"not convertible to the layout: {exc}"[:1000])]
        out.append(records)
    return out


def decode_types(spark: Any) -> tuple[Any, pa.DataType]:
    """The decode UDF's return type in Spark and in Arrow (timestamps in the session's zone)."""
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import _parse_datatype_string

    spark_type = _parse_datatype_string(SPARK_SCHEMA)
    zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    return spark_type, to_arrow_type(spark_type, timezone=zone)


def register(spark: Any) -> list[str]:
    """Register the UDFs on ``spark`` (classic or Spark Connect); both run on Arrow batches."""
    from pyspark.sql.functions import arrow_udf, udf

    from python_udfs.scd2 import VERSIONS_SCHEMA, versions_row

    spark_type, arrow_type = decode_types(spark)

    def changelake_decode(
        envelope_format: pa.Array, key: pa.Array, value: pa.Array, headers: pa.Array
    ) -> pa.Array:
        return decode_batch(envelope_format, key, value, headers, arrow_type)

    spark.udf.register("changelake_decode", arrow_udf(changelake_decode, spark_type))
    versions_udf = udf(versions_row, returnType=VERSIONS_SCHEMA, useArrow=True)
    spark.udf.register("changelake_versions", versions_udf)
    exists_udf = udf(folder_exists, returnType="boolean", useArrow=True)
    spark.udf.register("changelake_folder_exists", exists_udf)
    return list(UDF_NAMES)
