"""Property tests: random change histories, encoded per format, decode back to the same changes;
random input of any shape never makes a decoder raise."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from python_udfs import ENVELOPE_FORMATS, FIELD_NAMES, decode

EPOCH_DAY = dt.date(1970, 1, 1)

# ----------------------------------------------------------------------------------------------
# a random history of changes to one table: (op, row before, row after), rows keyed by id
# ----------------------------------------------------------------------------------------------

names = st.one_of(st.none(), st.text(max_size=12))
prices = st.decimals(
    min_value=Decimal("-99999.99"),
    max_value=Decimal("99999.99"),
    places=2,
    allow_nan=False,
    allow_infinity=False,
)
dates = st.dates(min_value=dt.date(1900, 1, 1), max_value=dt.date(2200, 12, 31))


@st.composite
def rows(draw, key: int) -> dict:
    return {
        "id": key,
        "name": draw(names),
        "price": draw(prices),
        "born": draw(dates),
        "active": draw(st.booleans()),
    }


@st.composite
def histories(draw) -> list[tuple[str, dict | None, dict | None]]:
    """Inserts, updates and deletes over a few keys, each valid for the state before it."""
    state: dict[int, dict] = {}
    out = []
    for _ in range(draw(st.integers(min_value=1, max_value=12))):
        key = draw(st.integers(min_value=1, max_value=4))
        if key not in state:
            row = draw(rows(key))
            state[key] = row
            out.append(("c", None, row))
        elif draw(st.booleans()):
            new = {**draw(rows(key)), "id": key}
            out.append(("u", state[key], new))
            state[key] = new
        else:
            out.append(("d", state.pop(key), None))
    return out


def canonical(row: dict | None, text_values: bool = False) -> dict | None:
    """The image the decoders promise for ``row`` (see python_udfs.layout)."""
    if row is None:
        return None
    out = {
        "id": row["id"],
        "name": row["name"],
        "price": str(row["price"]),
        "born": row["born"].isoformat(),
        "active": row["active"],
    }
    if text_values:
        return {
            k: None if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in out.items()
        }
    return out


def decoded(fmt: str, messages: list[str], key_of=lambda m: None) -> list[tuple]:
    out = []
    for message in messages:
        for r in decode(fmt, key_of(message), message):
            assert r["decode_error"] is None, r["decode_error"]
            out.append(
                (
                    r["op"],
                    json.loads(r["before_json"]) if r["before_json"] else None,
                    json.loads(r["after_json"]) if r["after_json"] else None,
                )
            )
    return out


# ----------------------------------------------------------------------------------------------
# encoders, one per format, written from the format documents
# ----------------------------------------------------------------------------------------------


def _decimal_bytes(value: Decimal, scale: int) -> str:
    unscaled = int(value.scaleb(scale))
    size = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


DEBEZIUM_ROW_SCHEMA = {
    "type": "struct",
    "fields": [
        {"type": "int32", "field": "id"},
        {"type": "string", "optional": True, "field": "name"},
        {
            "type": "bytes",
            "field": "price",
            "name": "org.apache.kafka.connect.data.Decimal",
            "parameters": {"scale": "2", "connect.decimal.precision": "7"},
        },
        {"type": "int32", "field": "born", "name": "io.debezium.time.Date"},
        {"type": "boolean", "field": "active"},
    ],
}


def debezium_messages(history, with_schema: bool) -> list[str]:
    def image(row):
        if row is None:
            return None
        return {
            "id": row["id"],
            "name": row["name"],
            "price": _decimal_bytes(row["price"], 2) if with_schema else str(row["price"]),
            "born": (row["born"] - EPOCH_DAY).days if with_schema else row["born"].isoformat(),
            "active": row["active"],
        }

    out = []
    for lsn, (op, before, after) in enumerate(history):
        payload = {
            "before": image(before),
            "after": image(after),
            "op": op,
            "ts_ms": 1,
            "source": {
                "connector": "postgresql",
                "name": "pg",
                "db": "d",
                "schema": "public",
                "table": "t",
                "lsn": lsn,
                "ts_ms": 1,
            },
        }
        if with_schema:
            schema = {
                "type": "struct",
                "fields": [
                    {**DEBEZIUM_ROW_SCHEMA, "field": "before", "optional": True},
                    {**DEBEZIUM_ROW_SCHEMA, "field": "after", "optional": True},
                ],
            }
            out.append(json.dumps({"schema": schema, "payload": payload}))
        else:
            out.append(json.dumps(payload))
    return out


def dataworks_messages(history, split_updates: bool) -> list[str]:
    columns = [
        {"name": "id", "type": "LONG"},
        {"name": "name", "type": "STRING"},
        {"name": "price", "type": "STRING"},
        {"name": "born", "type": "DATE"},
        {"name": "active", "type": "BOOLEAN"},
    ]

    def image(row):
        if row is None:
            return None
        epoch_ms = (row["born"] - EPOCH_DAY).days * 86_400_000
        return {
            "dataColumn": {
                "id": row["id"],
                "name": row["name"],
                "price": str(row["price"]),
                "born": epoch_ms,
                "active": row["active"],
            }
        }

    def message(op, before, after, seq):
        return json.dumps(
            {
                "schema": {
                    "dataColumn": columns,
                    "primaryKey": ["id"],
                    "source": {"dbType": "MySQL", "dbName": "d", "tableName": "t"},
                },
                "payload": {
                    "before": image(before),
                    "after": image(after),
                    "op": op,
                    "sequenceId": str(1000 + seq),
                    "timestamp": {"eventTime": 1},
                    "ddl": None,
                },
                "version": "0.0.1",
            }
        )

    out = []
    for seq, (op, before, after) in enumerate(history):
        if op == "c":
            out.append(message("INSERT", None, after, seq))
        elif op == "d":
            out.append(message("DELETE", before, None, seq))
        elif split_updates:
            out += [
                message("UPDATE_BEFOR", before, None, seq),
                message("UPDATE_AFTER", None, after, seq),
            ]
        else:
            out.append(message("UPDATE_AFTER", before, after, seq))
    return out


def _text_row(row):
    return canonical(row, text_values=True)


def tencent_messages(history) -> list[str]:
    types = {"c": "I", "u": "U", "d": "D"}
    return [
        json.dumps(
            {
                "BINLOG_NAME": "mysql-bin.000001",
                "BINLOG_POS": 100 + pos,
                "DATABASE": "d",
                "TABLE": "t",
                "TYPE": types[op],
                "TIME": "20240101000000",
                "NEW_VALUES": _text_row(after),
                "OLD_VALUES": _text_row(before),
                "EVENT_SERVER_ID": None,
                "GLOBAL_ID": None,
                "GROUP_ID": None,
            }
        )
        for pos, (op, before, after) in enumerate(history)
    ]


def canal_messages(history) -> list[str]:
    types = {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}
    out = []
    for es, (op, before, after) in enumerate(history):
        row = _text_row(after if after is not None else before)
        old = None
        if op == "u":
            prev = _text_row(before)
            old = [{k: v for k, v in prev.items() if row[k] != v}]  # only the changed columns
        out.append(
            json.dumps(
                {
                    "data": [row],
                    "old": old,
                    "database": "d",
                    "table": "t",
                    "type": types[op],
                    "isDdl": False,
                    "pkNames": ["id"],
                    "es": 1_700_000_000_000 + es,
                    "ts": 1,
                    "id": es,
                    "mysqlType": {
                        "id": "int",
                        "name": "varchar(12)",
                        "price": "decimal(7,2)",
                        "born": "date",
                        "active": "tinyint(1)",
                    },
                }
            )
        )
    return out


def maxwell_messages(history) -> list[str]:
    types = {"c": "insert", "u": "update", "d": "delete"}
    out = []
    for xid, (op, before, after) in enumerate(history):
        data = canonical(after if after is not None else before)
        message = {
            "database": "d",
            "table": "t",
            "type": types[op],
            "ts": 1,
            "xid": xid,
            "data": data,
            "primary_key_columns": ["id"],
        }
        if op == "u":
            prev = canonical(before)
            message["old"] = {k: v for k, v in prev.items() if data[k] != v}
        out.append(json.dumps(message))
    return out


def ogg_messages(history) -> list[str]:
    types = {"c": "I", "u": "U", "d": "D"}
    return [
        json.dumps(
            {
                "table": "S.T",
                "pos": f"{pos:020d}",
                "primary_keys": ["id"],
                "op_type": types[op],
                "op_ts": "2024-01-01 00:00:00.000000",
                "before": canonical(before),
                "after": canonical(after),
            }
        )
        for pos, (op, before, after) in enumerate(history)
    ]


def expected(history, text_values: bool = False, partial_canal: bool = False) -> list[tuple]:
    return [(op, canonical(b, text_values), canonical(a, text_values)) for op, b, a in history]


PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(histories())
def test_debezium_with_schema_round_trips(history):
    assert decoded("debezium", debezium_messages(history, with_schema=True)) == expected(history)


@PROPERTY
@given(histories())
def test_debezium_without_schema_keeps_values_as_sent(history):
    assert decoded("debezium", debezium_messages(history, with_schema=False)) == expected(history)


@PROPERTY
@given(histories())
def test_dataworks_one_record_updates_round_trip(history):
    def as_utc_midnight(changes):
        return [
            (op, *({**img, "born": img["born"] + "T00:00:00Z"} if img else None for img in imgs))
            for op, *imgs in changes
        ]

    got = decoded("dataworks", dataworks_messages(history, split_updates=False))
    assert got == as_utc_midnight(expected(history))


@PROPERTY
@given(histories())
def test_dataworks_split_updates_give_both_halves_in_order(history):
    got = decoded("dataworks", dataworks_messages(history, split_updates=True))
    want = []
    for op, before, after in expected(history):
        if op == "u":
            want += [("u", before, None), ("u", None, after)]
        else:
            want.append((op, before, after))
    fix = [
        (op, *({**i, "born": i["born"] + "T00:00:00Z"} if i else None for i in imgs))
        for op, *imgs in want
    ]
    assert got == fix


@PROPERTY
@given(histories())
def test_tencent_round_trips_as_text(history):
    assert decoded("tencent", tencent_messages(history)) == expected(history, text_values=True)


@PROPERTY
@given(histories())
def test_canal_rebuilds_full_before_images_from_partial_old(history):
    assert decoded("canal", canal_messages(history)) == expected(history, text_values=True)


@PROPERTY
@given(histories())
def test_maxwell_rebuilds_full_before_images_from_partial_old(history):
    assert decoded("maxwell", maxwell_messages(history)) == expected(history)


@PROPERTY
@given(histories())
def test_ogg_round_trips(history):
    assert decoded("ogg", ogg_messages(history)) == expected(history)


# ----------------------------------------------------------------------------------------------
# nothing makes a decoder raise
# ----------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
# documents that look like each envelope, with random parts
shaped = st.fixed_dictionaries(
    {},
    optional={
        "schema": json_values,
        "payload": json_values,
        "op": json_values,
        "before": json_values,
        "after": json_values,
        "source": json_values,
        "data": json_values,
        "old": json_values,
        "type": st.sampled_from(
            ["INSERT", "UPDATE", "DELETE", "insert", "update", "I", "U", "D", "QUERY", "x"]
        ),
        "TYPE": st.sampled_from(["I", "U", "D", "l", "?"]),
        "NEW_VALUES": json_values,
        "OLD_VALUES": json_values,
        "pkNames": json_values,
        "isDdl": json_values,
        "es": json_values,
        "ts": json_values,
        "op_type": json_values,
        "TIME": json_values,
        "BINLOG_POS": json_values,
        "sequenceId": json_values,
        "position": json_values,
    },
)
texts = st.one_of(
    st.none(),
    st.text(max_size=200),
    st.binary(max_size=200).map(lambda b: b.decode("latin-1")),
    json_values.map(json.dumps),
    shaped.map(json.dumps),
)


@settings(max_examples=400, deadline=None)
@given(
    fmt=st.sampled_from(ENVELOPE_FORMATS),
    key=texts,
    value=texts,
    headers=st.one_of(st.none(), st.lists(st.tuples(st.text(max_size=20), texts), max_size=3)),
)
def test_no_input_makes_a_decoder_raise(fmt, key, value, headers):
    records = decode(fmt, key, value, headers)
    assert records
    for r in records:
        assert set(r) == set(FIELD_NAMES)
        assert (r["kind"] == "error") == (r["decode_error"] is not None)
