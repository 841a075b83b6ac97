"""The pipeline under delivery faults, with real dbt runs: a connector restart re-sends changes
at new Kafka offsets, and each change still counts once in the change log and the history."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

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


@pytest.mark.long(2)
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


def compiled(dbt, jinja: str) -> str:
    """The SQL dbt compiles from ``jinja`` (a macro call) in the test's project and schema."""
    result = dbt("compile", "--inline", jinja)
    return result.result.results[0].node.compiled_code


def kcat_line(topic: str, offset: int, value: dict, key: dict | None = None) -> str:
    record = {"topic": topic, "partition": 0, "offset": offset, "ts": 1_700_000_000_000}
    key_text = None if key is None else json.dumps(key)
    return json.dumps({**record, "key": key_text, "headers": [], "payload": json.dumps(value)})


def dataworks_event(op: str, row: dict, sequence: str, event_time: int, before=None) -> dict:
    schema = {
        "dataColumn": [{"name": "id", "type": "LONG"}, {"name": "v", "type": "STRING"}],
        "primaryKey": ["id"],
        "source": {"dbType": "mysql", "dbName": "shop", "tableName": "items"},
    }
    payload = {
        "before": before and {"dataColumn": before},
        "after": {"dataColumn": row},
        "sequenceId": sequence,
        "op": op,
        "timestamp": {"eventTime": event_time, "systemTime": 1_800_000_000_000},
    }
    return {"schema": schema, "payload": payload}


def e_id(event: dict) -> int:
    """The row id of a DataWorks test event."""
    return event["payload"]["after"]["dataColumn"]["id"]


