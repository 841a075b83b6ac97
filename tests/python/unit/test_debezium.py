"""The Debezium decoder, pure: fixture envelopes in, expected common-layout fields out."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from python_udfs import FIELD_NAMES, decode

CASES = {
    c["name"]: c
    for c in map(
        json.loads,
        (Path(__file__).parents[1] / "fixtures" / "debezium" / "cases.jsonl")
        .read_text()
        .splitlines(),
    )
}
UTC = dt.timezone.utc
SEED_COMMIT = dt.datetime(2019, 5, 28, 8, 58, 24, 863000, tzinfo=UTC)
ANNE = '{"email":"annek@noanswer.org","first_name":"Anne","id":1,"last_name":"Kretchmar"}'

# name -> expected fields (every field not listed must be None)
EXPECTED = {
    "seed000_create": {
        "kind": "row",
        "op": "c",
        "op_raw": "c",
        "source_engine": "postgresql",
        "source_name": "PostgreSQL_server",
        "database_name": "postgres",
        "schema_name": "public",
        "table_name": "customers",
        "key_json": '{"id":1}',
        "key_columns": ["id"],
        "after_json": ANNE,
        "committed_at": SEED_COMMIT,
        "captured_at": SEED_COMMIT,
        "transaction_id": "555",
        "position": "00000000000024023128",
        "is_snapshot": True,
        "column_types": {
            "id": "int32",
            "first_name": "string",
            "last_name": "string",
            "email": "string",
        },
    },
    "seed000_update": {
        "kind": "row",
        "op": "u",
        "op_raw": "u",
        "source_engine": "postgresql",
        "source_name": "PostgreSQL_server",
        "database_name": "postgres",
        "schema_name": "public",
        "table_name": "customers",
        "key_json": '{"id":1}',
        "key_columns": ["id"],
        # REPLICA IDENTITY DEFAULT: the before image holds only the key columns
        "before_json": '{"id":1}',
        "after_json": ANNE.replace('"Anne"', '"Anne Marie"'),
        "committed_at": SEED_COMMIT,
        "captured_at": dt.datetime(2016, 6, 10, 18, 40, 25, 523000, tzinfo=UTC),
        "transaction_id": "556",
        "position": "00000000000024023128",
        "is_snapshot": False,
        "column_types": None,  # the seed elides this schema ("schema": { ... })
    },
    "seed000_truncate": {
        "kind": "truncate",
        "op_raw": "t",
        "source_engine": "postgresql",
        "source_name": "PostgreSQL_server",
        "database_name": "postgres",
        "schema_name": "public",
        "table_name": "customers",
        "committed_at": SEED_COMMIT,
        "captured_at": dt.datetime(2019, 5, 28, 8, 58, 24, 961000, tzinfo=UTC),
        "transaction_id": "556",
        "position": "00000000000046523128",
        "is_snapshot": False,
    },
    "seed000_message": {
        "kind": "message",
        "op_raw": "m",
        "source_engine": "postgresql",
        "source_name": "PostgreSQL_server",
        "database_name": "postgres",
        "committed_at": SEED_COMMIT,
        "captured_at": dt.datetime(2019, 5, 28, 8, 58, 24, 961000, tzinfo=UTC),
        "transaction_id": "556",
        "position": "00000000000046523128",
        "is_snapshot": False,
        "message_prefix": "foo",
        "message_content": b"bg\xf2",  # base64 "Ymfy"
    },
    "seed000_delete": {
        "kind": "row",
        "op": "d",
        "op_raw": "d",
        "source_engine": "postgresql",
        "source_name": "PostgreSQL_server",
        "database_name": "postgres",
        "schema_name": "public",
        "table_name": "customers",
        "key_json": '{"id":1}',
        "key_columns": ["id"],
        "before_json": '{"id":1}',
        "committed_at": SEED_COMMIT,
        "captured_at": dt.datetime(2016, 6, 10, 18, 5, 2, 461000, tzinfo=UTC),
        "transaction_id": "556",
        "position": "00000000000046523128",
        "is_snapshot": False,
    },
    "tombstone": {"kind": "tombstone", "key_json": '{"id":1}', "key_columns": ["id"]},
    "toast": {
        "kind": "row",
        "op": "u",
        "op_raw": "u",
        "after_json": '{"id":1}',
        # the placeholder is not a value: left out of the image and named
        "unavailable_columns": ["bio"],
    },
    "pk_change_create": {"kind": "row", "op": "c", "linked_key_json": '{"id":1}'},
    "pk_change_delete": {"kind": "row", "op": "d", "linked_key_json": '{"id":2}'},
    "logical_types": {
        "kind": "row",
        "op": "r",
        "after_json": json.dumps(
            {
                "blob": "AAEC",
                "d": "2022-01-08",
                "doc": '{"a": 1}',
                "ms": "2023-11-14T22:13:20.123000Z",
                "nothing": None,
                "price": "-123.45",
                "t": "01:02:03.004005",
                "ts": "2023-11-14T22:13:20.123456",
                "tsz": "2023-11-14T22:13:20.123456+08:00",
                "vs": "1234.567",
            },
            separators=(",", ":"),
        ),
        "column_types": {
            "price": "decimal(10,2)",
            "vs": "decimal",
            "d": "date",
            "t": "time",
            "ts": "timestamp",
            "tsz": "timestamptz",
            "ms": "timestamptz",
            "doc": "json",
            "blob": "bytes",
            "nothing": "string",
        },
    },
    "sqlserver_update": {
        "kind": "row",
        "op": "u",
        "source_engine": "sqlserver",
        "source_name": "server1",
        "database_name": "testDB",
        "schema_name": "dbo",
        "table_name": "customers",
        "position": "00000027:00000ac0:0007/00000027:00000ac0:0002/0000000002",
        "is_snapshot": False,
    },
    "dtle_create": {
        "kind": "row",
        "op": "c",
        "source_engine": "mysql",
        "source_name": "dbserver1",
        "database_name": "inventory",
        "table_name": "customers",
        "after_json": '{"id":1004}',
        # ts_sec 0 in the seed: read as the epoch, as Flink reads ts_ms 0
        "committed_at": dt.datetime(1970, 1, 1, tzinfo=UTC),
        "position": "mysql-bin.000000000003/00000000000000000154/0000000000",
        "is_snapshot": True,
    },
    "transaction_begin": {
        "kind": "transaction",
        "op_raw": "BEGIN",
        "transaction_id": "571",
        "committed_at": dt.datetime(2017, 2, 7, 20, 49, 37, 125000, tzinfo=UTC),
    },
    "heartbeat": {
        "kind": "heartbeat",
        "source_name": "PostgreSQL_server",
        "key_json": '{"serverName":"PostgreSQL_server"}',
        "captured_at": SEED_COMMIT,
    },
}

ERRORS = {
    "malformed": "malformed JSON in value",
    "unknown_op": "unknown op 'x'",
    "bad_base64_decimal": "after.p: cannot convert '!!'",
    "not_an_object": "value payload is not an object",
    "deeply_nested": "depth limit exceeded",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_decodes_fields_exactly(name):
    case = CASES[name]
    records = decode("debezium", case["key"], case["value"], case["headers"])
    assert len(records) == 1
    got = records[0]
    assert set(got) == set(FIELD_NAMES)
    assert got["decode_error"] is None
    assert got["envelope_format"] == "debezium"
    assert got["row_index"] == 0
    for field, expected in EXPECTED[name].items():
        assert got[field] == expected, field
    unlisted = set(FIELD_NAMES) - set(EXPECTED[name]) - {"envelope_format", "row_index"}
    if name.startswith(("seed000", "tombstone", "transaction", "heartbeat")):
        # fully specified cases: everything else is null
        assert {f: got[f] for f in unlisted if got[f] is not None} == {}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_input_gives_one_error_record(name):
    case = CASES[name]
    records = decode("debezium", case["key"], case["value"], case["headers"])
    assert len(records) == 1
    assert records[0]["kind"] == "error"
    assert ERRORS[name] in records[0]["decode_error"]


@pytest.mark.parametrize(
    ("envelope_format", "value", "reason"),
    [
        ("nope", "{}", "unknown envelope format 'nope'"),
        ("debezium", "", "malformed JSON in value"),
        ("debezium", '"text"', "value payload is not an object"),
        ("debezium", '{"op":"c","source":{}}', "op 'c' without an 'after' image"),
        ("debezium", '{"op":"d","source":{}}', "op 'd' with neither a 'before' image nor a key"),
        ("debezium", '{"status":"MAYBE","id":"1"}', "transaction event with unknown status"),
        ("debezium", '{"schema": 3, "payload": {}}', "value.schema is not an object"),
    ],
)
def test_error_reasons_say_what_is_wrong(envelope_format, value, reason):
    (got,) = decode(envelope_format, None, value)
    assert got["kind"] == "error"
    assert reason in got["decode_error"]


def test_a_json_null_value_is_a_tombstone():
    (got,) = decode("debezium", '{"id": 3}', "null")
    assert (got["kind"], got["key_json"], got["decode_error"]) == ("tombstone", '{"id":3}', None)


def test_primitive_key_is_kept_under_a_name():
    (got,) = decode("debezium", "42", '{"op":"c","after":{"id":42},"source":{"lsn":1}}')
    assert got["key_json"] == '{"key":42}'
    assert got["position"] == "00000000000000000001"


# the JSON converter's envelope without its schema block ({"payload": ...}), read as Debezium's
# own serde reads it; a key column that is really named "payload" holds a scalar
_VALUE = (
    '{"before":null,"after":{"id":5,"payload":"x"},"op":"c","source":{"connector":"postgresql",'
    '"name":"pg","db":"d","schema":"public","table":"t","lsn":5,"ts_ms":1}}'
)


@pytest.mark.parametrize(
    ("key", "key_json"),
    [
        ('{"payload": {"id": 5}}', '{"id":5}'),  # the envelope, schema left out
        ('{"schema": null, "payload": {"id": 5}}', '{"id":5}'),  # the envelope, schema null
        ('{"id": 5}', '{"id":5}'),  # schemas.enable=false
        ('{"payload": 5}', '{"payload":5}'),  # a key column named payload
    ],
)
def test_a_key_payload_without_schema_is_the_converter_envelope(key, key_json):
    (record,) = decode("debezium", key, _VALUE)
    assert record["key_json"] == key_json


def test_a_value_payload_without_schema_is_the_converter_envelope():
    (record,) = decode("debezium", None, '{"payload": ' + _VALUE + "}")
    assert (record["op"], record["after_json"]) == ("c", '{"id":5,"payload":"x"}')


def test_times_before_the_year_1000_keep_four_digits_of_year():
    """Every temporal logical type renders ISO-8601 with four year digits, as dates do."""
    moment = dt.datetime(999, 1, 2, 3, 4, 5, 600000)
    millis = (moment - dt.datetime(1970, 1, 1)) // dt.timedelta(milliseconds=1)
    types = {
        "t_ms": ("int64", "io.debezium.time.Timestamp", millis),
        "t_us": ("int64", "io.debezium.time.MicroTimestamp", millis * 1000),
        "t_ns": ("int64", "io.debezium.time.NanoTimestamp", millis * 1_000_000 + 7),
        "t_z": ("int64", "org.apache.kafka.connect.data.Timestamp", millis),
        "d": ("int32", "io.debezium.time.Date", millis // 86_400_000),
    }
    fields = [{"field": c, "type": t, "name": n} for c, (t, n, _) in types.items()]
    schema = {
        "type": "struct",
        "fields": [
            {"field": "after", "type": "struct", "optional": True, "fields": fields},
            {"field": "op", "type": "string"},
        ],
    }
    payload = {
        "after": {c: v for c, (_, _, v) in types.items()},
        "op": "c",
        "source": {"connector": "postgresql", "lsn": 1, "ts_ms": 0},
    }
    [got] = decode("debezium", None, json.dumps({"schema": schema, "payload": payload}))
    assert got["decode_error"] is None
    assert json.loads(got["after_json"]) == {
        "t_ms": "0999-01-02T03:04:05.600000",
        "t_us": "0999-01-02T03:04:05.600000",
        "t_ns": "0999-01-02T03:04:05.600000007",
        "t_z": "0999-01-02T03:04:05.600000Z",
        "d": "0999-01-02",
    }
