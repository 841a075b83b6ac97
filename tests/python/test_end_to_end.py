"""End to end on embedded Spark: landing files through every model with real dbt runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "landing"
SAMPLE = FIXTURES / "pg_inventory" / "customers-0-000000.jsonl"

pytestmark = pytest.mark.dbt


def _rows(spark, sql):
    return [r.asDict() for r in spark.sql(sql).collect()]


def test_build_lands_decodes_and_logs_changes(dbt, spark, tmp_path):
    dbt.land("pg_inventory", SAMPLE)
    dbt("build")
    s = dbt.schema

    decoded = _rows(
        spark,
        f"select kafka_offset, kind, op, error_reason is not null as failed, "
        f"failed_raw_record from {s}.decoded_pg_inventory order by kafka_offset nulls first",
    )
    # 8 landed lines: 6 decodable records, 1 bad value, 1 line that is not a kcat record
    assert len(decoded) == 8
    assert [(r["kafka_offset"], r["kind"], r["op"]) for r in decoded[1:]] == [
        (0, "row", "r"),
        (1, "row", "c"),
        (2, "row", "u"),
        (3, "message", None),
        (4, "row", "d"),
        (5, "tombstone", None),
        (6, "error", None),
    ]
    assert decoded[0]["failed"]
    assert decoded[0]["failed_raw_record"] == ("this line is not a kcat record")
    assert decoded[-1]["failed"]
    assert '"offset":6' in decoded[-1]["failed_raw_record"]

    log = _rows(
        spark,
        f"select kafka_offset, op, key_json, after_json, position, committed_at "
        f"from {s}.cdc_change_log order by position",
    )
    assert [(r["kafka_offset"], r["op"], r["key_json"]) for r in log] == [
        (0, "r", '{"id":1}'),
        (1, "c", '{"id":2}'),
        (2, "u", '{"id":1}'),
        (4, "d", '{"id":2}'),
    ]
    assert json.loads(log[2]["after_json"])["first_name"] == "Anne Marie"

    # Running again with nothing new changes nothing.
    dbt("build")
    assert spark.sql(f"select count(*) from {s}.decoded_pg_inventory").first()[0] == 8

    # A new file is read incrementally: only its records are added.
    later = tmp_path / "customers-0-000008.jsonl"
    record = json.loads(SAMPLE.read_text().splitlines()[1])
    record["offset"] = 8
    later.write_text(json.dumps(record) + "\n")
    dbt.land("pg_inventory", later)
    dbt("build")
    offsets = [
        r["kafka_offset"]
        for r in _rows(spark, f"select kafka_offset from {s}.decoded_pg_inventory")
    ]
    assert sorted(o for o in offsets if o is not None) == [0, 1, 2, 3, 4, 5, 6, 8]