def test_versions_without_a_commit_time_are_found_by_as_of_reads(dbt, spark, tmp_path):
    """Snapshot rows whose commit time is 0 (Debezium ts_ms) or absent (DataWorks full sync,
    eventTime -1), then streamed updates: no version has a null valid_from, and an as-of read
    before the first update finds the snapshot rows, one between the updates finds each key's
    right version. A later re-snapshot of unchanged rows is logged and opens no version.
    In the same build, database, table and column names with quotes, backticks, a semicolon,
    a newline and 10,000 characters are stored verbatim, as data."""
    t1, t2 = 1_767_600_000_000, 1_767_700_000_000  # 2026-01-05 08:00 and 2026-01-06 11:46 UTC
    from test_history import message

    pg = [
        message(lsn, op, key, after={"id": key, "v": v}, offset=offset, ts_ms=ts)
        for offset, (lsn, op, key, v, ts) in enumerate(
            [
                (10, "r", 1, "snap", 0),
                (10, "r", 2, "snap", 0),
                (20, "u", 1, "one", t1),
                (30, "u", 2, "two", t2),
                # a re-snapshot (after a connector reset): unchanged rows open no version
                (40, "r", 1, "one", t2 + 1000),
                (40, "r", 2, "two", t2 + 1000),
            ]
        )
    ]
    dataworks = [
        dataworks_event("INSERT", {"id": 1, "v": "snap"}, "-1", -1),
        dataworks_event("INSERT", {"id": 2, "v": "snap"}, "-1", -1),
        # one-record updates (both images in one message)
        dataworks_event("UPDATE_AFTER", {"id": 1, "v": "one"}, "20", t1, {"id": 1, "v": "snap"}),
        dataworks_event("UPDATE_AFTER", {"id": 2, "v": "two"}, "30", t2, {"id": 2, "v": "snap"}),
    ]
    hostile = "x'; drop table t; --`\"\n" + "n" * 10_000
    canal = [
        {
            "data": [{"id": 1, "c" + hostile: "v"}],
            "database": "db" + hostile,
            "table": "t" + hostile,
            "type": "INSERT",
            "isDdl": False,
            "pkNames": ["id"],
            "es": t1,
            "ts": t1,
        }
    ]
    for feed, topic, lines in (
        ("pg_inventory", "pg.public.items", [json.dumps(m) for m in pg]),
        (
            "dataworks_inventory",
            "dataworks.items",
            [kcat_line("dataworks.items", i, e, {"id": e_id(e)}) for i, e in enumerate(dataworks)],
        ),
        ("canal_inventory", "canal.items", [kcat_line("canal.items", 0, canal[0])]),
    ):
        file = tmp_path / f"{topic}-0-000000000000-{len(lines) - 1:012d}.jsonl"
        file.write_text("".join(line + "\n" for line in lines))
        dbt.land(feed, file)
    dbt("build", "--exclude", "tag:accounting")
    s = dbt.schema
    nulls = spark.sql(f"select count(*) from {s}.cdc_history where valid_from is null").first()[0]
    assert nulls == 0

    def point_in_time(call: str) -> list:
        """Rows of the items tables from a point-in-time macro call, compiled by dbt."""
        sql = compiled(dbt, "{{ " + call + " }}")
        return spark.sql(f"select * from ({sql}) where table_name = 'items'").collect()

    def as_of(at: str | int, by: str = "time") -> dict:
        at = f"timestamp_millis({at})" if isinstance(at, int) else at
        rows = point_in_time(f"changelake_as_of(ref('cdc_history'), \"{at}\", by='{by}')")
        return {(r.feed, json.loads(r.key_json)["id"]): json.loads(r.row_json)["v"] for r in rows}

    versions = spark.sql(
        f"select feed, count(*) from {s}.cdc_history where table_name = 'items' group by feed"
    ).collect()
    assert dict(versions) == {"pg_inventory": 4, "dataworks_inventory": 4}
    snapshots = spark.sql(
        f"select count(*) from {s}.cdc_change_log where feed = 'pg_inventory' and op = 'r'"
    ).first()[0]
    assert snapshots == 4

    # every declared feed is in cdc_feed_health, those with nothing landed as zeros
    health = dict(spark.sql(f"select feed, records_landed from {s}.cdc_feed_health").collect())
    assert len(health) == 9
    landed = {f: n for f, n in health.items() if n}
    assert landed == {"pg_inventory": 6, "dataworks_inventory": 4, "canal_inventory": 1}

    # names are data: stored as sent, in the change log and the history
    (change,) = spark.sql(
        f"select database_name, table_name, after_json from {s}.cdc_change_log "
        f"where feed = 'canal_inventory'"
    ).collect()
    assert (change.database_name, change.table_name) == ("db" + hostile, "t" + hostile)
    assert json.loads(change.after_json) == {"id": 1, "c" + hostile: "v"}
    (version,) = spark.sql(
        f"select table_name, row_json from {s}.cdc_history where feed = 'canal_inventory'"
    ).collect()
    assert version.table_name == "t" + hostile
    assert json.loads(version.row_json) == {"id": 1, "c" + hostile: "v"}

    feeds = ("pg_inventory", "dataworks_inventory")
    assert as_of(t1 - 1) == {(f, k): "snap" for f in feeds for k in (1, 2)}
    assert as_of(t1 + 1) == {**{(f, 1): "one" for f in feeds}, **{(f, 2): "snap" for f in feeds}}
    assert as_of(t2) == {(f, k): v for f in feeds for k, v in ((1, "one"), (2, "two"))}
    # by source position: the PostgreSQL feed as of the first update's LSN
    (position,) = spark.sql(
        f"select valid_from_position from {s}.cdc_history where feed = 'pg_inventory' "
        f"and table_name = 'items' and get_json_object(row_json, '$.v') = 'one'"
    ).first()
    at_position = as_of(f"'{position}'", "position")
    pg_state = {k: v for (f, k), v in at_position.items() if f == "pg_inventory"}
    assert pg_state == {1: "one", 2: "snap"}

    # the net change between two times: both keys updated once in each feed
    changes = point_in_time(
        f"changelake_changes_between(ref('cdc_history'), 'timestamp_millis({t1 - 1})', "
        f"'timestamp_millis({t2})')"
    )
    assert sorted(
        (r.feed, json.loads(r.key_json)["id"], r.change_type, r.after_version.row_json)
        for r in changes
    ) == sorted(
        (f, k, "updated", json.dumps({"id": k, "v": v}, separators=(",", ":")))
        for f in feeds
        for k, v in ((1, "one"), (2, "two"))
    )
    assert {json.loads(r.before_version.row_json)["v"] for r in changes} == {"snap"}


