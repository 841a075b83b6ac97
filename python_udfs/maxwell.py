"""Maxwell's daemon JSON (MySQL).

``type`` insert/update/delete (``bootstrap-insert`` for snapshot rows), ``data`` the row with
native JSON types, ``old`` the previous values of the changed columns only. A column present
in ``old`` with ``null`` changed from NULL; a column absent from ``old`` did not change: the
before image is ``data`` overlaid with ``old``, keeping that difference. Key columns come from
``primary_key_columns`` or, failing that, the Kafka key's ``pk.<column>`` fields. ``position``
(``binlog.000001:1234``, with ``output_binlog_position``) orders events; without it,
``ts``/``xid``/``xoffset`` are the best order available.

Examples
--------
>>> from python_udfs import decode
>>> r = decode("maxwell", None, '{"database":"test","table":"p","type":"update","ts":1,'
...            '"xid":7,"data":{"id":1,"d":"x"},"old":{"d":null},"primary_key_columns":["id"]}')
>>> r[0]["before_json"], r[0]["key_json"]
('{"d":null,"id":1}', '{"id":1}')
"""

from __future__ import annotations

from typing import Any

from python_udfs import values
from python_udfs.guard import names, never_raises, require_object, value_object
from python_udfs.layout import record
from python_udfs.values import MalformedInput

FORMAT = "maxwell"
ROW_OPS = {"insert": "c", "update": "u", "delete": "d", "bootstrap-insert": "r"}
MARKERS = {"bootstrap-start", "bootstrap-complete"}


def _key_columns(doc: dict[str, Any], key: str | None) -> list[str] | None:
    columns = names(doc.get("primary_key_columns"), "primary_key_columns")
    if columns:
        return columns
    if key:
        parsed = values.parse_json(key, "key")
        if isinstance(parsed, dict):
            from_key = [k[3:] for k in parsed if k.startswith("pk.")]
            return from_key or None
    return None


def _position(doc: dict[str, Any]) -> str | None:
    xoffset = values.padded(doc.get("xoffset") or 0, 10, "xoffset")
    text = doc.get("position")
    if isinstance(text, str) and ":" in text:
        file, _, pos = text.rpartition(":")
        return f"{values.binlog_sequence(file)}/{values.padded(pos, 20, 'position')}/{xoffset}"
    if doc.get("ts") is None:
        return None
    ts = values.padded(doc["ts"], 12, "ts")
    return f"ts:{ts}/{values.padded(doc.get('xid') or 0, 20, 'xid')}/{xoffset}"


@never_raises(FORMAT)
def decode(
    key: str | None,
    value: str | None,
    headers: list[tuple[str, str | None]] | None = None,
    options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Decode one Maxwell Kafka record. Never raises."""
    doc = value_object(value, "Maxwell")
    op_raw = doc.get("type")
    if not isinstance(op_raw, str):
        raise MalformedInput("'type' is missing")
    common = {
        "envelope_format": FORMAT,
        "row_index": 0,
        "source_engine": "mysql",
        "database_name": doc.get("database"),
        "table_name": doc.get("table"),
        "op_raw": op_raw,
        "committed_at": values.epoch_auto_utc(doc.get("ts"), "ts"),
        "transaction_id": None if doc.get("xid") is None else str(doc["xid"]),
        "position": _position(doc),
    }
    if op_raw in ROW_OPS:
        data = require_object(doc.get("data"), "data")
        old = doc.get("old")
        if op_raw == "delete":
            before, after = data, None
        elif op_raw == "update":
            before, after = {**data, **require_object(old or {}, "old")}, data
        else:
            before, after = None, data
        key_columns = _key_columns(doc, key)
        key_json = values.key_of(data, key_columns, "data")
        return [
            record(
                **common,
                kind="row",
                op=ROW_OPS[op_raw],
                key_json=key_json,
                key_columns=key_columns,
                linked_key_json=values.changed_key(before, after, key_columns),
                before_json=values.dump_json(before),
                after_json=values.dump_json(after),
                is_snapshot=op_raw == "bootstrap-insert",
            )
        ]
    if op_raw.startswith(("table-", "database-")):
        # DDL events: table-create/alter/drop, database-create/alter/drop
        return [record(**common, kind="ddl", ddl=doc.get("sql"))]
    if op_raw in MARKERS:
        return [record(**common, kind="message", message_prefix=op_raw)]
    raise MalformedInput(f"unknown type {op_raw!r}")
