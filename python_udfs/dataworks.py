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
import functools
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


# the declared types whose values `_value` may rewrite or check; a value of any other column,
# and a LONG or BOOLEAN sent as a number or boolean, is kept as sent
_CONVERTED = {"DATE", "BYTES", "LONG", "BOOLEAN"}


def _image(block: Any, converted: list[tuple[str, str]], where: str) -> dict[str, Any] | None:
    """An image's ``dataColumn`` in the canonical encoding; ``converted`` are the (column,
    declared type) pairs of the columns whose type is one of :data:`_CONVERTED`."""
    if block is None:
        return None
    data = require_object(block, where).get("dataColumn")
    if data is None:
        return None
    out = dict(require_object(data, f"{where}.dataColumn"))
    try:
        for column, kind in converted:
            raw = out.get(column)
            if raw is None or (type(raw) is not str and kind in ("LONG", "BOOLEAN")):
                continue
            out[column] = _value(column, raw, kind)
    except (ValueError, TypeError) as exc:
        raise MalformedInput(f"{where}.dataColumn: {exc}") from None
    return out


def _column_types(types: dict[str, Any]) -> dict[str, str] | None:
    """``column_types``: each declared type by its layout name (a table's declarations come
    again with every record: the names of one are worked out once)."""
    if not types:
        return None
    declared = tuple(types.items())
    if all(type(t) is str for _, t in declared):  # (true and 1 would share a cache entry)
        return dict(_named_types(declared))
    return {c: TYPES.get(str(t), str(t).lower()) for c, t in declared}


@functools.lru_cache(maxsize=256)
def _named_types(declared: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((c, TYPES.get(str(t), str(t).lower())) for c, t in declared)


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
    converted = [(c, k) for c, k in types.items() if type(k) is str and k in _CONVERTED]
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
        before = _image(payload.get("before"), converted, "payload.before")
        after = _image(payload.get("after"), converted, "payload.after")
        if op_raw == "INSERT" and after is None:
            raise MalformedInput("INSERT without an after image")
        if op_raw == "DELETE" and before is None:
            raise MalformedInput("DELETE without a before image")
        if op_raw.startswith("UPDATE") and before is None and after is None:
            raise MalformedInput(f"{op_raw} without an image")
        key_columns = names(schema.get("primaryKey"), "schema.primaryKey")
        image = after if after is not None else before
        key_json = values.key_of(image, key_columns, "the row image")
        # every field written out, in the layout's order: the common case, built in one step
        return [
            {
                "envelope_format": FORMAT,
                "row_index": 0,
                "source_engine": common["source_engine"],
                "source_name": None,
                "database_name": common["database_name"],
                "schema_name": common["schema_name"],
                "table_name": common["table_name"],
                "kind": "row",
                "op": "r" if full_sync and op_raw == "INSERT" else ROW_OPS[op_raw],
                "op_raw": op_raw,
                "key_json": key_json,
                "key_columns": key_columns,
                "before_json": values.dump_json(before),
                "after_json": values.dump_json(after),
                "unavailable_columns": None,
                "column_types": _column_types(types),
                "linked_key_json": values.changed_key(before, after, key_columns),
                "committed_at": common["committed_at"],
                "captured_at": common["captured_at"],
                "transaction_id": common["transaction_id"],
                "position": common["position"],
                "is_snapshot": True if full_sync else None,
                "ddl": None,
                "message_prefix": None,
                "message_content": None,
                "decode_error": None,
            }
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
