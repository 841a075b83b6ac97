"""The benchmark as a smoke test: every measurement runs at a small size and renders its
page and results file into a docs copy. Times are printed, never asserted."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest

from python_udfs import bench
from python_udfs.bench import cli, large
from python_udfs.bench import decode as bench_decode
from python_udfs.generator import FEEDS


@pytest.mark.long(8)
def test_benchmark_runs_small_and_writes_its_tables(spark, tmp_path):
    results = bench.run(
        spark,
        tmp_path / "bench",
        events=3_000,
        rounds=1,
        age_runs=2,
        age_increment=300,
        tenth=False,
        large_file_sizes=(64 * 1024, 256 * 1024),
    )
    decode = results["decode"]
    assert decode["records"] > 3_000  # row changes plus markers, heartbeats, tombstones
    assert all(decode[k] > 0 for k in ("floor", "native", "transfer", "udf", "reader"))
    for python in (decode["python"], results["decode_schemaless"]["python"]):
        assert python["records"] > 3_000
        assert all(python[k] > 0 for k in ("to_python", "parse", "to_arrow", "whole"))
    assert [p["events"] for p in results["pipeline"]] == [3_000]
    assert all(p["matched"] for p in results["pipeline"])
    assert {f["feed"] for f in results["per_format"]} == set(FEEDS)
    # the peer on one PostgreSQL feed: built, and its differences from ChangeLake counted
    (peer,) = results["peer"]
    assert peer["events"] == 3_000
    assert peer["matched"]
    assert all(peer[k] > 0 for k in ("run", "build", "peer"))
    differences = peer["differences"]
    assert differences["peer_versions"] > differences["noop_kept"] > 0
    assert differences["toast_kept"] > 0
    assert differences["truncates"] >= 1
    assert differences["open_after_truncate"] > 0
    assert differences["peer_current"] > differences["current"] > 0
    large = results["large_files"]
    assert [(f["shape"], f["exact"], f["errors"]) for f in large] == [
        ("kcat", True, 0),
        ("sink", True, 0),
        ("sink.gz", True, 0),
    ] * 2
    assert all(f["compressed_bytes"] > 0 for f in large if f["shape"] == "sink.gz")
    assert all(f["heap_live"] > 0 for f in large)
    assert all(f["python_peak"] > 0 for f in large)
    assert all(f["landed_counted"] == f["records"] for f in large)
    results["commit"] = "abc1234"
    docs = tmp_path / "docs"
    kept = cli.write_results(docs, results)
    assert kept == docs / "benchmark" / f"{results['date']}-abc1234.json"
    cli.show_page(json.loads(kept.read_text()), docs, True, kept)
    text = (docs / "benchmark.md").read_text()
    print(text)
    assert text.startswith("# Benchmark\n")
    assert f"from `{kept.name}` (commit `abc1234`)" in text
    assert "## Method" in text
    assert "| ChangeLake UDF" in text
    assert "| ChangeLake reader: the Python workers read and decode the files |" in text
    assert "| transfer: to the Python worker and back, no decoding |" in text
    assert "| the whole batch, as the UDF runs it |" in text
    assert "changes/s (full)" in text
    assert "| layer | full refresh s | +1% incremental s |" in text
    assert "| data tests |" in text
    assert "The +1% increment's slowest nodes:" in text
    assert "The full refresh's slowest nodes:" in text
    assert "| line numbers and offsets | the accounting's count of its lines |" in text
    assert "**Against the Spark SQL a user would write**" in text
    assert "| `dbt run --full-refresh` / peer at 3,000 changes | <= 1.50 |" in text
    assert "| `dbt build --full-refresh` of 3,000 changes, seconds | <= 15 |" in text
    assert "| versions (history rows) |" in text
    age = results["age"]
    assert [r["run"] for r in age["runs"]] == [1, 2]
    assert age["matched"]
    assert not any(r["failed"] for r in age["runs"])
    assert all(r["heap"] > 0 for r in age["runs"])
    assert "| builds that failed | 0 | 0 | met |" in text
    assert "driver heap after GC, MiB |" in text
    assert len(age["idle_after"]) == 3
    idle = "| `dbt build` with nothing new, seconds (warm session), "
    assert f"{idle}right after the last run (with the maintenance it left due) | < 10 |" in text
    assert f"{idle}median of the three builds after that one | < 10 |" in text
    # the age world does not grow, and cdc_current is read against parquet in it and at size
    assert "that ages without growing" in text
    assert age["current_rows"] > 0
    assert results["pipeline"][0]["current_rows"] > 0
    assert "read cdc_current / scan a parquet table of its rows, after the age runs (" in text
    assert "read cdc_current / scan a parquet table of its rows, at 3,000 changes after" in text
    # every decoder goal has its row, measured or saying why not
    assert "| UDF / native, Debezium PostgreSQL with schemas | <= 1.00 |" in text
    assert "| slowest feed's decode, records/s (" in text
    assert "| full refresh at 3,000 changes, changes/s | >= 20,000 |" in text
    assert "| UDF / native, schemaless Debezium (payloads alone) | <= 1.00 |" in text
    assert results["decode_schemaless"]["records"] == decode["records"]
    for shape in ("kcat file", "sink file", "sink.gz file (its text)"):
        assert (
            f"{shape} decodes with the default driver memory, lines and offsets exact; "
            "peak live heap" in text
        )
    assert "**Large landed files**" in text


@pytest.mark.long(4)
def test_a_1_gib_landed_file_of_each_shape_decodes_with_lines_and_offsets_exact(spark, tmp_path):
    """A file of 1 GiB of text (a day of kcat output; a Connect sink file with a large
    flush.size, uncompressed and gzip) decodes in the shared session's default driver memory:
    every line once, each with its line number and its offset, and no record quarantined; the
    accounting test's count of its lines, in the same memory, is its number of records. The
    live heap's growth with the file is measured by the benchmark, not asserted here."""
    results = large.large_file_bench(spark, tmp_path, (2**30,), live=False)
    assert [f["shape"] for f in results] == ["kcat", "sink", "sink.gz"]
    for f in results:
        assert f["bytes"] >= 2**30
        assert f["records"] > 100_000
        assert (f["exact"], f["errors"]) == (True, 0), f["shape"]
        # the accounting test counts the file's lines in the same memory (read whole, a 1 GiB
        # file ran the driver's heap out)
        assert f["landed_counted"] == f["records"], f["shape"]


