"""The landing folder as the Python workers see it: the files a listing names (those Spark's
own listing names, by the same paths), whether a folder exists, and the records a file holds
as the accounting counts them (what Spark's text reader reads of a whole file)."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from python_udfs.filesystems import folder_exists, list_files
from python_udfs.landed import landed_records

# names Spark hides or keeps, and names a URI must escape (a space, '%', '#', '?', non-ASCII)
NAMES = [
    "a.json",
    "b.jsonl",
    "sp ace é.jsonl",
    "sub dir/b%20c.json",
    "sub dir/d#e?.jsonl",
    "sub dir/deeper/f.json.gz",
    "sub dir/_hidden/x.json",
    ".dot/y.json",
    "_z.json",
    ".w.json",
    "k=v.json",
    "_p=1/q.json",
    "c.json._COPYING_",
    "_SUCCESS",
    "notes.txt",
]


@pytest.mark.parametrize("glob", ["*", "*.json", "*.{json,jsonl}", "[a-k]*", "?.json*"])
def test_a_listing_names_the_files_spark_lists_by_its_paths(spark, tmp_path, glob):
    for number, name in enumerate(NAMES):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x" * number)
    listed = list_files(str(tmp_path), glob)
    by_spark = (
        spark.read.format("binaryFile")
        .option("recursiveFileLookup", "true")
        .option("pathGlobFilter", glob)
        .load(str(tmp_path))
        .selectExpr(
            "_metadata.file_path",
            "_metadata.file_size",
            "unix_micros(_metadata.file_modification_time)",
        )
        .collect()
    )
    assert listed == sorted(tuple(r) for r in by_spark)
    assert listed  # every glob here matches some file
    # the SQL function lists the same, from a file: URI of the folder too
    rows = spark.sql(
        "select * from changelake_landed_files(:folder, :glob)",
        args={"folder": tmp_path.as_uri(), "glob": glob},
    ).collect()
    assert sorted(tuple(r) for r in rows) == listed


def test_a_missing_folder_lists_nothing_and_is_told_from_an_empty_one(tmp_path, spark):
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
        "hdfs://namenode/landing/pg": None,  # no HDFS client here: unknown, not false
        None: None,
    }
    assert {path: folder_exists(path) for path in cases} == cases
    assert list_files(str(missing)) == list_files(str(empty)) == []
    # the same answers from the registered SQL function
    paths = [p for p in cases if p is not None]
    rows = spark.createDataFrame([(p,) for p in paths], "path string")
    rows.createOrReplaceTempView("folder_paths")
    found = spark.sql("select path, changelake_folder_exists(path) as found from folder_paths")
    assert {r.path: r.found for r in found.collect()} == {p: cases[p] for p in paths}


def _non_empty_lines(text: bytes) -> int:
    """The records the reader and the accounting see: lines split on '\\n' that hold a byte
    besides '\\r'."""
    return sum(1 for line in text.split(b"\n") if line.strip(b"\r"))


def _records(content: bytes, name: str) -> int:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(content)
        return landed_records(path.as_uri())


_LINES = st.lists(
    st.sampled_from([b"", b"\r", b'{"id": 1}', b'{"id": 2}\r', b"\r\r", b"x" * 3000, b"\xff\xfe"]),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINES, min_size=1, max_size=4), st.booleans(), st.data())
def test_a_gzip_file_is_counted_whole_or_not_at_all(members, final_newline, data):
    """Every line of a whole gzip file (one member or several, NUL padding after them) is
    counted; a file cut inside a member, or followed by bytes that are no member, counts no
    line (the reader reads none of it), never the lines before the cut."""
    texts = [b"\n".join(lines) + (b"\n" if final_newline else b"") for lines in members]
    parts = [gzip.compress(text, compresslevel=1) for text in texts]
    whole = b"".join(parts)
    expected = _non_empty_lines(b"".join(texts))
    assert _records(whole, "a.json.gz") == expected
    assert _records(whole + b"\0" * data.draw(st.integers(1, 70_000)), "a.json.gz") == expected
    assert _records(whole + b"not gzip", "a.json.gz") == 0
    # a cut inside the last member (a cut between members leaves a whole file of fewer)
    cut = data.draw(st.integers(len(whole) - len(parts[-1]) + 1, len(whole) - 1))
    assert _records(whole[:cut], "a.json.gz") == 0
    # the same text, not compressed
    assert _records(b"".join(texts), "a.json") == expected


def test_records_counted_are_those_spark_text_reader_reads_from_whole_files(spark, tmp_path):
    """The SQL function counts what Spark's text reader reads from a whole file (several
    members, a file of many steps, CRLF lines, no final newline) and no line of a compressed
    file that is cut short, empty or not gzip, which the text reader reads in part or not at
    all."""
    big = b"".join(b'{"id": %d, "pad": "%s"}\r\n' % (i, b"p" * (i % 300)) for i in range(60_000))
    files = {
        "members.json.gz": gzip.compress(b"a\n\nb\n") + gzip.compress(b"\r\nc\r\nd"),
        "big.json.gz": gzip.compress(big + b"\n\nlast", compresslevel=1),
        "big.json": big + b"\n\nlast",
        "cut.json.gz": gzip.compress(big)[:-5000],
        "not-gzip.json.gz": b"this is not a gzip stream\n",
        "empty.json.gz": b"",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    counted = {
        r.landed_file.rsplit("/", 1)[-1]: r.records_landed
        for r in spark.sql(
            "select * from changelake_landed_records(:folder, '*', null)",
            args={"folder": str(tmp_path)},
        ).collect()
    }
    read = spark.read.options(lineSep="\n", ignoreCorruptFiles="true").text(str(tmp_path))
    by_file = {
        r.name: r.lines
        for r in read.selectExpr("_metadata.file_name as name", "value")
        .where("rtrim('\\r', value) != ''")
        .groupBy("name")
        .count()
        .withColumnRenamed("count", "lines")
        .collect()
    }
    for whole in ("members.json.gz", "big.json.gz", "big.json"):
        assert by_file[whole] == counted[whole], whole
    assert counted["members.json.gz"] == 4
    assert counted["big.json"] == counted["big.json.gz"] == 60_001
    # the text reader reads the cut file up to the cut, without a word: it counts no line
    assert 0 < by_file["cut.json.gz"] < 60_000
    assert counted["cut.json.gz"] == counted["not-gzip.json.gz"] == 0
    assert "empty.json.gz" not in counted  # an empty file is not listed, as Spark lists none
    # only the files named, where they are named
    only = spark.sql(
        "select * from changelake_landed_records(:folder, '*', array(:path))",
        args={"folder": str(tmp_path), "path": (tmp_path / "members.json.gz").as_uri()},
    ).collect()
    assert [tuple(r) for r in only] == [((tmp_path / "members.json.gz").as_uri(), 4)]
