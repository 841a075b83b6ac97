"""ChangeLake's envelope decoders: every CDC envelope format into one common column layout.

Public API
----------
decode(envelope_format, key, value, headers=None) -> list[dict]
    The pure decoder for one Kafka record (no Spark). Records follow
    :data:`python_udfs.layout.FIELDS`.
ENVELOPE_FORMATS
    The envelope format names ``decode`` accepts.
register_udfs(spark)
    Register every ChangeLake UDF on a SparkSession (see :mod:`python_udfs.spark_udfs`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from python_udfs import debezium
from python_udfs.layout import FIELD_NAMES, FIELDS, SPARK_SCHEMA, error_record

Headers = Sequence[tuple[str, "str | None"]] | None
Decoder = Callable[["str | None", "str | None", Any], list[dict[str, Any]]]

_DECODERS: dict[str, Decoder] = {
    "debezium": debezium.decode,
}

ENVELOPE_FORMATS: tuple[str, ...] = tuple(sorted(_DECODERS))


def decode(
    envelope_format: str, key: str | None, value: str | None, headers: Headers = None
) -> list[dict[str, Any]]:
    """Decode one Kafka record of ``envelope_format`` into common-layout records.

    Never raises: an unknown format or an undecodable record gives one record whose
    ``decode_error`` says why.
    """
    decoder = _DECODERS.get(envelope_format)
    if decoder is None:
        return [
            error_record(
                str(envelope_format),
                f"unknown envelope format {envelope_format!r}; "
                f"known: {', '.join(ENVELOPE_FORMATS)}",
            )
        ]
    return decoder(key, value, list(headers) if headers else None)


def register_udfs(spark: Any) -> list[str]:
    """Register every ChangeLake UDF on ``spark``; return their SQL names."""
    from python_udfs.spark_udfs import register

    return register(spark)


__all__ = [
    "ENVELOPE_FORMATS",
    "FIELDS",
    "FIELD_NAMES",
    "SPARK_SCHEMA",
    "decode",
    "register_udfs",
]