@pytest.mark.parametrize("schemas", [True, False], ids=["with schemas", "schemaless"])
def test_native_decode_gives_the_udf_values(spark, tmp_path, schemas):
    """The native SQL path computes what the UDF computes (so the comparison is fair), with
    the Connect schema blocks and without them (the payloads alone, values as sent)."""
    import json

    from python_udfs.generator import generate

    out = tmp_path / "pg"
    generate(out, events=400, keys=10, batches=1, feeds=["pg_inventory"])
    files = sorted(str(p) for p in out.glob("batch-*/pg_inventory/pg_server.public.*"))
    if not schemas:
        files = bench_decode.schemaless_lines(spark, files, tmp_path / "schemaless")
        records = [json.loads(line) for f in files for line in Path(f).read_text().splitlines()]
        assert sum('"after"' in (r.get("payload") or "") for r in records) > 100
        # no Connect envelope ({"schema": ..., "payload": ...}) is left, in keys or values
        # (the generator's malformed records stay as they are)
        assert not any(_is_envelope(r.get(part)) for r in records for part in ("key", "payload"))
    spark.read.text(files).createOrReplaceTempView("bench_check_lines")
    native = {
        (r.table_name, r.position): r
        for r in spark.sql(bench_decode.native_debezium_sql("bench_check_lines", schemas)).collect()
        if r.op in ("c", "r")
    }
    udf = spark.sql(
        f"select inline(changelake_decode('debezium', r.key, r.payload, r.headers)) "
        f"from (select from_json(value, '{bench_decode.KCAT_SCHEMA}') as r from bench_check_lines)"
    ).collect()
    compared = 0
    for change in udf:
        if change.kind != "row" or change.op not in ("c", "r"):
            continue
        n = native[(change.table_name, change.position)]
        assert json.loads(n.key_json) == json.loads(change.key_json)
        assert n.committed_at == change.committed_at
        expected = json.loads(change.after_json)
        got = json.loads(n.after_json)
        for column, value in expected.items():
            assert same(got.get(column), value), (column, got.get(column), value)
        compared += 1
    assert compared > 100
    # the native decode into every column of the layout gives the decoder's values, on every
    # kind of record and op (TOAST placeholders and changed keys among them)
    layout = {
        (r.table_name, r.position, r.op_raw): r
        for r in spark.sql(
            bench_decode.native_debezium_layout_sql("bench_check_lines", schemas)
        ).collect()
        if r.kind == "row"
    }
    checked = {"unavailable": 0, "before": 0, "linked": 0}
    for change in udf:
        if change.kind != "row":
            continue
        n = layout[(change.table_name, change.position, change.op_raw)]
        for column in (
            "source_engine", "source_name", "database_name", "schema_name", "op",
            "key_columns", "committed_at", "captured_at", "transaction_id", "is_snapshot",
        ):  # fmt: skip
            assert n[column] == change[column], (column, n[column], change[column])
        assert json.loads(n.key_json) == json.loads(change.key_json)
        assert (n.unavailable_columns or None) == change.unavailable_columns
        assert n.column_types == (change.column_types if schemas else None)
        assert json.loads(n.linked_key_json or "null") == json.loads(
            change.linked_key_json or "null"
        )
        for image in ("before_json", "after_json"):
            expected, got = change[image], n[image]
            assert (got is None) == (expected is None), image
            for column, value in json.loads(expected or "{}").items():
                assert same(json.loads(got).get(column), value), (image, column, value)
        checked["unavailable"] += change.unavailable_columns is not None
        checked["before"] += change.before_json is not None
        checked["linked"] += change.linked_key_json is not None
    assert all(checked.values()), checked


def _is_envelope(text) -> bool:
    """Whether ``text`` is a Kafka Connect JSON envelope: a schema block beside a payload."""
    import json

    try:
        value = json.loads(text or "")
    except ValueError:
        return False
    return isinstance(value, dict) and {"schema", "payload"} <= set(value)


def same(native, canonical) -> bool:
    """Equal values across the two renderings: to_json's numbers and zoned timestamps vs the
    canonical text (exact decimals, zone-less timestamps)."""
    if native == canonical:
        return True
    try:
        return Decimal(str(native)) == Decimal(str(canonical))
    except ArithmeticError:
        pass
    try:
        native_time = dt.datetime.fromisoformat(str(native)).replace(tzinfo=None)
        return native_time == dt.datetime.fromisoformat(str(canonical))
    except ValueError:
        return False
