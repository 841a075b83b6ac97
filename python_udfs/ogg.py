"""Oracle GoldenGate JSON (the Kafka handler's JSON formatter).

``op_type`` I/U/D/T, ``table`` as ``SCHEMA.TABLE``, ``before``/``after`` images with JSON
types, ``primary_keys``, ``pos`` (the trail position, fixed-width digits) and ``op_ts``
(``yyyy-MM-dd HH:mm:ss.ffffff``, the operation's commit time, UTC unless the ``time_zone``
option says otherwise) and ``current_ts`` (capture time).

Examples
--------
>>> from python_udfs import decode
>>> r = decode("ogg", None, '{"table":"OGG.T","pos":"143","primary_keys":["id"],'
...            '"after":{"id":1},"op_type":"I","op_ts":"2020-05-13 15:40:06.000000"}')[0]
>>> r["schema_name"], r["table_name"], r["position"]
('OGG', 'T', '0000000000000000000000143')
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from python_udfs import values
from python_udfs.guard import names, never_raises, require_object, value_object
from python_udfs.layout import record
from python_udfs.values import MalformedInput

FORMAT = "ogg"
OPS = {"I": "c", "U": "u", "D": "d"}


def _time(text: Any, tz: dt.tzinfo) -> dt.datetime | None:
    if text in (None, ""):
        return None
    try:
        moment = dt.datetime.fromisoformat(str(text).replace(" ", "T"))
    except ValueError:
        raise MalformedInput(f"timestamp {text!r} is not yyyy-MM-dd HH:mm:ss[.f]") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    return moment.astimezone(dt.timezone.utc)


@never_raises(FORMAT)
def decode(
    key: str | None,
    value: str | None,
    headers: list[tuple[str, str | None]] | None = None,
    options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Decode one GoldenGate JSON Kafka record. Never raises."""
    doc = value_object(value, "GoldenGate")
    op_raw = doc.get("op_type")
    if op_raw not in (*OPS, "T"):
        raise MalformedInput(f"unknown op_type {op_raw!r} (expected I, U, D or T)")
    tz = values.zone((options or {}).get("time_zone", "UTC"))
    table = str(doc.get("table") or "")
    schema_name, _, table_name = table.rpartition(".")
    pos = doc.get("pos")
    common = {
        "envelope_format": FORMAT,
        "row_index": 0,
        "source_engine": "oracle",
        "schema_name": schema_name or None,
        "table_name": table_name or None,
        "op_raw": op_raw,
        "committed_at": _time(doc.get("op_ts"), tz),
        "captured_at": _time(doc.get("current_ts"), tz),
        "position": None if pos in (None, "") else values.padded(pos, 25, "pos"),
    }
    if op_raw == "T":
        return [record(**common, kind="truncate")]
    before = doc.get("before")
    after = doc.get("after")
    if before is not None:
        require_object(before, "before")
    if after is not None:
        require_object(after, "after")
    op = OPS[op_raw]
    if op in ("c", "u") and after is None:
        raise MalformedInput(f"op_type {op_raw} without an after image")
    if op == "d" and before is None:
        raise MalformedInput("op_type D without a before image")
    key_columns = names(doc.get("primary_keys"), "primary_keys")
    image = after if after is not None else before
    key_json = values.key_of(image, key_columns, "the row image")
    return [
        record(
            **common,
            kind="row",
            op=op,
            key_json=key_json,
            key_columns=key_columns,
            linked_key_json=values.changed_key(before, after, key_columns),
            before_json=values.dump_json(before),
            after_json=values.dump_json(after),
        )
    ]
