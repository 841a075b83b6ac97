"""The Spark UDF gives exactly what the pure decoder gives, on the same inputs."""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import _parse_datatype_string

from python_udfs import ENVELOPE_FORMATS, FIELD_NAMES, decode
from python_udfs.layout import SPARK_SCHEMA
from python_udfs.spark_udfs import decode_batch

FIXTURES = Path(__file__).parents[1] / "fixtures"
CASES = (
    [
        {**json.loads(line), "format": "debezium"}
        for line in (FIXTURES / "debezium" / "cases.jsonl").read_text().splitlines()
    ]
    + [
        {**case, "name": "seed_" + case["name"]}
        for case in json.loads((FIXTURES / "seeds" / "cases.json").read_text())
    ]
    + [json.loads(line) for line in (FIXTURES / "formats" / "cases.jsonl").read_text().splitlines()]
)


def _flat(headers):
    return [part for pair in headers for part in pair] if headers else None


def test_udf_matches_pure_decoder(spark):
    rows = [(c["name"], c["format"], c["key"], c["value"], _flat(c["headers"])) for c in CASES]
    df = spark.createDataFrame(
        rows, "name string, format string, key string, value string, headers array<string>"
    )
    df.createOrReplaceTempView("udf_cases")
    got = {
        r.name: [c.asDict() for c in r.changes]
        for r in spark.sql(
            "select name, changelake_decode(format, key, value, headers) as changes from udf_cases"
        ).collect()
    }
    assert set(got) == {c["name"] for c in CASES}
    assert {c["format"].split(";")[0] for c in CASES} == set(ENVELOPE_FORMATS)
    for case in CASES:
        expected = decode(
            case["format"], case["key"], case["value"], [tuple(h) for h in case["headers"] or []]
        )
        actual = got[case["name"]]
        assert len(actual) == len(expected), case["name"]
        for want, have in zip(expected, actual, strict=True):
            for field in FIELD_NAMES:
                w, h = want[field], have[field]
                if field in ("committed_at", "captured_at") and w is not None:
                    # Spark returns naive local (UTC session) datetimes
                    w = w.replace(tzinfo=None)
                if field == "message_content" and h is not None:
                    h = bytes(h)
                assert h == w, (case["name"], field)


@settings(max_examples=300, deadline=None)
@given(
    key=st.one_of(st.none(), st.text(max_size=50)),
    value=st.one_of(
        st.none(), st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
    ),
    headers=st.one_of(st.none(), st.lists(st.one_of(st.none(), st.text(max_size=10)), max_size=5)),
)
def test_random_input_never_raises(key, value, headers):
    """The UDF body, Arrow in and out, on one record: never raises, always a full layout."""
    arrow_type = to_arrow_type(_parse_datatype_string(SPARK_SCHEMA), timezone="UTC")
    batch = decode_batch(
        pa.array(["debezium"]),
        pa.array([key], pa.string()),
        pa.array([value], pa.string()),
        pa.array([headers], pa.list_(pa.string())),
        arrow_type,
    )
    rows = batch.to_pylist()[0]
    assert rows
    assert all(list(r) == list(FIELD_NAMES) for r in rows)


def test_a_batch_decodes_without_cycle_collections_and_leaves_the_collector_as_found(spark):
    """The UDF body pauses Python's cycle collector while it decodes a batch, on the path where
    every record converts and on the one where a field of the wrong type sends the batch
    through the per-record check: a batch that sets off collections when decoded record by
    record sets off none while it decodes (at most one as it ends, when the collector is back on
    with the batch's allocations counted); whatever state the collector was in, it is in again
    after."""
    from python_udfs import decode_unchecked

    arrow_type = to_arrow_type(_parse_datatype_string(SPARK_SCHEMA), timezone="UTC")
    good = next(c for c in CASES if c["name"] == "canal_multi_row_insert")
    bad = json.dumps({**json.loads(good["value"]), "database": 123})
    collections: list[int] = []

    def started(phase: str, info: dict) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(started)
    try:
        kept = [decode_unchecked("canal", None, good["value"]) for _ in range(500)]
        assert len(collections) > 1, "the control batch is too small to set off collections"
        for values, quarantined in (([good["value"]] * 500, 0), ([good["value"]] * 499 + [bad], 1)):
            for enabled in (True, False):
                (gc.enable if enabled else gc.disable)()
                collections.clear()
                try:
                    batch = decode_batch(
                        pa.array(["canal"] * len(values)),
                        pa.array([None] * len(values), pa.string()),
                        pa.array(values, pa.string()),
                        pa.array([None] * len(values), pa.list_(pa.string())),
                        arrow_type,
                    )
                    assert gc.isenabled() is enabled
                    assert len(collections) <= (1 if enabled else 0), collections
                finally:
                    gc.enable()
                records = [r for rows in batch.to_pylist() for r in rows]
                assert sum(r["kind"] == "error" for r in records) == quarantined
                if quarantined:
                    assert "database_name" in records[-1]["decode_error"]
    finally:
        gc.callbacks.remove(started)
    del kept
