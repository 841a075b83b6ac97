"""The Python reader of landed files (python_udfs/landed.py) outside a Spark task: byte ranges that
hold whole lines numbered exactly, lines split as Spark's text reader splits them, kcat fields
read as ``from_json`` with an explicit schema reads them, and the batches it sends."""

from __future__ import annotations

import gzip
import itertools
import json

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import _parse_datatype_string

from python_udfs import landed
from python_udfs.registry import decode

lines_st = st.lists(st.sampled_from([b"", b"a", b"bb", b"\r", b"x" * 40, b"{}\r"]), max_size=60)


@settings(max_examples=200, deadline=None)
@given(lines=lines_st, final_newline=st.booleans(), split=st.integers(1, 50))
def test_ranges_hold_whole_lines_numbered_as_in_the_file(
    tmp_path_factory, lines, final_newline, split
):
    content = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path_factory.mktemp("ranges") / "f.json"
    path.write_bytes(content)
    expected = list(enumerate(content.split(b"\n")))
    if content.endswith(b"\n") or not content:
        expected.pop()  # a final line end starts no line
    (reads,) = [landed.plan([[str(path), len(content), 0]], split)] if content else [[[]]]
    got = []
    for _, _, _, start, end, before in [r for task in reads for r in task] if content else []:
        got.extend(enumerate(landed.range_lines(str(path), start, end), before))
    assert got == expected
    if content:
        ranges = [r for task in reads for r in task]
        assert next(r[3] for r in ranges) == 0
        assert ranges[-1][4] == len(content)
        assert all(a[4] == b[3] for a, b in itertools.pairwise(ranges))
        # each range ends a line (or the file) and holds about a split's bytes
        assert all(content[r[4] - 1 : r[4]] == b"\n" for r in ranges[:-1])
        longest = max(len(line) for line in content.split(b"\n"))
        assert all(r[4] - r[3] <= split + longest + 1 for r in ranges)


@settings(max_examples=300, deadline=None)
@given(lines=lines_st, final_newline=st.booleans(), cuts=st.lists(st.integers(0, 400)))
def test_lines_split_alike_however_the_bytes_arrive_in_chunks(lines, final_newline, cuts):
    content = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    expected = content.split(b"\n")
    if content.endswith(b"\n") or not content:
        expected.pop()  # a final line end starts no line
    edges = sorted({0, len(content), *(c for c in cuts if c < len(content))})
    chunks = [content[a:b] for a, b in itertools.pairwise(edges)]
    assert list(landed._split(iter(chunks))) == expected


def test_compressed_files_are_packed_by_the_text_they_inflate_to(tmp_path):
    # 200 KB of text compress to a few hundred bytes: packed by compressed size, every file
    # of a feed would share one task (one core)
    files = []
    for name in ("a", "b", "c"):
        packed = tmp_path / f"{name}.json.gz"
        packed.write_bytes(gzip.compress(b"1\n" * 100_000))
        files.append([str(packed), packed.stat().st_size, 0])
    assert all(size < 1000 for _, size, _ in files)
    assert landed.text_bytes_of(files[0][0], files[0][1]) == 200_000
    assert [len(task) for task in landed.plan(files, 300_000)] == [1, 1, 1]
    assert [len(task) for task in landed.plan(files, 700_000)] == [3]
    # not gzip, or gone: weighed by its size
    other = tmp_path / "d.json.gz"
    other.write_bytes(b"x")
    assert landed.text_bytes_of(str(other), 1) == 1
    assert landed.text_bytes_of(str(tmp_path / "gone.json.gz"), 100) == 100


def test_small_files_share_a_task_and_a_compressed_one_is_never_split(tmp_path):
    plain = tmp_path / "a.json"
    plain.write_bytes(b"1\n" * 100)
    packed = tmp_path / "b.json.gz"
    packed.write_bytes(gzip.compress(b"1\n" * 100))
    tasks = landed.plan([[str(plain), 200, 0], [str(packed), packed.stat().st_size, 0]], 1000)
    assert len(tasks) == 1
    assert len(tasks[0]) == 2
    tasks = landed.plan([[str(packed), packed.stat().st_size, 0]], 10)
    assert tasks == [[(str(packed), packed.stat().st_size, 0, 0, packed.stat().st_size, 0)]]


