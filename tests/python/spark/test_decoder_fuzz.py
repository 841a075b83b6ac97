"""Hostile messages against every decoder: each field of every real message (the conformance
corpus and the seed examples) replaced by every JSON type, huge and deeply nested values; big
integers and long decimals; headers of the wrong shape.

Nothing raises, in ``python_udfs.decode`` or in the UDF body on a whole Arrow batch; every
record has exactly the layout's types or is one error record naming what is wrong (never a
bare Python exception text); the UDF body gives what the pure decoder gives. CI tries each
field with a rotating third of the replacement values; ``CHANGELAKE_FUZZ=full`` tries them all.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import _parse_datatype_string

from python_udfs import decode
from python_udfs.layout import SPARK_SCHEMA, nonconforming
from python_udfs.spark_udfs import decode_batch

FIXTURES = Path(__file__).parents[1] / "fixtures"
FULL = os.environ.get("CHANGELAKE_FUZZ") == "full"


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


REPLACEMENTS: tuple[Any, ...] = (
    None,
    True,
    0,
    -1,
    2**70,
    1.5,
    "",
    "x",
    [],
    {},
    [1],
    {"a": 1},
    "9" * 25_000,
    _nested(300),
    "é\u0000\ud7ff",
)


def _corpus(shared_dir: Path) -> list[tuple[str, str, Any]]:
    """(case name, envelope format, parsed value) of every JSON message we hold."""
    from test_conformance import KEY_FILES, ROOT, envelope_format, messages

    out = []
    for path in sorted(ROOT.rglob("*")):
        relative = str(path.relative_to(ROOT))
        if not path.is_file() or relative.endswith(".md") or relative in KEY_FILES:
            continue
        for number, message in enumerate(messages(path)):
            try:
                out.append((f"{relative}#{number}", envelope_format(relative), json.loads(message)))
            except ValueError:
                continue  # deliberately invalid JSON: the conformance test covers it
    for case in json.loads((FIXTURES / "seeds" / "cases.json").read_text()):
        if case["value"]:
            out.append((case["name"], case["format"], json.loads(case["value"])))
    return out


def _paths(doc: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into ``doc`` (the first three items of a list)."""
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc[:3]):
            yield from _paths(value, (*prefix, index))


def _replaced(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    out = copy.deepcopy(doc)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = value
    return out


def _mutations(shared_dir: Path) -> dict[str, list[str]]:
    """Per envelope format, the mutated messages (as JSON text)."""
    out: dict[str, list[str]] = {}
    for _, fmt, doc in _corpus(shared_dir):
        for number, path in enumerate(_paths(doc)):
            for index, value in enumerate(REPLACEMENTS):
                if FULL or index % 3 == number % 3:
                    out.setdefault(fmt, []).append(json.dumps(_replaced(doc, path, value)))
    return out


@pytest.fixture(scope="module")
def mutations(shared_dir: Path) -> dict[str, list[str]]:
    return _mutations(shared_dir)


def _check(records: list[dict[str, Any]], where: str) -> None:
    assert records, where
    for r in records:
        assert nonconforming(r) is None, (where, nonconforming(r))
        assert (r["kind"] == "error") == (r["decode_error"] is not None), where
        if r["decode_error"] is not None:
            assert len(records) == 1, where
            assert not r["decode_error"].startswith("unexpected"), (where, r["decode_error"])


def test_every_field_of_every_message_as_every_json_type(mutations):
    assert sum(map(len, mutations.values())) > 20_000
    for fmt, texts in mutations.items():
        for text in texts:
            _check(decode(fmt, None, text), f"{fmt}: {text[:200]}")


def test_the_udf_body_decodes_whole_batches_as_the_pure_decoder_does(spark, mutations):
    """One Arrow batch per format, hostile records among good ones: nothing fails the batch,
    and each record's result is the pure decoder's."""
    arrow_type = to_arrow_type(_parse_datatype_string(SPARK_SCHEMA), timezone="UTC")
    for fmt, texts in mutations.items():
        batch = decode_batch(
            pa.array([fmt] * len(texts)),
            pa.array([None] * len(texts), pa.string()),
            pa.array(texts, pa.string()),
            pa.array([None] * len(texts), pa.list_(pa.string())),
            arrow_type,
        ).to_pylist()
        assert len(batch) == len(texts)
        for text, got in zip(texts, batch, strict=True):
            want = decode(fmt, None, text)
            keep = ("kind", "decode_error", "key_json", "after_json", "before_json", "position")
            assert [{f: r[f] for f in keep} for r in got] == [
                {f: r[f] for f in keep} for r in want
            ], f"{fmt}: {text[:200]}"


def test_a_field_of_the_wrong_type_is_one_named_error_in_spark_too(spark):
    """A Canal message whose database is a number, between two good ones, in one Spark batch:
    the good ones decode, the bad one is one error record naming the field."""
    good = {
        "data": [{"id": "1"}],
        "database": "d",
        "table": "t",
        "type": "INSERT",
        "isDdl": False,
        "pkNames": ["id"],
        "es": 1_700_000_000_000,
        "ts": 1_700_000_000_001,
    }
    values = [json.dumps(good), json.dumps({**good, "database": 123}), json.dumps(good)]
    rows = spark.sql(
        "select changelake_decode('canal', null, v, null) as changes from values "
        + ", ".join(f"({i}, '{v}')" for i, v in enumerate(values))
        + " as t(i, v) order by i"
    ).collect()
    assert [[c.database_name for c in r.changes] for r in rows] == [["d"], [None], ["d"]]
    assert rows[1].changes[0].decode_error == "layout field database_name is not string: 123 (int)"


BIG_INT, LONG_DECIMAL = "18446744073709551617", "0.1234567890123456789"


@pytest.mark.parametrize(
    ("fmt", "message"),
    [
        (
            "canal",
            '{"data":[{"id":%s,"v":%s}],"database":"d","table":"t","type":"INSERT",'
            '"isDdl":false,"pkNames":["id"],"es":1,"ts":2}',
        ),
        (
            "maxwell",
            '{"database":"d","table":"t","type":"insert","ts":1,"data":{"id":%s,"v":%s},'
            '"primary_key_columns":["id"]}',
        ),
        (
            "ogg",
            '{"table":"S.T","op_type":"I","op_ts":"2024-01-01 00:00:00.000000","pos":"1",'
            '"primary_keys":["id"],"after":{"id":%s,"v":%s}}',
        ),
        (
            "debezium",
            '{"before":null,"after":{"id":%s,"v":%s},"op":"c","source":{"connector":'
            '"postgresql","name":"pg","db":"d","schema":"public","table":"t","lsn":5,"ts_ms":1}}',
        ),
    ],
)
def test_every_digit_survives(fmt, message):
    key = '{"id":' + BIG_INT + "}"
    (record,) = decode(fmt, key, message % (BIG_INT, LONG_DECIMAL))
    assert record["decode_error"] is None
    assert record["after_json"] == '{"id":' + BIG_INT + ',"v":' + LONG_DECIMAL + "}"
    # a number a float holds exactly renders as it always did
    (plain,) = decode(fmt, '{"id":1}', message % ("1", "1.50"))
    assert plain["after_json"] == '{"id":1,"v":1.5}'


def test_headers_of_the_wrong_shape_are_an_error_not_an_exception():
    value = '{"before":null,"after":{"id":1},"op":"c","source":{"connector":"postgresql"}}'
    for headers in (5, "x", [("a",)], [(1, "v")], [("a", 1)]):
        (record,) = decode("debezium", None, value, headers)  # type: ignore[arg-type]
        assert "header" in record["decode_error"]
