"""ChangeLake's envelope decoders: every CDC envelope format into one common column layout.

Public API
----------
decode(envelope_format, key, value, headers=None) -> list[dict]
    The pure decoder for one Kafka record (no Spark). Records follow
    :data:`python_udfs.layout.FIELDS`.
ENVELOPE_FORMATS
    The envelope format names ``decode`` accepts.
register_udfs(spark)
    Register every ChangeLake UDF on a SparkSession (see :mod:`python_udfs.spark_udfs`), and the
    table functions and the data source that list, count and read landed files
    (:mod:`python_udfs.landed`).
"""

from __future__ import annotations

from typing import Any

from python_udfs.layout import FIELD_NAMES, FIELDS, SPARK_SCHEMA
from python_udfs.registry import ENVELOPE_FORMATS, decode, decode_unchecked, parse_format


def register_udfs(spark: Any) -> list[str]:
    """Register every ChangeLake UDF, the table functions that list and count landed files and
    the data source ``changelake_landed`` on ``spark``; return the functions' SQL names."""
    from python_udfs import landed, spark_udfs

    return spark_udfs.register(spark) + landed.register(spark)


__all__ = [
    "ENVELOPE_FORMATS",
    "FIELDS",
    "FIELD_NAMES",
    "SPARK_SCHEMA",
    "decode",
    "decode_unchecked",
    "parse_format",
    "register_udfs",
]