def test_damaged_landed_files_are_quarantined_and_the_batch_builds(dbt, spark, tmp_path):
    """Files a dying writer leaves, beside good ones, in both landing shapes: a Connect sink
    .json.gz cut in half, one that is not gzip at all, a zero-byte sink file, a kcat file with a
    line of invalid UTF-8 and no final newline, and a file whose name is not a sink name. The
    build succeeds and balances its accounting; each damaged file is one quarantined row (a null
    landed_line) and a count in cdc_feed_health; the bad line is quarantined with its reason;
    the good files give the generator's expected state. When the cut file is rewritten whole
    (its size changes), the next build reads it."""
    from python_udfs.generator import batch_folders, compare, generate

    feeds = ["sqlserver_inventory", "canal_inventory"]
    summary = generate(tmp_path / "generated", events=400, keys=10, batches=1, seed=5, feeds=feeds)
    (batch,) = batch_folders(tmp_path / "generated")
    # (a name starting with "_" or "." is hidden from Spark's file listing: not a landed file)
    sink_files = sorted(
        f for f in (batch / "sqlserver_inventory").iterdir() if not f.name.startswith(("_", "."))
    )
    kcat_files = sorted((batch / "canal_inventory").iterdir())
    assert sink_files
    assert all(SINK_NAME.match(f.name) for f in sink_files)
    for feed in feeds:
        for file in sorted((batch / feed).iterdir()):
            dbt.land(feed, file)

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    whole = sink_files[0].read_bytes()
    topic = SINK_NAME.match(sink_files[0].name).group(1)
    cut = damaged / f"{topic}+0+900000.json.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    not_gzip = damaged / f"{topic}+1+900000.json.gz"
    not_gzip.write_bytes(b"this is not a gzip stream\n")
    empty = damaged / f"{topic}+0+950000.json.gz"
    empty.write_bytes(b"")
    not_a_sink_name = damaged / "part-0001.json"
    not_a_sink_name.write_text('{"id": 1}\n')
    # the HDFS sink's name adds the end offset: the same records again, read as a sink file
    start = int(SINK_NAME.match(sink_files[0].name).group(3))
    records = len(gzip.decompress(whole).decode().splitlines())
    hdfs_named = damaged / f"{topic}+0+{start}+{start + records - 1}.json.gz"
    hdfs_named.write_bytes(whole)
    for file in (cut, not_gzip, empty, not_a_sink_name, hdfs_named):
        dbt.land("sqlserver_inventory", file)

    kcat_lines = kcat_files[0].read_bytes().splitlines()
    bad_line = b'{"topic": "x", "partition": 0, "offset": 1, "payload": "\xff\xfe"}'
    no_final_newline = damaged / "canal-tail.json"
    no_final_newline.write_bytes(bad_line + b"\n" + kcat_lines[0])
    dbt.land("canal_inventory", no_final_newline)

    dbt("build")
    s = dbt.schema
    assert [r for r in compare(spark, s, summary) if not r["matched"]] == []

    quarantined = spark.sql(
        f"select landed_file, landed_line, error_reason, raw_record from {s}.cdc_quarantine"
    ).collect()
    by_file = {}
    for r in quarantined:
        by_file.setdefault(r.landed_file.rsplit("/", 1)[-1], []).append(r)
    for name in (cut.name, not_gzip.name):
        (row,) = by_file[name]
        assert row.landed_line is None
        assert row.error_reason.startswith("landed file could not be read")
    assert empty.name not in by_file  # a zero-byte file holds no record: not listed, not tried
    (misnamed,) = by_file[not_a_sink_name.name]
    assert misnamed.error_reason.startswith("kcat record without topic or offset (read as kcat")
    (bad,) = by_file[no_final_newline.name]
    assert bad.landed_line == 0
    assert bad.error_reason.startswith("line is not valid UTF-8")
    assert "\ufffd" in bad.raw_record
    # the last line, without a final newline, is a record like any other
    tail = spark.sql(
        f"select landed_line, kind, error_reason from {s}.decoded_canal_inventory "
        f"where landed_file like '%{no_final_newline.name}' and landed_line = 1"
    ).collect()
    assert tail
    assert {(r.kind, r.error_reason) for r in tail} <= {("row", None), ("ddl", None)}
    hdfs = spark.sql(
        f"select topic, kafka_partition, kafka_offset - landed_line as start, error_reason "
        f"from {s}.decoded_sqlserver_inventory "
        f"where landed_file like '%/{hdfs_named.name}' and landed_line is not null"
    ).collect()
    assert len(hdfs) >= records
    assert {(r.topic, r.kafka_partition, r.start, r.error_reason) for r in hdfs} == {
        (topic, 0, start, None)
    }
    health = {
        r.feed: r
        for r in spark.sql(
            f"select feed, files_unreadable, records_quarantined from {s}.cdc_feed_health"
        ).collect()
    }
    assert health["sqlserver_inventory"].files_unreadable == 2
    assert health["canal_inventory"].files_unreadable == 0

    # the writer finishes the cut file: a new size, read on the next build
    (tmp_path / "landing" / "sqlserver_inventory" / cut.name).write_bytes(whole)
    dbt("build")
    lines = spark.sql(
        f"select count(*) from {s}.decoded_sqlserver_inventory "
        f"where landed_file like '%{cut.name}' and landed_line is not null"
    ).first()[0]
    assert lines == len(gzip.decompress(whole).decode().splitlines())
    assert [r for r in compare(spark, s, summary) if not r["matched"]] == []

    # a configuration change takes effect on the next run: here the landing root moves, and
    # every feed's folder is listed under it
    dbt.landing_root = tmp_path / "moved"
    dbt.land("sqlserver_inventory", sink_files[0])
    dbt("run", "--select", "decoded_sqlserver_inventory")
    moved = spark.sql(
        f"select count(*) from {s}.decoded_sqlserver_inventory "
        f"where landed_file like '%/moved/sqlserver_inventory/{sink_files[0].name}'"
    ).first()[0]
    assert moved == 1 + len(gzip.decompress(sink_files[0].read_bytes()).decode().splitlines())

    # the other feeds' folders do not exist under the new root (canal's is there, empty): a
    # warning names each with the folder it reads, and the feed health shows them with no file
    # listed and which folder is missing
    (tmp_path / "moved" / "canal_inventory").mkdir()
    result = dbt(
        "build", "--select", "cdc_feed_health", "assert_every_declared_feed_has_landed_files"
    )
    (warned,) = [
        r for r in result.result if r.node.name == "assert_every_declared_feed_has_landed_files"
    ]
    assert (warned.status, warned.failures) == ("warn", 8)
    folders = {
        r.feed: r
        for r in spark.sql(
            f"select feed, landing_folder, has_landing_folder, files_listed "
            f"from {s}.cdc_feed_health"
        ).collect()
    }
    assert folders["canal_inventory"].landing_folder == f"{tmp_path}/moved/canal_inventory"
    listed = {feed: (row.files_listed, row.has_landing_folder) for feed, row in folders.items()}
    assert (listed["canal_inventory"], listed["sqlserver_inventory"]) == ((0, True), (1, True))
    missing = {feed for feed, row in folders.items() if row.has_landing_folder is False}
    assert missing == set(folders) - {"canal_inventory", "sqlserver_inventory"}
    assert all(folders[feed].files_listed == 0 for feed in missing)

    # in a build whose decoded models listed their folders, the warning takes their counts
    # (sqlserver's one file, canal's none) and lists only the other feeds' folders: the same
    # feeds, each in the same state
    result = dbt(
        "build",
        "--select",
        "decoded_canal_inventory",
        "decoded_sqlserver_inventory",
        "assert_every_declared_feed_has_landed_files",
    )
    (warned,) = [
        r for r in result.result if r.node.name == "assert_every_declared_feed_has_landed_files"
    ]
    assert (warned.status, warned.failures) == ("warn", 8)
    compiled = warned.node.compiled_code
    assert "'sqlserver_inventory'" not in compiled
    assert (
        f"select 'canal_inventory' as feed, '{tmp_path}/moved/canal_inventory' as landing_folder, "
        "true as has_landing_folder" in compiled
    )
    assert compiled.count("false as has_landing_folder") == len(missing)


