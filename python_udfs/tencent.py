"""Tencent CKafka connector, "Official Format I" for MySQL subscriptions.

DML: one message per row, flat upper-case fields: ``TYPE`` I/U/D, ``NEW_VALUES``/
``OLD_VALUES`` (every value as text), ``BINLOG_NAME``/``BINLOG_POS``, ``GLOBAL_ID`` (GTID),
``DATABASE``, ``TABLE`` and ``TIME`` as ``yyyyMMddHHmmss`` in the MySQL server's time zone.
DDL messages are Canal-shaped (``isDdl``) and decoded as Canal.

The message carries no key and no types: key columns come from the feed's configuration, and
values stay text. ``TIME`` is read in the zone given by the ``time_zone`` option, default
``+08:00`` (the documented example, ``19700101080000``, is the epoch at UTC+8); set
``tencent;time_zone=UTC`` (or any offset or IANA name) for servers elsewhere.

Examples
--------
>>> from python_udfs import decode
>>> r = decode("tencent", None, '{"BINLOG_NAME":"mysql-bin.000003","BINLOG_POS":154,'
...            '"DATABASE":"inventory","NEW_VALUES":{"id":"1004"},"OLD_VALUES":null,'
...            '"TABLE":"customers","TIME":"19700101080000","TYPE":"I"}')[0]
>>> r["op"], r["after_json"], str(r["committed_at"])
('c', '{"id":"1004"}', '1970-01-01 00:00:00+00:00')
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from python_udfs import canal, values
from python_udfs.guard import never_raises, require_object, value_object
from python_udfs.values import MalformedInput

FORMAT = "tencent"
DEFAULT_TIME_ZONE = "+08:00"
# "l" appears for insert in the format's own field table; I is what messages carry.
OPS = {"I": "c", "l": "c", "U": "u", "D": "d"}


def _time(text: Any, tz: dt.tzinfo) -> dt.datetime | None:
    if text in (None, ""):
        return None
    try:
        local = dt.datetime.strptime(str(text), "%Y%m%d%H%M%S")
    except ValueError:
        raise MalformedInput(f"TIME {text!r} is not yyyyMMddHHmmss") from None
    return local.replace(tzinfo=tz).astimezone(dt.timezone.utc)


@never_raises(FORMAT)
def decode(
    key: str | None,
    value: str | None,
    headers: list[tuple[str, str | None]] | None = None,
    options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Decode one Tencent Official Format I Kafka record. Never raises."""
    doc = value_object(value, "Tencent")
    if "isDdl" in doc:
        return canal.decode_document(doc, FORMAT)
    op_raw = doc.get("TYPE")
    if not isinstance(op_raw, str) or op_raw not in OPS:
        raise MalformedInput(f"unknown TYPE {op_raw!r} (expected I, U or D)")
    tz = values.zone((options or {}).get("time_zone", DEFAULT_TIME_ZONE))
    new = doc.get("NEW_VALUES")
    old = doc.get("OLD_VALUES")
    if new is not None:
        require_object(new, "NEW_VALUES")
    if old is not None:
        require_object(old, "OLD_VALUES")
    op = OPS[op_raw]
    if op in ("c", "u") and new is None:
        raise MalformedInput(f"TYPE {op_raw} without NEW_VALUES")
    if op in ("u", "d") and old is None:
        raise MalformedInput(f"TYPE {op_raw} without OLD_VALUES")
    binlog, pos = doc.get("BINLOG_NAME"), doc.get("BINLOG_POS")
    position = None
    if binlog and pos is not None:
        position = f"{values.binlog_sequence(str(binlog))}/{values.padded(pos, 20, 'BINLOG_POS')}"
    # every field written out, in the layout's order: built in one step
    return [
        {
            "envelope_format": FORMAT,
            "row_index": 0,
            "source_engine": "mysql",
            "source_name": None,
            "database_name": doc.get("DATABASE"),
            "schema_name": None,
            "table_name": doc.get("TABLE"),
            "kind": "row",
            "op": op,
            "op_raw": op_raw,
            "key_json": None,
            "key_columns": None,
            "before_json": values.dump_json(old),
            "after_json": values.dump_json(new),
            "unavailable_columns": None,
            "column_types": None,
            "linked_key_json": None,
            "committed_at": _time(doc.get("TIME"), tz),
            "captured_at": None,
            "transaction_id": doc.get("GLOBAL_ID"),
            "position": position,
            "is_snapshot": None,
            "ddl": None,
            "message_prefix": None,
            "message_content": None,
            "decode_error": None,
        }
    ]