def test_kcat_fields_are_read_as_from_json_reads_them():
    fields, problem = landed.kcat_fields(
        json.dumps({"topic": "t", "partition": 2, "offset": 9, "ts": 5, "key": 7, "payload": "{}"})
    )
    assert problem is None
    assert fields == {
        "topic": "t",
        "partition": 2,
        "offset": 9,
        "ts": 5,
        "headers": None,
        "key": "7",
        "payload": "{}",
    }
    # a field of the wrong JSON type is null and the line is malformed; the others are kept
    fields, problem = landed.kcat_fields('{"topic": "t", "partition": "0", "offset": 1}')
    assert (fields["topic"], fields["partition"], fields["offset"], problem) == (
        "t",
        None,
        1,
        "malformed",
    )
    assert landed.kcat_fields('{"partition": 4294967296}')[1] == "malformed"
    assert landed.kcat_fields('{"headers": "h"}')[1] == "malformed"
    assert landed.kcat_fields("[1]") == ({}, "malformed")
    assert landed.kcat_fields("{") == ({}, "malformed")
    assert landed.kcat_fields('{"headers": ["a", null, "b", 1]}')[0]["headers"] == [
        "a",
        None,
        "b",
        "1",
    ]


def test_a_task_sends_a_marker_a_file_and_a_row_a_decoded_change(spark, tmp_path):
    """A kcat file's lines decoded as the pure decoder decodes them, with their file, line
    and Kafka fields; errors with their raw record; a cut gzip sink file only its marker."""
    value = json.dumps(
        {
            "payload": {
                "before": None,
                "after": {"id": 1},
                "source": {
                    "connector": "postgresql",
                    "name": "s",
                    "db": "d",
                    "schema": "p",
                    "table": "t",
                    "lsn": 5,
                    "txId": 1,
                    "ts_ms": 1,
                },
                "op": "c",
                "ts_ms": 2,
            }
        }
    )
    kcat = {"topic": "s.p.t", "partition": 0, "offset": 3, "ts": 10, "key": None, "payload": value}
    path = tmp_path / "s.p.t-0.json"
    path.write_bytes(
        json.dumps(kcat).encode() + b"\r\n\n{oops\n" + json.dumps({"topic": "s.p.t"}).encode()
    )
    cut = tmp_path / "s.p.t+0+7.json.gz"
    cut.write_bytes(gzip.compress(value.encode())[:20])
    reads = [
        (str(path), path.stat().st_size, 1_000_000, 0, path.stat().st_size, 0),
        (str(cut), cut.stat().st_size, 2_000_000, 0, cut.stat().st_size, 0),
    ]
    schema = to_arrow_schema(_parse_datatype_string(landed.SCHEMA), timezone="UTC")
    (batch,) = landed.read_task(reads, "debezium", "auto", schema)
    rows = pa.Table.from_batches([batch]).to_pylist()
    marker, change, malformed, no_offset, cut_marker = rows
    assert (marker["landed_line"], marker["kind"], marker["error_reason"]) == (None, None, None)
    (expected,) = decode("debezium", None, value)
    assert {k: change[k] for k in expected} == expected
    assert (change["topic"], change["kafka_offset"], change["landed_line"]) == ("s.p.t", 3, 0)
    assert change["kafka_timestamp"].timestamp() == 0.01
    assert change["failed_raw_record"] is None
    assert (malformed["landed_line"], malformed["failed_raw_record"]) == (2, "{oops")
    assert malformed["error_reason"].startswith("malformed kcat JSON line (read as kcat lines")
    assert no_offset["error_reason"].startswith("kcat record without topic or offset")
    assert (cut_marker["landed_line"], cut_marker["topic"]) == (None, "s.p.t")
    assert cut_marker["landed_file"] == str(cut)


def test_a_file_removed_since_it_was_listed_sends_its_marker_alone(spark, tmp_path):
    """The commit quarantines a file with a marker and no lines as unreadable; the run goes on."""
    schema = to_arrow_schema(_parse_datatype_string(landed.SCHEMA), timezone="UTC")
    plain, packed = str(tmp_path / "gone.json"), str(tmp_path / "gone.json.gz")
    assert landed.plan([[plain, 10_000, 0]], 100) == [[(plain, 10_000, 0, 0, 10_000, 0)]]
    reads = [(plain, 10_000, 5, 0, 10_000, 0), (packed, 300, 6, 0, 300, 0)]
    (batch,) = landed.read_task(reads, "canal", "kcat", schema)
    rows = batch.to_pylist()
    assert [(r["landed_file"], r["landed_line"], r["error_reason"]) for r in rows] == [
        (plain, None, None),
        (packed, None, None),
    ]