def test_line_numbers_and_offsets_stay_exact_when_a_file_is_read_in_blocks(dbt, spark, tmp_path):
    """An uncompressed file is read line by line in byte ranges (at most
    spark.sql.files.maxPartitionBytes each, cut at line ends), so a file of any size streams
    through; here ranges of about 2 KB cut files of 30-180 KB into many. A
    Connect sink file (Windows line ends, blank lines) and a kcat file: every line keeps its
    exact number in its file, so a sink record's offset is its start offset plus its line;
    every record decodes as that line of the file does on its own (the generator's malformed
    records included: each is the same error)."""
    from python_udfs import decode
    from python_udfs.generator import batch_folders, generate

    feeds = ["sqlserver_inventory", "canal_inventory"]
    generate(tmp_path / "generated", events=600, keys=10, batches=1, seed=3, feeds=feeds)
    (batch,) = batch_folders(tmp_path / "generated")
    sink = max(
        (f for f in (batch / feeds[0]).iterdir() if SINK_NAME.match(f.name)),
        key=lambda f: len(gzip.decompress(f.read_bytes())),
    )
    topic, _, start = SINK_NAME.match(sink.name).groups()
    sink_lines = gzip.decompress(sink.read_bytes()).decode().splitlines()
    sink_lines[3:3] = ["", ""]  # blank lines count as lines: they move the offsets after them
    plain = tmp_path / f"{topic}+0+{start}.json"
    plain.write_bytes("".join(line + "\r\n" for line in sink_lines).encode())
    kcat = max((batch / feeds[1]).iterdir(), key=lambda f: f.stat().st_size)
    for file in (plain, kcat):
        assert file.stat().st_size > 10 * 2048
    dbt.land(feeds[0], plain)
    dbt.land(feeds[1], kcat)

    previous = {k: spark.conf.get(k) for k in ("spark.sql.files.maxPartitionBytes",)}
    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")
    try:
        dbt("run", "--select", "decoded_sqlserver_inventory", "decoded_canal_inventory")
    finally:
        for k, v in previous.items():
            spark.conf.set(k, v)

    s = dbt.schema
    cases = (
        ("sqlserver_inventory", sink_lines, lambda line: (None, line, None)),
        ("canal_inventory", kcat.read_text().splitlines(), _kcat_fields),
    )
    for feed, lines, fields in cases:
        rows = spark.sql(
            f"select landed_line, kafka_offset, row_index, key_json, position, after_json, "
            f"error_reason from {s}.decoded_{feed} where landed_line is not null"
        ).collect()
        expected = {
            number: decode("debezium" if feed == feeds[0] else "canal", *fields(line.rstrip("\r")))
            for number, line in enumerate(lines)
            if line.strip()
        }
        assert {r.landed_line for r in rows} == set(expected), feed
        for r in rows:
            want = expected[r.landed_line][r.row_index]
            got = (r.key_json, r.position, r.after_json, r.error_reason)
            assert got == (
                want["key_json"],
                want["position"],
                want["after_json"],
                want["decode_error"],
            ), (feed, r.landed_line)
            if feed == feeds[0]:
                assert r.kafka_offset == int(start) + r.landed_line
    # the run's reader (its temporary view, left in the session) cut the file into many ranges
    reader = spark.table("`changelake_landed__canal_inventory`")
    assert reader.rdd.getNumPartitions() >= kcat.stat().st_size // 2048 // 2

    # with Spark's own split sizes, a small file is one range: its lines numbered as exactly
    small = tmp_path / "canal.inventory-0-small.jsonl"
    small_lines = [line for line in kcat.read_text().splitlines() if '"offset":' in line][:7]
    small.write_text("\n".join(small_lines) + "\n")
    dbt.land(feeds[1], small)
    dbt("run", "--select", "decoded_canal_inventory")
    assert spark.table("`changelake_landed__canal_inventory`").rdd.getNumPartitions() == 1
    rows = spark.sql(
        f"select landed_line, kafka_offset from {s}.decoded_canal_inventory "
        f"where landed_file like '%{small.name}' and landed_line is not null"
    ).collect()
    assert sorted({(r.landed_line, r.kafka_offset) for r in rows}) == [
        (number, json.loads(line)["offset"]) for number, line in enumerate(small_lines)
    ]


