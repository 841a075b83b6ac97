"""dtle's DDL topic (SchemaChangeTopic): one message per DDL statement, key always null.

``source.server``, ``position`` (``file``, ``pos``, ``gtids``, ``ts_sec``, ``snapshot``),
``databaseName``, ``ddl`` and, when dtle fills it, ``tableChanges``. dtle's DML topics are
Debezium-compatible: decode them as ``debezium``.

Examples
--------
>>> from python_udfs import decode
>>> r = decode("dtle_ddl", None, '{"source":{"server":"mysql2"},"position":{"ts_sec":1641807976,'
...            '"file":"bin.000022","pos":439,"snapshot":true},"databaseName":"a",'
...            '"ddl":"CREATE TABLE a (id int)"}')[0]
>>> r["kind"], r["position"], r["is_snapshot"]
('ddl', 'bin.000000000022/00000000000000000439/0000000000', True)
"""

from __future__ import annotations

from typing import Any

from python_udfs import debezium
from python_udfs.guard import never_raises, value_object
from python_udfs.values import MalformedInput

FORMAT = "dtle_ddl"


@never_raises(FORMAT)
def decode(
    key: str | None,
    value: str | None,
    headers: list[tuple[str, str | None]] | None = None,
    options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Decode one dtle schema-change Kafka record. Never raises."""
    doc = value_object(value, "dtle DDL")
    if not isinstance(doc.get("ddl"), str):
        raise MalformedInput("dtle DDL record without a 'ddl' statement")
    out = debezium.schema_change(doc, None, None)
    out["envelope_format"] = FORMAT
    out["source_engine"] = "mysql"
    return [out]
