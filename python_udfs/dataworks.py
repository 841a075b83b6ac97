"""Alibaba DataWorks full-database sync to Kafka ("aliyun" JSON).

``schema.dataColumn`` declares each column as BOOLEAN, DOUBLE, DATE (13-digit epoch ms), BYTES
(base64), LONG or STRING; ``schema.primaryKey`` names the key; ``payload.before/after.dataColumn``
hold the images. An update arrives either as two records sharing a ``sequenceId``
(``UPDATE_BEFOR`` then ``UPDATE_AFTER``) or as one ``UPDATE_AFTER`` carrying both images. Each
half is emitted as ``op = 'u'`` with ``op_raw`` saying which; the change log pairs them.

Examples
--------
>>> from python_udfs import decode
>>> decode("dataworks", None, '{"schema":{"dataColumn":[{"name":"id","type":"LONG"}],'
...        '"primaryKey":["id"],"source":{"dbType":"MySQL","dbName":"d","tableName":"t"}},'
...        '"payload":{"before":null,"after":{"dataColumn":{"id":1}},"sequenceId":"7",'
...        '"timestamp":{"eventTime":1},"op":"INSERT","ddl":null}}')[0]["key_json"]
'{"id":1}'
>>> decode("dataworks", None, None)[0]["decode_error"]
'DataWorks record without a value'
"""

from __future__ import annotations

import base64
from typing import Any

from python_udfs import values
from python_udfs.guard import names, never_raises, require_object, value_object
from python_udfs.layout import record
from python_udfs.values import MalformedInput

FORMAT = "dataworks"

ROW_OPS = {
    "INSERT": "c",
    "UPDATE_BEFOR": "u",
    "UPDATE_BEFORE": "u",
    "UPDATE_AFTER": "u",
    "DELETE": "d",
}
DDL_OPS = {"CREATE", "ALTER", "ERASE", "QUERY", "RENAME", "CINDEX", "DINDEX"}
TRANSACTION_OPS = {"TRANSACTION_BEGIN", "TRANSACTION_END", "GTID", "XACOMMIT", "XAROLLBACK"}
TYPES = {
    "BOOLEAN": "boolean",
    "DOUBLE": "double",
    "DATE": "timestamptz",
    "BYTES": "bytes",
    "LONG": "int64",
    "STRING": "string",
}


def _value(column: str, raw: Any, kind: str | None) -> Any:
    """One ``dataColumn`` value in the canonical image encoding."""
    if raw is None:
        return None
    if kind == "DATE":
        moment = values.epoch_ms_utc(raw, f"DATE column {column!r}")
        return values.timestamp_text(int(raw) * 1_000_000, zone="Z") if moment else None
    if kind == "BYTES":
        if not isinstance(raw, str):
            raise MalformedInput(f"BYTES column {column!r} is not base64 text")
        base64.b64decode(raw, validate=True)  # reject what is not base64; keep the text
        return raw
    if kind == "LONG" and isinstance(raw, str):
        return int(raw)
    if kind == "BOOLEAN" and isinstance(raw, str):
        return raw.lower() == "true"
    # DOUBLE may arrive as a number or as exact text ("1.100000"): kept as sent.
    return raw


def _image(block: Any, types: dict[str, str], where: str) -> dict[str, Any] | None:
    if block is None:
        return None
    data = require_object(block, where).get("dataColumn")
    if data is None:
        return None
    data = require_object(data, f"{where}.dataColumn")
    try:
        return {c: _value(c, v, types.get(c)) for c, v in data.items()}
    except (ValueError, TypeError) as exc:
        raise MalformedInput(f"{where}.dataColumn: {exc}") from None


@never_raises(FORMAT)
def decode(
    key: str | None,
    value: str | None,
    headers: list[tuple[str, str | None]] | None = None,
    options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Decode one DataWorks Kafka record. Never raises."""
    doc = value_object(value, "DataWorks")
    schema = require_object(doc.get("schema") or {}, "schema")
    payload = require_object(doc.get("payload"), "payload")
    op_raw = payload.get("op")
    if not isinstance(op_raw, str):
        raise MalformedInput("payload.op is missing")
    source = require_object(schema.get("source") or {}, "schema.source")
    columns = schema.get("dataColumn") or []
    if not isinstance(columns, list):
        raise MalformedInput(f"schema.dataColumn is not a JSON array: {str(columns)[:60]!r}")
    types = {}
    for column in columns:
        name = column.get("name") if isinstance(column, dict) else None
        if not isinstance(name, str):
            raise MalformedInput(f"schema.dataColumn holds a column without a name: {column!r:.60}")
        types[name] = column.get("type")
    stamps = require_object(payload.get("timestamp") or {}, "payload.timestamp")
    sequence = payload.get("sequenceId")
    # Full-sync (snapshot) rows carry sequenceId -1 and eventTime -1: a snapshot read, placed
    # before every streamed change, with no known commit time.
    full_sync = str(sequence) == "-1"
    event_time = stamps.get("eventTime")
    common = {
        "envelope_format": FORMAT,
        "row_index": 0,
        "source_engine": str(source["dbType"]).lower() if source.get("dbType") else None,
        "database_name": source.get("dbName"),
        "schema_name": source.get("schemaName"),
        "table_name": source.get("tableName"),
        "op_raw": op_raw,
        "committed_at": None
        if full_sync or event_time == -1
        else values.epoch_ms_utc(event_time, "timestamp.eventTime"),
        "captured_at": values.epoch_ms_utc(stamps.get("systemTime"), "timestamp.systemTime"),
        # sequenceId orders full and incremental data; scn (Oracle) is the source's own clock
        "position": None
        if sequence in (None, "")
        else values.padded(0 if full_sync else sequence, 20, "payload.sequenceId"),
        "transaction_id": payload.get("scn"),
    }
    if op_raw in ROW_OPS:
        before = _image(payload.get("before"), types, "payload.before")
        after = _image(payload.get("after"), types, "payload.after")
        if op_raw == "INSERT" and after is None:
            raise MalformedInput("INSERT without an after image")
        if op_raw == "DELETE" and before is None:
            raise MalformedInput("DELETE without a before image")
        if op_raw.startswith("UPDATE") and before is None and after is None:
            raise MalformedInput(f"{op_raw} without an image")
        key_columns = names(schema.get("primaryKey"), "schema.primaryKey")
        image = after if after is not None else before
        key_json = values.key_of(image, key_columns, "the row image")
        return [
            record(
                **common,
                kind="row",
                op="r" if full_sync and op_raw == "INSERT" else ROW_OPS[op_raw],
                is_snapshot=True if full_sync else None,
                key_json=key_json,
                key_columns=key_columns,
                linked_key_json=values.changed_key(before, after, key_columns),
                before_json=values.dump_json(before),
                after_json=values.dump_json(after),
                column_types={c: TYPES.get(str(t), str(t).lower()) for c, t in types.items()}
                or None,
            )
        ]
    if op_raw == "MHEARTBEAT":
        return [record(**common, kind="heartbeat")]
    if op_raw in TRANSACTION_OPS:
        return [record(**common, kind="transaction")]
    if op_raw == "TRUNCATE":
        ddl = payload.get("ddl") or {}
        return [record(**common, kind="truncate", ddl=ddl.get("text"))]
    if op_raw in DDL_OPS:
        ddl = require_object(payload.get("ddl") or {}, "payload.ddl")
        return [record(**common, kind="ddl", ddl=ddl.get("text"))]
    raise MalformedInput(f"unknown op {op_raw!r}")
