"""The pipeline under delivery faults, with real dbt runs: a connector restart re-sends changes
at new Kafka offsets, and each change still counts once in the change log and the history."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.dbt

RESENT = 4  # the last records of every landed file, sent again after a restart
NEW_OFFSETS = 1_000_000  # where the restarted connector's records land in each partition
SINK_NAME = re.compile(r"(.+)[+](\d+)[+](\d+)[.]json[.]gz$")


def restart_file(file: Path, out: Path) -> Path:
    """The last ``RESENT`` records of ``file`` as a restarted connector re-sends them: the same
    messages at new offsets (kcat lines, or a Connect sink file with a new start offset)."""
    sink = SINK_NAME.match(file.name)
    if sink:
        lines = gzip.decompress(file.read_bytes()).decode().splitlines()
        topic, partition, start = sink.group(1), int(sink.group(2)), int(sink.group(3))
        tail = lines[-RESENT:]
        name = f"{topic}+{partition}+{start + len(lines) - len(tail) + NEW_OFFSETS}.json.gz"
        target = out / name
        target.write_bytes(gzip.compress(("\n".join(tail) + "\n").encode()))
        return target
    records = []
    for line in file.read_text().splitlines()[-RESENT:]:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a malformed line is not a Kafka record: nothing to re-send
        if isinstance(record, dict) and isinstance(record.get("offset"), int):
            records.append(record)
    tail = records
    for record in tail:
        record["offset"] += NEW_OFFSETS
    target = out / f"restart-{file.name}"
    target.write_text("".join(json.dumps(r) + "\n" for r in tail))
    return target


def snapshot(spark, schema):
    changes = spark.sql(
        f"select change_id, feed, op, key_json, before_json, after_json, position "
        f"from {schema}.cdc_change_log"
    ).collect()
    history = spark.sql(
        f"select feed, table_name, key_json, version_number, row_json, valid_from_position, "
        f"valid_to_position, is_current, is_deleted from {schema}.cdc_history"
    ).collect()
    return sorted(map(tuple, changes)), sorted(map(tuple, history))


def test_changes_resent_after_a_connector_restart_count_once(dbt, spark, tmp_path):
    """Every generated feed (Debezium PostgreSQL and SQL Server sink files, dtle, DataWorks,
    Tencent, Canal): after a build, every landed file's last records arrive again at new
    offsets; the change log and the history do not change, and the next batch still gives the
    generator's expected state."""
    from python_udfs.generator import batch_folders, compare, generate

    summary = generate(tmp_path / "generated", events=1_500, keys=20, batches=2, seed=11)
    first, second = batch_folders(tmp_path / "generated")
    for feed_dir in sorted(first.iterdir()):
        for file in sorted(feed_dir.iterdir()):
            dbt.land(feed_dir.name, file)
    dbt("build", "--exclude", "tag:accounting")
    s = dbt.schema
    before = snapshot(spark, s)
    assert len(before[0]) > 500

    restarts = tmp_path / "restarts"
    for feed_dir in sorted(first.iterdir()):
        (restarts / feed_dir.name).mkdir(parents=True)
        for file in sorted(feed_dir.iterdir()):
            dbt.land(feed_dir.name, restart_file(file, restarts / feed_dir.name))
    dbt("build")
    assert snapshot(spark, s) == before

    for feed_dir in sorted(second.iterdir()):
        for file in sorted(feed_dir.iterdir()):
            dbt.land(feed_dir.name, file)
    dbt("build")
    report = compare(spark, s, summary)
    assert [r for r in report if not r["matched"]] == []
