"""Canal flat JSON (``canal.mq.flatMessage=true``), as Canal, Alibaba DTS and CKafka send it.

One message carries one binlog event: ``data[]`` holds one entry per row (several rows per
message is common), ``old[]`` the changed columns' previous values (only the changed columns;
CKafka's canal mode sends the full row), ``pkNames`` the key, ``mysqlType``/``sqlType`` the
column types, ``isDdl`` + ``sql`` a DDL statement, ``es`` the binlog execution time and ``ts``
the capture time (milliseconds; some producers send seconds).

Values are kept exactly as sent: flat messages carry every value as text (or null); the typed
models cast them using ``column_types``. A flat message carries no binlog position, so
``position`` is ``es`` (15 digits, milliseconds): events in the same millisecond are ordered
by Kafka partition offset and ``row_index`` downstream.

Examples
--------
>>> from python_udfs import decode
>>> rows = decode("canal", None, '{"data":[{"id":"1","v":"b"}],"old":[{"v":"a"}],'
...               '"database":"d","table":"t","type":"UPDATE","isDdl":false,"pkNames":["id"],'
...               '"es":1589373546000,"ts":1589373546301,"id":4}')
>>> rows[0]["before_json"], rows[0]["after_json"]
('{"id":"1","v":"a"}', '{"id":"1","v":"b"}')
>>> decode("canal", None, "{")[0]["decode_error"][:21]
'malformed JSON in val'
"""

from __future__ import annotations

from typing import Any

from python_udfs import values
from python_udfs.guard import names, never_raises, require_object, value_object
from python_udfs.layout import record
from python_udfs.values import MalformedInput

FORMAT = "canal"

ROW_OPS = {"INSERT": "c", "UPDATE": "u", "DELETE": "d", "INIT": "r"}  # INIT: DTS full load
DDL_OPS = {"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"}


def decode_document(
    doc: dict[str, Any], envelope_format: str, source_engine: str | None = "mysql"
) -> list[dict[str, Any]]:
    """Decode one parsed Canal flat message (shared with the Tencent decoder's DDL)."""
    op_raw = doc.get("type")
    if not isinstance(op_raw, str):
        raise MalformedInput("'type' is missing")
    es = values.epoch_auto_utc(doc.get("es"), "es")
    common = {
        "envelope_format": envelope_format,
        "source_engine": source_engine,
        "database_name": doc.get("database") or None,
        "table_name": doc.get("table") or None,
        "op_raw": op_raw,
        "committed_at": es,
        "captured_at": values.epoch_auto_utc(doc.get("ts"), "ts"),
        "position": None if es is None else values.padded(_epoch_ms(es), 15),
        "transaction_id": doc.get("gtid"),
    }
    if doc.get("isDdl") is True or (op_raw in DDL_OPS and not doc.get("data")):
        kind = "truncate" if op_raw == "TRUNCATE" else "ddl"
        return [record(**common, row_index=0, kind=kind, ddl=doc.get("sql") or None)]
    if op_raw == "TRUNCATE":
        return [record(**common, row_index=0, kind="truncate", ddl=doc.get("sql") or None)]
    if op_raw not in ROW_OPS:
        raise MalformedInput(f"unknown type {op_raw!r}")
    rows = doc.get("data")
    if not isinstance(rows, list) or not rows:
        raise MalformedInput(f"{op_raw} without data rows")
    old = doc.get("old")
    if old is not None and (not isinstance(old, list) or len(old) != len(rows)):
        raise MalformedInput(
            f"'old' has {len(old) if isinstance(old, list) else 'no'} "
            f"entries for {len(rows)} data rows"
        )
    key_columns = names(doc.get("pkNames"), "pkNames")
    mysql_types = require_object(doc.get("mysqlType") or {}, "mysqlType")
    column_types = {str(c): str(t).lower() for c, t in mysql_types.items()} or None
    out = []
    for index, row in enumerate(rows):
        row = require_object(row, f"data[{index}]")
        if op_raw == "DELETE":
            before, after = row, None
        elif op_raw == "UPDATE":
            changed = require_object(old[index], f"old[{index}]") if old else {}
            before, after = {**row, **changed}, row
        else:
            before, after = None, row
        image = after if after is not None else before
        key_json = values.key_of(image, key_columns, f"data[{index}]")
        # every field written out, in the layout's order: the common case, built in one step
        out.append(
            {
                "envelope_format": envelope_format,
                "row_index": index,
                "source_engine": source_engine,
                "source_name": None,
                "database_name": common["database_name"],
                "schema_name": None,
                "table_name": common["table_name"],
                "kind": "row",
                "op": ROW_OPS[op_raw],
                "op_raw": op_raw,
                "key_json": key_json,
                "key_columns": key_columns,
                "before_json": values.dump_json(before),
                "after_json": values.dump_json(after),
                "unavailable_columns": None,
                "column_types": column_types,
                "linked_key_json": values.changed_key(before, after, key_columns),
                "committed_at": es,
                "captured_at": common["captured_at"],
                "transaction_id": common["transaction_id"],
                "position": common["position"],
                "is_snapshot": op_raw == "INIT" or None,
                "ddl": None,
                "message_prefix": None,
                "message_content": None,
                "decode_error": None,
            }
        )
    return out


def _epoch_ms(moment: Any) -> int:
    delta = moment - values.epoch_ms_utc(0)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


@never_raises(FORMAT)
def decode(
    key: str | None,
    value: str | None,
    headers: list[tuple[str, str | None]] | None = None,
    options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Decode one Canal flat-JSON Kafka record (one or more rows). Never raises."""
    doc = value_object(value, "Canal")
    return decode_document(doc, FORMAT)