def _kcat_fields(line: str) -> tuple:
    record = json.loads(line)
    headers = record.get("headers") or []
    pairs = [(headers[i], headers[i + 1]) for i in range(0, len(headers) - 1, 2)]
    return record.get("key"), record.get("payload"), pairs or None


@pytest.fixture
def statements(spark, monkeypatch) -> list[str]:
    """Every SQL statement run on the session while the test runs: dbt-spark's session cursor
    runs each through ``SparkSession.sql``. (Spark's own record of executions keeps only the
    last ``spark.sql.ui.retainedExecutions``, 50 here: a whole build's outlive it.)"""
    from pyspark.sql import SparkSession

    seen: list[str] = []
    run = SparkSession.sql

    def recorded(self, query, *args, **kwargs):
        seen.append(query)
        return run(self, query, *args, **kwargs)

    monkeypatch.setattr(SparkSession, "sql", recorded)
    return seen


# the head of a statement that creates, alters or drops a table or a view, up to its name
# (after dbt's query comment, `/* {"app": "dbt", ...} */`)
DDL = re.compile(
    r"\s*(/[*].*?[*]/\s*)*(create|alter|drop|replace)\b[^(]*?\b(table|view)\s+"
    r"(if\s+(not\s+)?exists\s+)?",
    re.DOTALL,
)


