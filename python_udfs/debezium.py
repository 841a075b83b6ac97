"""Debezium JSON envelopes (PostgreSQL, MySQL, SQL Server; dtle's DML output is the same family).

Pure: text in, common-layout records out, no Spark and no I/O. Handles values with and without
the Kafka Connect ``schema`` block (``schemas.enable=false``), ops c/u/d/r/t/m, tombstones,
transaction metadata events, heartbeats and schema-change events, and the PK-change headers
``__debezium.oldkey`` / ``__debezium.newkey``.

Examples
--------
>>> from python_udfs import decode
>>> decode("debezium", None, '{"before":null,"after":{"id":1},"op":"c",'
...        '"source":{"connector":"postgresql","name":"pg","db":"d","schema":"public",'
...        '"table":"t","lsn":5,"ts_ms":0}}')[0]["after_json"]
'{"id":1}'
>>> decode("debezium", None, None)[0]["kind"]   # a tombstone
'tombstone'
>>> decode("debezium", None, '{"op": ')[0]["decode_error"][:24]
'malformed JSON in value:'
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import orjson

from python_udfs import values
from python_udfs.guard import never_raises, require_object
from python_udfs.layout import record

FORMAT = "debezium"
UNAVAILABLE = "__debezium_unavailable_value"
OPS = {"c": "c", "u": "u", "d": "d", "r": "r"}


DecodeError = values.MalformedInput

# --------------------------------------------------------------------------------------------
# Kafka Connect schema -> value converters
# --------------------------------------------------------------------------------------------


# PostgreSQL's numeric holds up to 131,072 digits before the point and 16,383 after: 64 KiB
# of two's complement covers it; anything longer is not a column value and would take
# seconds to render, so it is refused
MAX_DECIMAL_BYTES = 64 * 1024


def _decimal_from_bytes(text: str, scale: int) -> Decimal:
    if not isinstance(text, str):
        raise DecodeError(f"decimal value is not base64 text: {text!r:.60}")
    if len(text) > MAX_DECIMAL_BYTES * 4 // 3 + 4:
        raise DecodeError(f"decimal value of {len(text)} base64 characters, over the limit")
    raw = base64.b64decode(text, validate=True)
    unscaled = int.from_bytes(raw, "big", signed=True)
    return Decimal(unscaled).scaleb(-scale)


# column_types' name of each Connect schema name that tells a logical type (Decimal apart)
NAMED_TYPES: dict[str, str] = {
    "io.debezium.data.VariableScaleDecimal": "decimal",
    "io.debezium.time.Date": "date",
    "org.apache.kafka.connect.data.Date": "date",
    "io.debezium.time.Time": "time",
    "io.debezium.time.MicroTime": "time",
    "io.debezium.time.NanoTime": "time",
    "org.apache.kafka.connect.data.Time": "time",
    "io.debezium.time.ZonedTime": "timetz",
    "io.debezium.time.Timestamp": "timestamp",
    "io.debezium.time.MicroTimestamp": "timestamp",
    "io.debezium.time.NanoTimestamp": "timestamp",
    "org.apache.kafka.connect.data.Timestamp": "timestamptz",
    "io.debezium.time.ZonedTimestamp": "timestamptz",
    "io.debezium.data.Json": "json",
    "io.debezium.data.Uuid": "uuid",
    "io.debezium.data.Bits": "bits",
    "io.debezium.data.Enum": "enum",
    "io.debezium.data.EnumSet": "set",
    "io.debezium.data.Xml": "xml",
}


def _field_type(schema: dict[str, Any]) -> str:
    """Name the type of one Connect field schema the way ``column_types`` reports it."""
    name = schema.get("name") or ""
    params = schema.get("parameters") or {}
    if name == "org.apache.kafka.connect.data.Decimal":
        precision = params.get("connect.decimal.precision")
        scale = params.get("scale", "0")
        return f"decimal({precision},{scale})" if precision else f"decimal(*,{scale})"
    return NAMED_TYPES.get(name, str(schema.get("type", "unknown")).lower())


_INTEGER_TYPES = {"int8", "int16", "int32", "int64"}


def _field_name(field_schema: dict[str, Any]) -> str | None:
    """A struct field's name: ``field`` in Connect JSON, ``name`` in the nested spelling."""
    return field_schema.get("field") or (
        field_schema.get("name") if "schema" in field_schema else None
    )


