"""Thin Spark wrappers around the pure decoders; the return type is declared once, here.

SQL usage (after ``register``)::

    select changelake_decode('debezium', key, payload, headers) as changes from raw
    select changelake_versions(collect_list(struct(change_id, op, position, ...))) from changes

``headers`` is the flat kcat list ``[name1, value1, name2, value2, ...]`` (array<string>).
"""

from __future__ import annotations

from typing import Any

from python_udfs.layout import FIELD_NAMES, SPARK_SCHEMA

UDF_NAMES = ("changelake_decode", "changelake_versions")


def _pairs(headers: list[str | None] | None) -> list[tuple[str, str | None]] | None:
    if not headers:
        return None
    return [(str(headers[i]), headers[i + 1]) for i in range(0, len(headers) - 1, 2)]


def decode_row(
    envelope_format: str, key: str | None, value: str | None, headers: list[str | None] | None
) -> list[tuple[Any, ...]]:
    """Decode one record into tuples in layout order (what the UDF returns)."""
    from python_udfs import decode

    records = decode(envelope_format, key, value, _pairs(headers))
    return [tuple(r[name] for name in FIELD_NAMES) for r in records]


def register(spark: Any) -> list[str]:
    """Register the decode UDF on ``spark`` (classic or Spark Connect) as Arrow-batched."""
    from pyspark.sql.functions import udf

    from python_udfs.scd2 import VERSIONS_SCHEMA, versions_row

    decode_udf = udf(decode_row, returnType=SPARK_SCHEMA, useArrow=True)
    spark.udf.register("changelake_decode", decode_udf)
    versions_udf = udf(versions_row, returnType=VERSIONS_SCHEMA, useArrow=True)
    spark.udf.register("changelake_versions", versions_udf)
    return list(UDF_NAMES)