def _ddl_of(spark, statements: list[str], relation: str) -> list[str]:
    """The commands, as Spark's parser reads them (CreateTable, CreateTableAsSelect,
    CreateView, AlterViewAs, ...), of the statements that create, alter or drop ``relation``
    (``schema.name``), in the order they ran."""
    parser = spark._jsparkSession.sessionState().sqlParser()
    out = []
    for statement in statements:
        head = DDL.match(statement.lower())
        target = statement[head.end() :].replace("`", "").split()[0] if head else ""
        if target.lower() == relation.lower():
            out.append(parser.parsePlan(statement).getClass().getSimpleName())
    return out


def _land_demo_pg(dbt) -> None:
    """Land the demo's PostgreSQL feed (one kcat file of 8 records)."""
    demo = Path(__file__).resolve().parents[3] / "python_udfs" / "demo_data" / "landing"
    for file in (demo / "pg_inventory").iterdir():
        dbt.land("pg_inventory", file)


def test_a_first_build_writes_no_file_before_its_table_exists(dbt, spark, statements):
    """A CREATE TABLE AS SELECT writes its files before the metastore holds the table: killed
    in between (milliseconds, too short a window for the SIGKILL test to hit reliably) it
    leaves a folder without a table, over which Spark creates nothing (LOCATION_ALREADY_EXISTS)
    and which only the embedded target's start-up removes. An incremental model's first build
    creates its table with a plain CREATE TABLE, which writes no file, then inserts: the
    statements the build ran show which way the table was made."""
    _land_demo_pg(dbt)
    dbt("run", "--select", "decoded_pg_inventory")
    assert _ddl_of(spark, statements, f"{dbt.schema}.decoded_pg_inventory") == ["CreateTable"]
    # created empty, then filled by the insert: every line of the demo file (8 records)
    lines = f"select count(distinct landed_line) from {dbt.schema}.decoded_pg_inventory"
    assert spark.sql(lines).first()[0] == 8


def test_tables_over_the_landing_folders_made_by_an_earlier_version_are_dropped(dbt, spark):
    """A schema made by an earlier version holds external tables over a feed's folder (its raw
    text table and its file listing), recorded with their DDL. The files are read by the Python
    workers now: the next run drops those tables, leaves the landed files in place and reads
    them; a table not recorded there is left alone."""
    _land_demo_pg(dbt)
    s = dbt.schema
    folder = dbt.landing_root / "pg_inventory"
    landed = sorted(f.name for f in folder.iterdir())
    older = {
        f"{s}.raw_pg_inventory": "using text options (lineSep '\\n', recursiveFileLookup 'true')",
        f"{s}.raw_pg_inventory__files": "using binaryFile options (recursiveFileLookup 'true')",
    }
    spark.sql(f"create schema {s}")
    spark.sql(
        f"create table {s}.changelake_landing_tables "
        "(table_name string, ddl string, recorded_at timestamp) using parquet"
    )
    for relation, options in older.items():
        ddl = f"create table if not exists {relation} {options} location '{folder}'"
        spark.sql(ddl)
        spark.sql(
            f"insert into {s}.changelake_landing_tables values (:table, :ddl, current_timestamp())",
            args={"table": relation, "ddl": ddl},
        )
    spark.sql(f"create table {s}.kept_by_its_owner using text location '{folder}'")
    assert spark.sql(f"select count(*) from {s}.raw_pg_inventory where value != ''").first()[0] == 8

    dbt("run", "--select", "decoded_pg_inventory")
    tables = {t.name for t in spark.catalog.listTables(s)}
    assert not {"raw_pg_inventory", "raw_pg_inventory__files"} & tables
    assert "kept_by_its_owner" in tables
    assert sorted(f.name for f in folder.iterdir()) == landed
    decoded = f"select count(distinct landed_line) from {s}.decoded_pg_inventory"
    assert spark.sql(decoded).first()[0] == 8


