"""The Spark UDF gives exactly what the pure decoder gives, on the same inputs."""

from __future__ import annotations

import gc
import gzip
import json
from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import _parse_datatype_string

from python_udfs import ENVELOPE_FORMATS, FIELD_NAMES, decode
from python_udfs.layout import SPARK_SCHEMA
from python_udfs.spark_udfs import decode_batch, folder_exists, gzip_line_count

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


def test_folder_exists_tells_a_missing_folder_from_an_empty_one(tmp_path, spark):
    empty = tmp_path / "empty feed"
    empty.mkdir()
    (tmp_path / "a file").write_text("x")
    missing = tmp_path / "missing"
    cases = {
        str(empty): True,
        empty.as_uri(): True,  # file:///.../empty%20feed
        f"file:{empty}": True,
        str(missing): False,
        missing.as_uri(): False,
        str(tmp_path / "a file"): False,
        "s3a://bucket/landing/pg": None,  # Python cannot see it: unknown, not false
        "hdfs://namenode/landing/pg": None,
        None: None,
    }
    assert {path: folder_exists(path) for path in cases} == cases
    # the same answers from the registered SQL function
    paths = [p for p in cases if p is not None]
    rows = spark.createDataFrame([(p,) for p in paths], "path string")
    rows.createOrReplaceTempView("folder_paths")
    found = spark.sql("select path, changelake_folder_exists(path) as found from folder_paths")
    assert {r.path: r.found for r in found.collect()} == {p: cases[p] for p in paths}


def _non_empty_lines(text: bytes) -> int:
    """The records the text reader and the accounting see: lines split on '\\n' that hold a
    byte besides '\\r'."""
    return sum(1 for line in text.split(b"\n") if line.strip(b"\r"))


_LINES = st.lists(
    st.sampled_from([b"", b"\r", b'{"id": 1}', b'{"id": 2}\r', b"\r\r", b"x" * 3000, b"\xff\xfe"]),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, min_size=1, max_size=4), st.booleans(), st.data())
def test_a_gzip_file_is_counted_whole_or_not_at_all(members, final_newline, data):
    """Every line of a whole gzip file (one member or several, NUL padding after them) is
    counted; a file cut inside a member, or followed by bytes that are no member, counts as
    not whole (None), never as the lines before the cut."""
    texts = [b"\n".join(lines) + (b"\n" if final_newline else b"") for lines in members]
    parts = [gzip.compress(text, compresslevel=1) for text in texts]
    whole = b"".join(parts)
    expected = _non_empty_lines(b"".join(texts))
    assert gzip_line_count(whole) == expected
    assert gzip_line_count(whole + b"\0" * data.draw(st.integers(1, 70_000))) == expected
    assert gzip_line_count(whole + b"not gzip") is None
    # a cut inside the last member (a cut between members leaves a whole file of fewer)
    cut = data.draw(st.integers(len(whole) - len(parts[-1]) + 1, len(whole) - 1))
    assert gzip_line_count(whole[:cut]) is None


def test_gzip_lines_agree_with_the_text_reader_on_whole_files(spark, tmp_path):
    """The SQL function over a binaryFile table counts what Spark's text reader reads from a
    whole file (several members, a file of many steps, CRLF lines, no final newline) and
    nothing (None) for a file that is cut short, empty or not gzip, which the text reader reads
    in part or not at all."""
    big = b"".join(b'{"id": %d, "pad": "%s"}\r\n' % (i, b"p" * (i % 300)) for i in range(60_000))
    files = {
        "members.json.gz": gzip.compress(b"a\n\nb\n") + gzip.compress(b"\r\nc\r\nd"),
        "big.json.gz": gzip.compress(big + b"\n\nlast", compresslevel=1),
        "cut.json.gz": gzip.compress(big)[:-5000],
        "not-gzip.json.gz": b"this is not a gzip stream\n",
        "empty.json.gz": b"",
    }
    folder = tmp_path / "gz"
    folder.mkdir()
    for name, content in files.items():
        (folder / name).write_bytes(content)
        assert gzip_line_count(content) == (
            _non_empty_lines(gzip.decompress(content))
            if name in ("members.json.gz", "big.json.gz")
            else None
        )
    counted = {
        r.name: r.lines
        for r in spark.sql(
            f"select _metadata.file_name as name, changelake_gzip_lines(content) as lines "
            f"from binaryFile.`{folder}`"
        ).collect()
    }
    # (Spark lists no zero-byte file)
    assert counted == {name: gzip_line_count(content) for name, content in files.items() if content}
    read = spark.read.option("lineSep", "\n").option("ignoreCorruptFiles", "true").text(str(folder))
    by_file = {
        r.name: r.lines
        for r in read.selectExpr("_metadata.file_name as name", "value")
        .where("rtrim('\\r', value) != ''")
        .groupBy("name")
        .count()
        .withColumnRenamed("count", "lines")
        .collect()
    }
    assert by_file["members.json.gz"] == counted["members.json.gz"] == 4
    assert by_file["big.json.gz"] == counted["big.json.gz"] == 60_001
    # the reader reads the cut file up to the cut, without a word: the count says it is not whole
    assert 0 < by_file["cut.json.gz"] < 60_000
    assert counted["cut.json.gz"] is None