def _fields(schema: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Map field name -> field schema for a struct schema in either spelling.

    Besides Kafka Connect's JSON form (``{"field": "id", "type": "int32"}``) some documents
    (the Debezium PostgreSQL seed among them) nest it: ``{"name": "id", "schema": {...}}``.
    """
    out = {}
    for f in _field_list(schema):
        name = _field_name(f)
        if name is not None:
            out[name] = f.get("schema", f) if "field" not in f else f
    return out


def _field_list(schema: Any) -> list[dict[str, Any]]:
    """A struct schema's ``fields``, each an object with a text name; a named error if not."""
    if not schema:
        return []
    if not isinstance(schema, dict):
        raise DecodeError(f"a schema is not an object: {schema!r:.60}")
    fields = schema.get("fields") or []
    if not isinstance(fields, list):
        raise DecodeError(f"schema fields are not a list: {fields!r:.60}")
    for f in fields:
        if not isinstance(f, dict):
            raise DecodeError(f"a schema field is not an object: {f!r:.60}")
        name = _field_name(f)
        if name is not None and not isinstance(name, str):
            raise DecodeError(f"a schema field's name is not text: {name!r:.60}")
    return fields


def _connect_decimal(value: Any, params: Any) -> str:
    if isinstance(value, str):
        return values.decimal_text(_decimal_from_bytes(value, int(params.get("scale", 0))))
    return values.decimal_text(Decimal(str(value)))  # decimal.handling.mode=double/string


def _variable_scale_decimal(value: Any, params: Any) -> str:
    if isinstance(value, dict):
        return values.decimal_text(_decimal_from_bytes(value["value"], int(value["scale"])))
    return values.decimal_text(Decimal(str(value)))


_EPOCH_DATE = dt.date(1970, 1, 1)


def _date(value: Any, params: Any) -> str:
    return (_EPOCH_DATE + dt.timedelta(days=int(value))).isoformat()


def _time(nanos_per_unit: int) -> Callable[[Any, Any], str]:
    return lambda value, params: values.time_text(int(value) * nanos_per_unit)


def _timestamp_of(nanos_per_unit: int, zone: str | None) -> Callable[[Any, Any], str]:
    return lambda value, params: values.timestamp_text(int(value) * nanos_per_unit, zone=zone)


# Connect schema names whose values are rewritten, each by (value, the schema's parameters);
# a field of any other name whose type is one of _AS_SENT_KINDS keeps its value as sent (JSON
# text, UUIDs, enums, numbers, ...)
_NAMED: dict[str, Callable[[Any, Any], Any]] = {
    "org.apache.kafka.connect.data.Decimal": _connect_decimal,
    "io.debezium.data.VariableScaleDecimal": _variable_scale_decimal,
    "io.debezium.time.Date": _date,
    "org.apache.kafka.connect.data.Date": _date,
    "io.debezium.time.Time": _time(1_000_000),
    "org.apache.kafka.connect.data.Time": _time(1_000_000),
    "io.debezium.time.MicroTime": _time(1_000),
    "io.debezium.time.NanoTime": _time(1),
    "io.debezium.time.Timestamp": _timestamp_of(1_000_000, None),
    "io.debezium.time.MicroTimestamp": _timestamp_of(1_000, None),
    "io.debezium.time.NanoTimestamp": _timestamp_of(1, None),
    "org.apache.kafka.connect.data.Timestamp": _timestamp_of(1_000_000, "Z"),
}
_AS_SENT_KINDS = {"string", "boolean", "float", "float32", "float64", "double"}


def _convert(value: Any, schema: dict[str, Any] | None) -> Any:
    """Convert one payload value to the canonical image encoding (see ``layout``)."""
    if value is None or not isinstance(schema, dict):
        return value
    if isinstance(value, str) and value == UNAVAILABLE:
        return value
    name = schema.get("name") or ""
    kind = str(schema.get("type") or "").lower()
    if kind in _INTEGER_TYPES and isinstance(value, str):
        return int(value)  # integer sent as text (the nested-schema spelling does this)
    named = _NAMED.get(name) if isinstance(name, str) else None
    if named is not None:
        return named(value, schema.get("parameters") or {})
    if kind == "struct" and isinstance(value, dict):
        fields = _fields(schema)
        return {k: _convert(v, fields.get(k)) for k, v in value.items()}
    if kind == "array" and isinstance(value, list):
        return [_convert(v, schema.get("items")) for v in value]
    if kind == "bytes" and not isinstance(value, str):
        raise DecodeError(f"bytes value is not base64 text: {value!r:.60}")
    return value


def _converter(schema: Any) -> Callable[[Any], Any] | None:
    """How one column's values are converted, worked out once per schema: None where every
    value is kept as sent (most columns); for a named type, its conversion with the schema's
    parameters bound; else `_convert` bound to the column's schema. Each gives what `_convert`
    gives for the column."""
    if not isinstance(schema, dict):
        return None
    name = schema.get("name")
    name = name if isinstance(name, str) else ""  # `_convert` matches text names only
    kind = str(schema.get("type") or "").lower()
    named = _NAMED.get(name)
    if named is None and kind in _AS_SENT_KINDS:
        return None
    if named is None and kind in _INTEGER_TYPES:
        return _integer
    if named is None:
        return functools.partial(_convert, schema=schema)
    params = schema.get("parameters") or {}
    integer = kind in _INTEGER_TYPES

    def convert(value: Any) -> Any:
        if type(value) is str:
            if value == UNAVAILABLE:
                return value
            if integer:
                return int(value)
        return named(value, params)

    return convert


def _integer(value: Any) -> Any:
    """An integer column's value: sent as a number, or as text in the nested-schema spelling."""
    return int(value) if type(value) is str else value


def _converters(fields: dict[str, dict[str, Any]]) -> tuple[tuple[str, Any], ...]:
    """(column, converter) for the columns of ``fields`` whose values are converted."""
    return tuple(
        (column, convert)
        for column, schema in fields.items()
        if (convert := _converter(schema)) is not None
    )


def _struct_fields(schema: dict[str, Any] | None, field_name: str) -> dict[str, Any] | None:
    """The Connect schema of the envelope field ``field_name`` (before, after, source...)."""
    for f in _field_list(schema):
        if f.get("field") == field_name:
            return f
    return None


def _image(
    value: Any, converters: tuple[tuple[str, Any], ...], where: str
) -> tuple[dict[str, Any] | None, list[str]]:
    """Convert a before/after image; return it without unavailable columns, and their names.

    ``converters`` are the (column, converter) pairs of the columns whose values are converted
    (see :func:`_converters`; none for schema-less JSON): every other value is kept as sent.
    """
    if value is None:
        return None, []
    if not isinstance(value, dict):
        raise DecodeError(f"{where} is not an object: {value!r:.60}")
    unavailable = (
        [column for column, raw in value.items() if raw == UNAVAILABLE]
        if UNAVAILABLE in value.values()
        else []
    )
    if not converters and not unavailable:
        return value, unavailable
    out = dict(value)
    for column in unavailable:
        del out[column]
    for column, convert in converters:
        raw = out.get(column)
        if raw is None:
            continue
        try:
            out[column] = convert(raw)
        except (ValueError, TypeError, KeyError, AttributeError, binascii.Error) as exc:
            raise DecodeError(f"{where}.{column}: cannot convert {raw!r:.60}: {exc}") from exc
    return out, unavailable


def _column_types(schema: dict[str, Any] | None) -> dict[str, str] | None:
    if not schema:
        return None
    return {name: _field_type(f) for name, f in _fields(schema).items()}


class Envelope:
    """A Connect ``schema`` block and what decoding derives from it, worked out once.

    Debezium's JSON converter repeats the whole schema block (usually most of the message)
    in every message of a table; :func:`split` parses each distinct block text once.
    """

    __slots__ = ("after", "before", "column_types", "key", "key_columns", "schema")

    def __init__(self, schema: dict[str, Any] | None) -> None:
        self.schema = schema
        # read as a key: its columns and their converters; as a value: the converters of the
        # before and after images' columns
        fields = _fields(schema)
        self.key_columns = list(fields)
        self.key = _converters(fields)
        before = _struct_fields(schema, "before")
        after = _struct_fields(schema, "after")
        self.before = _converters(_fields(before))
        self.after = _converters(_fields(after))
        self.column_types = _column_types(after or before)


SCHEMALESS = Envelope(None)
_HEAD, _JOIN = '{"schema":', ',"payload":'


@functools.lru_cache(maxsize=1024)
def _envelope(schema_text: str) -> Envelope:
    schema = orjson.loads(schema_text)
    if schema is not None and not isinstance(schema, dict):
        raise orjson.JSONDecodeError("schema is not an object", schema_text, 0)
    return Envelope(schema)


# The schema text last cut from a key and from a value, with its envelope: a topic's messages
# come in runs with the same schema, and a prefix comparison costs less than cutting and
# hashing the text again
_RECENT: dict[str, tuple[str, Envelope]] = {}


def split(text: str, where: str) -> tuple[Any, Envelope]:
    """Parse a ``{"schema": ..., "payload": ...}`` message into (payload, envelope).

    For the JSON converter's compact layout the schema text is cut out and looked up in a
    cache, and only the payload is parsed. The cut is taken only when both halves parse as
    complete JSON, which a cut at any other ``,"payload":`` cannot give (it would leave an
    object open); anything else is parsed whole. A message that starts with the schema text
    of the previous message cut at ``where``, followed by ``,"payload":``, is cut there: the
    same cut, as that text holds no ``,"payload":`` and is an object or ``null``, which no
    proper prefix of ``,"payload":`` ends (so none starts inside it).
    """
    if text.startswith(_HEAD) and text.endswith("}") and len(text) <= values.MAX_MESSAGE_BYTES:
        recent = _RECENT.get(where)
        if recent is not None:
            schema_text, envelope = recent
            cut = len(_HEAD) + len(schema_text)
            if text.startswith(_JOIN, cut) and text.startswith(schema_text, len(_HEAD)):
                return values.parse_json(text[cut + len(_JOIN) : -1], f"{where}.payload"), envelope
        cut = text.find(_JOIN)
        if cut > 0:
            schema_text = text[len(_HEAD) : cut]
            try:
                envelope = _envelope(schema_text)
            except orjson.JSONDecodeError:
                pass
            else:
                _RECENT[where] = (schema_text, envelope)
                return values.parse_json(text[cut + len(_JOIN) : -1], f"{where}.payload"), envelope
    doc = values.parse_json(text, where)
    if isinstance(doc, dict) and "payload" in doc and "schema" in doc:
        schema = doc["schema"]
        if schema is not None and not isinstance(schema, dict):
            raise DecodeError(f"{where}.schema is not an object")
        return doc["payload"], Envelope(schema)
    if isinstance(doc, dict) and len(doc) == 1 and isinstance(doc.get("payload"), dict):
        # the converter's envelope with its schema left out, read as Debezium's own serde
        # (io.debezium.serde.json.JsonSerde) reads it: {"payload": {"id": 1}} is the key
        # {"id": 1}; a "payload" holding a scalar is a column of that name
        return doc["payload"], SCHEMALESS
    return doc, SCHEMALESS


# --------------------------------------------------------------------------------------------
# Positions
# --------------------------------------------------------------------------------------------


def _int(value: Any, where: str) -> int | None:
    if value is None or value == "":
        return None
    return values.whole_number(value, where)


def position(engine: str | None, source: dict[str, Any]) -> str | None:
    """A fixed-width text that sorts the changes of one source in log order.

    PostgreSQL: ``lsn`` (20 digits). MySQL/dtle: binlog file sequence number, ``pos``, ``row``.
    SQL Server: ``commit_lsn``, ``change_lsn``, ``event_serial_no``. Unknown engines: null.
    """
    if engine == "postgresql":
        lsn = _int(source.get("lsn"), "source.lsn")
        return None if lsn is None else f"{lsn:020d}"
    if engine in ("mysql", "mariadb"):
        file = source.get("file")
        pos = _int(source.get("pos"), "source.pos")
        if file is None or pos is None:
            return None
        row = _int(source.get("row"), "source.row") or 0
        return f"{values.binlog_sequence(file, 'source.file')}/{pos:020d}/{row:010d}"
    if engine == "sqlserver":
        commit = source.get("commit_lsn")
        change = source.get("change_lsn")
        serial = _int(source.get("event_serial_no"), "source.event_serial_no") or 0
        if commit is None and change is None:
            return None
        return f"{commit or change}/{change or commit}/{serial:010d}"
    return None


CONNECTORS = {
    "postgresql",
    "mysql",
    "mariadb",
    "sqlserver",
    "oracle",
    "db2",
    "mongodb",
    "informix",
    "vitess",
    "spanner",
    "cassandra",
    "jdbc",
}


def _engine(source: dict[str, Any], schema: dict[str, Any] | None) -> str | None:
    connector = source.get("connector")
    if isinstance(connector, str) and connector in CONNECTORS:
        return connector
    name = ((_struct_fields(schema, "source") or {}).get("name")) or ""
    name = name if isinstance(name, str) else ""
    for engine in ("postgresql", "mysql", "sqlserver", "oracle", "mongodb", "db2"):
        if f".{engine}." in name:
            return engine
    if "file" in source and "pos" in source:  # dtle and old MySQL connectors send no connector
        return "mysql"
    if "lsn" in source:
        return "postgresql"
    if "change_lsn" in source or "commit_lsn" in source:
        return "sqlserver"
    return None


def _timestamp(ms: Any, where: str = "payload.ts_ms") -> dt.datetime | None:
    return values.epoch_ms_utc(ms, where)


def _committed_at(source: dict[str, Any]) -> dt.datetime | None:
    """``source.ts_ms`` (``ts_sec`` in dtle and Debezium MySQL 0.x), the first one that is not
    0; a 0 with nothing better is the epoch, as Flink's debezium-json reads it (snapshot rows
    of some connectors carry 0), so the version it opens is visible to every as-of read."""
    if source.get("ts_ms") not in (None, 0):
        return _timestamp(source["ts_ms"], "source.ts_ms")
    if source.get("ts_sec") not in (None, 0):
        return _timestamp(values.whole_number(source["ts_sec"], "source.ts_sec") * 1000)
    if 0 in (source.get("ts_ms"), source.get("ts_sec")):
        return _timestamp(0)
    return None


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


def _header(headers: list[tuple[str, str | None]] | None, name: str) -> str | None:
    for header_name, header_value in headers or ():
        if header_name == name:
            return header_value
    return None


def _key(key: str | None) -> tuple[dict[str, Any] | None, list[str] | None]:
    if key is None:
        return None, None
    payload, envelope = split(key, "key")
    if payload is None:
        return None, None
    if not isinstance(payload, dict):
        # A primitive key (message.key.columns on one column): no column name to give it.
        return {"key": payload}, ["key"]
    converted, _ = _image(payload, envelope.key, "key")
    return converted, list(envelope.key_columns or payload)


def _linked_key(text: str | None) -> str | None:
    """The old/new key carried by a PK-change header, as canonical key JSON."""
    if text is None:
        return None
    converted, _ = _key(text)
    return values.dump_json(converted)


@never_raises(FORMAT)
def decode(
    key: str | None,
    value: str | None,
    headers: list[tuple[str, str | None]] | None = None,
    options: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Decode one Debezium Kafka record into common-layout records. Never raises."""
    return _decode(key, value, headers)


def _decode(
    key: str | None, value: str | None, headers: list[tuple[str, str | None]] | None
) -> list[dict[str, Any]]:
    key_values, key_columns = _key(key)
    key_json = values.dump_json(key_values)
    if value is None:
        # Kafka tombstone: log compaction marker after a delete; carries the key only.
        return [
            record(
                envelope_format=FORMAT,
                row_index=0,
                kind="tombstone",
                key_json=key_json,
                key_columns=key_columns,
            )
        ]
    payload, envelope = split(value, "value")
    schema = envelope.schema
    if payload is None:
        # A value that is the JSON literal null (a sink file's rendering of a tombstone).
        return [
            record(
                envelope_format=FORMAT,
                row_index=0,
                kind="tombstone",
                key_json=key_json,
                key_columns=key_columns,
            )
        ]
    if not isinstance(payload, dict):
        raise DecodeError(f"value payload is not an object: {payload!r:.60}")

    if "status" in payload and "id" in payload and "op" not in payload:
        return [_transaction(payload)]
    if "ddl" in payload or "tableChanges" in payload:
        return [schema_change(payload, key_json, key_columns)]
    if "op" not in payload:
        if set(payload) <= {"ts_ms"}:
            # Heartbeat (io.debezium.connector.common.Heartbeat): only a timestamp.
            return [
                record(
                    envelope_format=FORMAT,
                    row_index=0,
                    kind="heartbeat",
                    source_name=(key_values or {}).get("serverName"),
                    captured_at=_timestamp(payload.get("ts_ms")),
                    key_json=key_json,
                )
            ]
        raise DecodeError(f"value payload has no 'op' (fields: {', '.join(sorted(payload))[:80]})")

    op_raw = payload["op"]
    if not isinstance(op_raw, str):
        raise DecodeError(f"value payload.op is not text: {op_raw!r:.60}")
    source = payload.get("source") or {}
    if not isinstance(source, dict):
        raise DecodeError("value payload.source is not an object")
    engine = _engine(source, schema)
    common = {
        "envelope_format": FORMAT,
        "row_index": 0,
        "source_engine": engine,
        "source_name": source.get("name"),
        "database_name": source.get("db"),
        "schema_name": source.get("schema") or None,
        "table_name": source.get("table") or None,
        "op_raw": op_raw,
        "committed_at": _committed_at(source),
        "captured_at": _timestamp(payload.get("ts_ms")),
        "transaction_id": _transaction_id(payload, source),
        "position": position(engine, source),
        "is_snapshot": _snapshot(source.get("snapshot")),
    }
    if engine == "sqlserver" and common["schema_name"] is None:
        common["schema_name"] = source.get("schema")

    if op_raw in OPS:
        before, before_missing = _image(payload.get("before"), envelope.before, "before")
        after, after_missing = _image(payload.get("after"), envelope.after, "after")
        if op_raw in ("c", "r") and after is None:
            raise DecodeError(f"op '{op_raw}' without an 'after' image")
        if op_raw == "d" and before is None and key_values is None:
            raise DecodeError("op 'd' with neither a 'before' image nor a key")
        linked = values.changed_key(before, after, key_columns)
        if op_raw == "c":
            linked = _linked_key(_header(headers, "__debezium.oldkey"))
        elif op_raw == "d":
            linked = _linked_key(_header(headers, "__debezium.newkey"))
        # every field written out, in the layout's order: the common case, built in one step
        return [
            {
                "envelope_format": FORMAT,
                "row_index": 0,
                "source_engine": engine,
                "source_name": common["source_name"],
                "database_name": common["database_name"],
                "schema_name": common["schema_name"],
                "table_name": common["table_name"],
                "kind": "row",
                "op": OPS[op_raw],
                "op_raw": op_raw,
                "key_json": key_json,
                "key_columns": key_columns,
                "before_json": values.dump_json(before),
                "after_json": values.dump_json(after),
                "unavailable_columns": (after_missing or before_missing) or None,
                "column_types": envelope.column_types,
                "linked_key_json": linked,
                "committed_at": common["committed_at"],
                "captured_at": common["captured_at"],
                "transaction_id": common["transaction_id"],
                "position": common["position"],
                "is_snapshot": common["is_snapshot"],
                "ddl": None,
                "message_prefix": None,
                "message_content": None,
                "decode_error": None,
            }
        ]
    if op_raw == "t":
        return [record(**common, kind="truncate")]
    if op_raw == "m":
        message = require_object(payload.get("message") or {}, "value payload.message")
        content = message.get("content")
        try:
            data = None if content is None else base64.b64decode(content, validate=True)
        except (TypeError, ValueError):
            raise DecodeError(
                f"value payload.message.content is not base64 text: {content!r:.60}"
            ) from None
        return [
            record(
                **common,
                kind="message",
                message_prefix=message.get("prefix"),
                message_content=data,
            )
        ]
    raise DecodeError(f"unknown op {op_raw!r} (expected c, u, d, r, t or m)")


def _snapshot(flag: Any) -> bool | None:
    """``source.snapshot`` is a boolean in old connectors, 'true'/'last'/'false'/'incremental'."""
    if flag is None:
        return None
    if isinstance(flag, bool):
        return flag
    return str(flag).lower() in (
        "true",
        "first",
        "first_in_data_collection",
        "last",
        "last_in_data_collection",
        "incremental",
    )


def _transaction_id(payload: dict[str, Any], source: dict[str, Any]) -> str | None:
    block = payload.get("transaction")
    if isinstance(block, dict) and block.get("id") is not None:
        return str(block["id"])
    for name in ("txId", "gtid"):
        if source.get(name) is not None:
            return str(source[name])
    return None


def _transaction(payload: dict[str, Any]) -> dict[str, Any]:
    """A transaction metadata event (BEGIN/END) from the ``<prefix>.transaction`` topic."""
    status = payload.get("status")
    if status not in ("BEGIN", "END"):
        raise DecodeError(f"transaction event with unknown status {status!r}")
    return record(
        envelope_format=FORMAT,
        row_index=0,
        kind="transaction",
        op_raw=status,
        transaction_id=str(payload.get("id")),
        committed_at=_timestamp(payload.get("ts_ms")),
    )


def schema_change(
    payload: dict[str, Any], key_json: str | None, key_columns: list[str] | None
) -> dict[str, Any]:
    """A schema-change event (Debezium schema change topic, dtle SchemaChangeTopic)."""
    source = require_object(payload.get("source") or {}, "value payload.source")
    position_block = require_object(payload.get("position") or {}, "value payload.position")
    engine = _engine({**source, **position_block}, None) or source.get("connector")
    pos_source = {**position_block, **source} if position_block else source
    changes = payload.get("tableChanges") or []
    if not isinstance(changes, list):
        raise DecodeError(f"value payload.tableChanges is not a list: {changes!r:.60}")
    first = changes[0] if changes and isinstance(changes[0], dict) else {}
    table_id = str(first.get("id") or "").replace('"', "")
    table = table_id.split(".")[-1] if table_id else None
    return record(
        envelope_format=FORMAT,
        row_index=0,
        kind="ddl",
        op_raw=first.get("type"),
        source_engine=engine,
        source_name=source.get("server") or source.get("name"),
        database_name=payload.get("databaseName") or source.get("db"),
        schema_name=payload.get("schemaName") or None,
        table_name=table or source.get("table"),
        key_json=key_json,
        key_columns=key_columns,
        committed_at=_committed_at({**position_block, **source}),
        captured_at=_timestamp(payload.get("ts_ms")),
        position=position(engine, pos_source),
        is_snapshot=_snapshot(pos_source.get("snapshot")),
        ddl=payload.get("ddl"),
    )