def test_a_view_that_changes_is_altered_in_place_never_dropped(dbt, spark, statements):
    """Spark runs `create or replace view` (dbt-spark's view) as a drop and then a create:
    between them the view is missing, for a reader in that moment and after a build killed
    there. A view that exists is changed by one `alter view ... as` (one metastore call; a full
    refresh of the view stands for an edit of its SQL), and one whose stored text is its SQL is
    left alone. The statements each build ran show which way each was made."""
    _land_demo_pg(dbt)
    view = f"{dbt.schema}.stg_landing__pg_inventory"

    dbt("run", "--select", "decoded_pg_inventory", "stg_landing__pg_inventory")
    assert _ddl_of(spark, statements, view) == ["CreateView"]  # built the first time: created
    rows = spark.sql(f"select count(*) from {view}").first()[0]
    assert rows > 0

    statements.clear()
    dbt("run", "--select", "stg_landing__pg_inventory", "--full-refresh")
    assert _ddl_of(spark, statements, view) == ["AlterViewAs"]  # changed in place, not dropped
    assert spark.sql(f"select count(*) from {view}").first()[0] == rows

    statements.clear()
    dbt("run", "--select", "stg_landing__pg_inventory")
    assert _ddl_of(spark, statements, view) == []  # its stored text is its SQL (the altered one)


def test_an_append_checks_the_schema_then_inserts_by_name(dbt, spark, statements, tmp_path):
    """A model with new rows into a table that exists is appended from a temporary view of its
    query, by name, after one describe of each side (`changelake_append_batch`). A table out
    of step with its model (`on_schema_change: fail`; here a column a later version of the
    model would no longer write) stops the model before anything is written or committed,
    naming the column."""
    _land_demo_pg(dbt)
    s = dbt.schema
    dbt("run", "--select", "decoded_pg_inventory")
    demo = next((dbt.landing_root / "pg_inventory").iterdir())

    def land_copy(name: str) -> None:
        copy = tmp_path / name
        copy.write_bytes(demo.read_bytes())
        dbt.land("pg_inventory", copy)

    def counts() -> tuple:
        rows = spark.sql(f"select count(*) from {s}.decoded_pg_inventory").first()[0]
        ledger = spark.sql(f"select count(*) from {s}.changelake_ledger__decoded_pg_inventory")
        return rows, ledger.first()[0]

    first = counts()
    land_copy("later.kcat")
    statements.clear()
    dbt("run", "--select", "decoded_pg_inventory")
    inserts = [q for q in statements if re.search(rf"insert into {s}[.]decoded_pg_inventory\b", q)]
    assert len(inserts) == 1
    assert " by name select * from decoded_pg_inventory__dbt_tmp" in inserts[0]
    assert not [q for q in statements if "describe extended" in q]
    files = f"select count(distinct landed_file) from {s}.decoded_pg_inventory"
    assert spark.sql(files).first()[0] == 2
    appended = counts()
    assert appended[0] == 2 * first[0]
    assert appended[1] > first[1]

    spark.sql(f"alter table {s}.decoded_pg_inventory add columns (retired_note string)")
    land_copy("latest.kcat")
    code, result = dbt.attempt("run", "--select", "decoded_pg_inventory")
    assert code == 1
    (node,) = [r for r in result.result.results if r.node.name == "decoded_pg_inventory"]
    assert node.status == "error"
    assert "out of sync" in node.message
    assert "retired_note: string in the table, not in the query" in node.message
    assert counts() == appended  # nothing written, nothing committed
