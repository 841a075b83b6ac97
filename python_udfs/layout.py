"""The common column layout every decoder emits: defined once, here.

Each decoder returns a list of plain dicts with exactly the keys of :data:`FIELDS`. The Spark
UDF's return type (:data:`SPARK_SCHEMA`) and the dbt docs are generated from the same list.

Representation of row images (``key_json``, ``before_json``, ``after_json``)
----------------------------------------------------------------------------
A JSON object as text, column names as in the source, with one canonical encoding per type so
that equal values always render equally and nothing is lost:

- integers, booleans, floats, strings: JSON natives;
- decimals: the exact decimal digits as a JSON string (``"1234.50"``), never a float;
- dates ``"YYYY-MM-DD"``; times ``"HH:MM:SS[.f...]"``; timestamps without zone
  ``"YYYY-MM-DDTHH:MM:SS[.f...]"``; timestamps with zone keep their offset (``...Z``/``+08:00``);
- bytes: base64 text; JSON columns: their JSON text as a string;
- SQL NULL is JSON ``null``; a column absent from the image is absent from the object;
- a column whose value the source did not send (PostgreSQL TOAST) is left out of the image and
  listed in ``unavailable_columns``.

``column_types`` maps each column to its type as the envelope declares it (``int32``,
``decimal(10,2)``, ``timestamp``, ``timestamptz``, ``bytes``, ``json``, ...), when it declares one.
JSON text moves through Arrow as one string per image, which is the cheapest representation for
the Python to JVM hop; the SQL models parse it (``parse_json``/``from_json``) where they need to.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

# (name, Spark SQL type, description)
FIELDS: tuple[tuple[str, str, str], ...] = (
    # lineage (feed, topic, partition and offset are added by the decoded model from the raw record)
    (
        "envelope_format",
        "string",
        "Envelope format the record was decoded as (debezium, canal, ...).",
    ),
    (
        "row_index",
        "int",
        "Index of this change within its Kafka message (Canal carries several rows).",
    ),
    # what
    (
        "source_engine",
        "string",
        "Source database engine: postgresql, mysql, sqlserver, oracle, ...",
    ),
    ("source_name", "string", "Logical source or server name (Debezium topic prefix, server)."),
    ("database_name", "string", "Source database."),
    ("schema_name", "string", "Source schema (PostgreSQL, SQL Server); null where none."),
    ("table_name", "string", "Source table."),
    # kind
    ("kind", "string", "row, truncate, ddl, message, heartbeat, transaction or tombstone."),
    (
        "op",
        "string",
        "For kind = row: canonical c (insert), u (update), d (delete), r (snapshot read).",
    ),
    ("op_raw", "string", "The operation exactly as the envelope sent it."),
    # data
    ("key_json", "string", "Primary-key columns and values as a JSON object."),
    ("key_columns", "array<string>", "Primary-key column names, in key order."),
    ("before_json", "string", "Row image before the change, JSON object (see layout docs)."),
    ("after_json", "string", "Row image after the change, JSON object (see layout docs)."),
    (
        "unavailable_columns",
        "array<string>",
        "Columns whose value the source did not send (TOAST).",
    ),
    ("column_types", "map<string,string>", "Column name to type, as declared by the envelope."),
    (
        "linked_key_json",
        "string",
        "PK change: on the insert the old key, on the delete the new key.",
    ),
    # order
    ("committed_at", "timestamp", "Source commit time of the change (UTC)."),
    ("captured_at", "timestamp", "Time the capture process handled the change (UTC)."),
    ("transaction_id", "string", "Source transaction id."),
    ("position", "string", "Sortable log position within one source (fixed-width text)."),
    # extras
    ("is_snapshot", "boolean", "True for changes read by an initial snapshot."),
    ("ddl", "string", "DDL statement text, for kind = ddl."),
    ("message_prefix", "string", "Logical decoding message prefix, for kind = message."),
    ("message_content", "binary", "Logical decoding message content, for kind = message."),
    ("decode_error", "string", "Null when decoded; otherwise what is wrong and where."),
)

FIELD_NAMES: tuple[str, ...] = tuple(name for name, _, _ in FIELDS)

SPARK_SCHEMA: str = "array<struct<" + ", ".join(f"{n}: {t}" for n, t, _ in FIELDS) + ">>"


_EMPTY_RECORD: dict[str, Any] = dict.fromkeys(FIELD_NAMES)


def record(**values: Any) -> dict[str, Any]:
    """Return a layout record: every field present, unknown names rejected (a name not in
    the layout makes the record longer than the layout)."""
    out = _EMPTY_RECORD.copy()
    out.update(values)
    if len(out) != len(_EMPTY_RECORD):
        unknown = sorted(out.keys() - _EMPTY_RECORD.keys())
        raise KeyError(f"not in the common layout: {unknown}")
    return out


def error_record(envelope_format: str, reason: str) -> dict[str, Any]:
    """Return the single record a decoder emits for a Kafka record it cannot decode."""
    return record(envelope_format=envelope_format, row_index=0, kind="error", decode_error=reason)


_INT32 = range(-(2**31), 2**31)


def _is_text_list(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _is_text_map(value: Any) -> bool:
    return type(value) is dict and all(
        type(k) is str and (v is None or type(v) is str) for k, v in value.items()
    )


# the Python value each Spark type of the layout takes (None is always allowed)
_CONFORMS: dict[str, Any] = {
    "string": lambda v: type(v) is str,
    "int": lambda v: type(v) is int and v in _INT32,
    "boolean": lambda v: type(v) is bool,
    "timestamp": lambda v: isinstance(v, dt.datetime),
    "binary": lambda v: type(v) is bytes,
    "array<string>": _is_text_list,
    "map<string,string>": _is_text_map,
}
_FIELD_CHECKS = tuple((name, spark_type, _CONFORMS[spark_type]) for name, spark_type, _ in FIELDS)


def nonconforming(rec: dict[str, Any]) -> str | None:
    """What is wrong with ``rec`` against the layout (a field of the wrong type), or None."""
    for name, spark_type, conforms in _FIELD_CHECKS:
        value = rec.get(name)
        if value is not None and not conforms(value):
            shown = repr(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return f"{name} is not {spark_type}: {shown} ({type(value).__name__})"
    return None


def conform(records: list[dict[str, Any]], envelope_format: str) -> list[dict[str, Any]]:
    """``records`` when every field has its layout type; otherwise the one error record of the
    Kafka record, naming the first field that does not (an envelope field of an unexpected
    JSON type, say a number where a table name belongs)."""
    for rec in records:
        problem = nonconforming(rec)
        if problem is not None:
            return [error_record(envelope_format, f"layout field {problem}")]
    return records


def docs_markdown() -> str:
    """The dbt doc blocks of the layout's columns (``models/_layout__docs.md``), one per field.

    The layout is defined here; the docs site's column descriptions are generated from it, and
    a test keeps the committed file equal to this output.
    """
    blocks = [
        "{#- Generated from python_udfs/layout.py by `changelake layout-docs`; do not edit. -#}\n"
    ]
    for name, spark_type, description in FIELDS:
        blocks.append(
            f"{{% docs layout_{name} %}}\n{description} (`{spark_type}`)\n{{% enddocs %}}\n"
        )
    return "\n".join(blocks)
