"""Landing through the unified change log, with real dbt runs on embedded Spark.

Records land in batches (duplicates, re-landed and late files, a DataWorks update split across
batches, a SQL Server PK change in Kafka Connect sink files, malformed records); after each
build the change log must equal an independent reference computed here in Python from the
landed messages, and the row accounting must balance.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from conftest import tables_scanned

from python_udfs import decode

PROJECT = Path(__file__).resolve().parents[3]
FIXTURES = Path(__file__).parents[1] / "fixtures"
SEEDS = {c["name"]: c for c in json.loads((FIXTURES / "seeds" / "cases.json").read_text())}
FORMAT_CASES = {
    c["name"]: c
    for c in map(json.loads, (FIXTURES / "formats" / "cases.jsonl").read_text().splitlines())
}


FEED_FORMATS = {
    "pg_inventory": "debezium",
    "sqlserver_inventory": "debezium",
    "dtle_inventory": "debezium",
    "dtle_inventory_ddl": "dtle_ddl",
    "dataworks_inventory": "dataworks",
    "tencent_inventory": "tencent;time_zone=+08:00",
    "canal_inventory": "canal",
    "maxwell_inventory": "maxwell",
    "ogg_inventory": "ogg",
}
# the key columns configured in the landing source for feeds whose records carry no key
CONFIGURED_KEYS = {
    "tencent_inventory": {("inventory", None, "customers"): ["id"]},
    "sqlserver_inventory": {("testDB", "dbo", "customers"): ["id"]},
}


# ----------------------------------------------------------------------------------------------
# landing helpers: messages -> files in either shape
# ----------------------------------------------------------------------------------------------


def kcat_line(topic, offset, value, key=None, headers=None, partition=0):
    return json.dumps(
        {
            "topic": topic,
            "partition": partition,
            "offset": offset,
            "tstype": "create",
            "ts": 1_700_000_000_000 + offset,
            "broker": 0,
            "headers": [p for h in headers or [] for p in h],
            "key": key,
            "payload": value,
        }
    )


def write(path: Path, lines: list[str], gz: bool = False) -> Path:
    text = "\n".join(lines) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def seed(name):
    case = SEEDS[name]
    value = None if case["value"] is None else json.dumps(json.loads(case["value"]))
    key = None if case["key"] is None else json.dumps(json.loads(case["key"]))
    return key, value, case["headers"]


# ----------------------------------------------------------------------------------------------
# the reference: what the change log must hold, computed from the landed lines alone
# ----------------------------------------------------------------------------------------------


def _sha(*parts) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts if p is not None).encode()).hexdigest()


def source_identity(feed, coords, r) -> str:
    """The change_id of a change: its source identity (Kafka place only without a position)."""
    place = r["position"] or ":".join(str(p) for p in ("kafka", *coords, r["row_index"]))
    return _sha(
        feed,
        *(r[c] or "" for c in ("source_name", "database_name", "schema_name", "table_name")),
        r["kind"],
        r["op"] or "",
        r["key_json"] or "",
        place,
        r["before_json"] or "",
        r["after_json"] or "",
        r.get("ddl") or "",
    )


def _canonical_key(image_json, columns):
    image = json.loads(image_json)
    return json.dumps({c: image[c] for c in sorted(columns)}, separators=(",", ":"))


def decoded_records(landed: dict[str, list[tuple[str, list[str]]]]):
    """(feed, Kafka coordinates, decoded record) of every landed record that decodes."""
    for feed, files in landed.items():
        fmt = FEED_FORMATS[feed]
        for file_name, lines in files:
            sink = "+" in file_name
            for index, line in enumerate(lines):
                if sink:
                    topic, partition, start = file_name.split(".json")[0].split("+")
                    coords = (topic, int(partition), int(start) + index)
                    key, value, headers = None, line, None
                else:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        continue  # quarantined: not a Kafka record
                    coords = (rec["topic"], rec["partition"], rec["offset"])
                    key, value = rec["key"], rec["payload"]
                    h = rec["headers"] or []
                    headers = list(zip(h[::2], h[1::2], strict=True))
                for r in decode(fmt, key, value, headers):
                    if not r["decode_error"]:
                        yield feed, coords, r


def reference_change_log(landed: dict[str, list[tuple[str, list[str]]]]) -> dict[str, tuple]:
    """change_id -> (feed, op, key_json, before_json, after_json, linked_key_json)."""
    singles: dict[str, tuple] = {}
    halves: dict[tuple, dict[str, dict]] = {}
    lsn_pairs: dict[tuple, dict[str, tuple]] = {}
    for feed, coords, r in decoded_records(landed):
        if r["kind"] not in ("row", "truncate"):
            continue
        key_json = r["key_json"]
        table = (r["database_name"], r["schema_name"], r["table_name"])
        configured = CONFIGURED_KEYS.get(feed, {})
        if key_json is None and table in configured:
            key_json = _canonical_key(r["after_json"] or r["before_json"], configured[table])
        half = (
            r["envelope_format"] == "dataworks"
            and r["op_raw"] in ("UPDATE_BEFOR", "UPDATE_AFTER")
            and (r["before_json"] is None or r["after_json"] is None)
        )
        if half:
            pair = (feed, r["database_name"], r["schema_name"], r["table_name"], r["position"])
            halves.setdefault(pair, {})[r["op_raw"]] = {**r, "key_json": key_json}
            continue
        change_id = source_identity(feed, coords, {**r, "key_json": key_json})
        singles.setdefault(
            change_id,
            (feed, r["op"], key_json, r["before_json"], r["after_json"], r["linked_key_json"]),
        )
        if r["source_engine"] == "sqlserver":
            commit_and_change = "/".join(r["position"].split("/")[:2])
            group = (
                feed,
                r["source_name"],
                r["database_name"],
                r["schema_name"],
                r["table_name"],
                commit_and_change,
            )
            lsn_pairs.setdefault(group, {})[change_id] = (r["op"], key_json)
    for pair, parts in halves.items():
        if len(parts) == 2:
            before, after = parts["UPDATE_BEFOR"], parts["UPDATE_AFTER"]
            linked = before["key_json"] if before["key_json"] != after["key_json"] else None
            change_id = _sha(pair[0], "update-pair", *pair[1:])
            singles[change_id] = (
                pair[0],
                "u",
                after["key_json"],
                before["before_json"],
                after["after_json"],
                linked,
            )
    # SQL Server PK change: delete and insert on the same commit/change LSNs link each other
    for members in lsn_pairs.values():
        keys = {op: key for op, key in members.values()}
        for change_id, (op, _) in members.items():
            other = {"c": "d", "d": "c"}.get(op)
            if other in keys and singles[change_id][5] is None:
                singles[change_id] = (*singles[change_id][:5], keys[other])
    return singles


def append_as_batch(spark, table, batch_id, limit=None):
    """Append a copy of ``table``'s rows under ``batch_id``, in its own segment (as a run that
    wrote them would)."""
    spark.sql(
        f"insert into {table} by name select * except (batch_id, segment), "
        f"'{batch_id}' as batch_id, '{batch_id}' as segment "
        f"from {table}" + (f" limit {limit}" if limit else "")
    )


def change_log(spark, schema) -> dict[str, tuple]:
    rows = spark.sql(
        f"select change_id, feed, op, key_json, before_json, after_json, linked_key_json "
        f"from {schema}.cdc_change_log"
    ).collect()
    out = {r.change_id: tuple(r)[1:] for r in rows}
    assert len(out) == len(rows), "a change_id appears twice in cdc_change_log"
    return out


# ----------------------------------------------------------------------------------------------
# the scenario
# ----------------------------------------------------------------------------------------------


SQLSERVER_PK_CHANGE = [
    # delete (serial 1) and insert (serial 2) on the same commit and change LSNs
    {
        "before": {"id": 1005},
        "after": None,
        "op": "d",
        "ts_ms": 1,
        "source": {
            "connector": "sqlserver",
            "name": "server1",
            "db": "testDB",
            "schema": "dbo",
            "table": "customers",
            "ts_ms": 1559729468470,
            "change_lsn": "00000027:00000758:0003",
            "commit_lsn": "00000027:00000758:0005",
            "event_serial_no": 1,
        },
    },
    {
        "before": None,
        "after": {"id": 2005},
        "op": "c",
        "ts_ms": 1,
        "source": {
            "connector": "sqlserver",
            "name": "server1",
            "db": "testDB",
            "schema": "dbo",
            "table": "customers",
            "ts_ms": 1559729468470,
            "change_lsn": "00000027:00000758:0003",
            "commit_lsn": "00000027:00000758:0005",
            "event_serial_no": 2,
        },
    },
]


@pytest.mark.long(2)
def test_batches_give_exactly_the_reference_change_log(dbt, spark, tmp_path):
    landed: dict[str, list[tuple[str, list[str]]]] = {feed: [] for feed in FEED_FORMATS}
    staged = tmp_path / "to_land"

    def land(feed, name, lines, gz=False):
        path = write(staged / feed / name, lines, gz=gz)
        dbt.land(feed, path)
        landed[feed].append((name, lines))
        return path

    # ---- batch 1 ------------------------------------------------------------------------
    pg_topic = "PostgreSQL_server.public.customers"
    pg_lines = [
        kcat_line(pg_topic, 0, seed("pg_key_and_create")[1], seed("pg_key_and_create")[0]),
        kcat_line(pg_topic, 1, seed("pg_update")[1], seed("pg_update")[0]),
        kcat_line(pg_topic, 2, seed("pg_truncate")[1]),
        kcat_line(pg_topic, 3, seed("pg_message_transactional")[1]),
        kcat_line(pg_topic, 4, seed("pg_delete")[1], seed("pg_delete")[0]),
        kcat_line(pg_topic, 5, None, seed("pg_delete")[0]),  # tombstone
        "{not a kcat record",
    ]
    pg_file = land("pg_inventory", "pg-0-000000.jsonl", pg_lines)
    dw = "dataworks.inventory"
    land(
        "dataworks_inventory",
        "dw-0-000000.jsonl",
        [
            kcat_line(dw, 0, seed("dataworks_insert")[1]),
            kcat_line(dw, 1, seed("dataworks_heartbeat")[1]),
            kcat_line(dw, 2, seed("dataworks_update_before")[1]),  # its UPDATE_AFTER lands later
        ],
    )
    land(
        "sqlserver_inventory",
        "server1.dbo.customers+0+100.json.gz",
        [json.dumps(m) for m in SQLSERVER_PK_CHANGE],
        gz=True,
    )
    tencent = "tencent.inventory"
    land(
        "tencent_inventory",
        "tencent-0-000000.jsonl",
        [
            kcat_line(tencent, i, seed(n)[1])
            for i, n in enumerate(["tencent_ddl_create_table", "tencent_insert", "tencent_update"])
        ],
    )
    land(
        "canal_inventory",
        "canal-0-000000.jsonl",
        [
            kcat_line("canal.inventory", i, FORMAT_CASES[n]["value"])
            for i, n in enumerate(
                ["canal_multi_row_insert", "canal_partial_old_update", "canal_ddl"]
            )
        ],
    )
    dbt("build")
    s = dbt.schema
    first = change_log(spark, s)
    assert first == reference_change_log(landed)
    assert not any(v[0] == "dataworks_inventory" and v[1] == "u" for v in first.values())

    # the SQL Server delete and insert of one PK change link each other
    links = {v[1]: (v[2], v[5]) for v in first.values() if v[0] == "sqlserver_inventory"}
    assert links == {"d": ('{"id":1005}', '{"id":2005}'), "c": ('{"id":2005}', '{"id":1005}')}
    # the Tencent key comes from configuration
    assert {v[2] for v in first.values() if v[0] == "tencent_inventory"} == {'{"id":"1004"}'}
    # the malformed line is quarantined with its reason, nothing else
    quarantine = spark.sql(
        f"select feed, error_reason, raw_record from {s}.cdc_quarantine"
    ).collect()
    assert [(q.feed, q.error_reason, q.raw_record) for q in quarantine] == [
        (
            "pg_inventory",
            "malformed kcat JSON line (read as kcat lines: the file name is not "
            "<topic>+<partition>+<startOffset>[+<endOffset>].json[.gz])",
            "{not a kcat record",
        )
    ]
    ddl = spark.sql(f"select feed, ddl_kind, ddl_text from {s}.cdc_schema_changes").collect()
    # a schema change delivered twice counts once
    assert sorted(tuple(d) for d in ddl) == sorted(
        {
            source_identity(feed, coords, r): (feed, r["op_raw"], r["ddl"])
            for feed, coords, r in decoded_records(landed)
            if r["kind"] == "ddl"
        }.values()
    )
    assert {d.feed for d in ddl} == {"tencent_inventory", "canal_inventory"}

    # ---- batch 2 ------------------------------------------------------------------------
    land(
        "dataworks_inventory",
        "dw-0-000003.jsonl",
        [
            kcat_line(dw, 3, seed("dataworks_update_after")[1]),
        ],
    )
    # the same records delivered again in another file (at-least-once)
    land("pg_inventory", "pg-0-000000-redelivered.jsonl", pg_lines[:3])
    # the same file landed again under its name: not new
    dbt.land("pg_inventory", pg_file)
    # a late file: records older than everything landed so far
    land(
        "pg_inventory",
        "pg-1-000000.jsonl",
        [
            kcat_line(
                pg_topic,
                0,
                seed("pg_key_and_create")[1].replace("24023128", "100"),
                seed("pg_key_and_create")[0],
                partition=1,
            ),
        ],
    )
    dbt("build")
    # the pending records of the two feeds with new files read once each; the feeds that
    # landed nothing new are not read at all
    scans = feeds_read_once(spark, dbt.target_path)
    assert scans == {"decoded_pg_inventory": 1, "decoded_dataworks_inventory": 1}, scans
    second = change_log(spark, s)
    assert second == reference_change_log(landed)
    merged = [v for v in second.values() if v[0] == "dataworks_inventory" and v[1] == "u"]
    assert len(merged) == 1
    # one update with both images
    assert merged[0][3] is not None
    assert merged[0][4] is not None

    # ---- batch 3: nothing new changes nothing --------------------------------------------
    dbt("build")
    assert change_log(spark, s) == second

    # ---- a run killed after writing rows, before committing them --------------------------
    append_as_batch(spark, f"{s}.int_changes_unioned", "killed-run", limit=3)
    append_as_batch(spark, f"{s}.decoded_pg_inventory", "killed-run")
    assert change_log(spark, s) == second  # uncommitted rows are invisible
    dbt("build")
    assert change_log(spark, s) == second


def feeds_read_once(spark, target: Path) -> dict[str, int]:
    """How often the change log's last incremental query (as dbt compiled it) scans each
    decoded table, run again: the new records are computed once and reused wherever the query
    names them, not read and staged again in each place."""
    compiled = target / "compiled/changelake/models/intermediate/int_changes_unioned.sql"
    scans = tables_scanned(spark, compiled)
    return {table: count for table, count in scans.items() if table.startswith("decoded_")}


CONFORMANCE_FEEDS = {
    "debezium": "pg_inventory",
    "canal": "canal_inventory",
    "maxwell": "maxwell_inventory",
    "ogg": "ogg_inventory",
    "dataworks": "dataworks_inventory",
}
SEED_FEEDS = {
    "pg_": "pg_inventory",
    "sqlserver_": "sqlserver_inventory",
    "dtle_create": "dtle_inventory",
    "dtle_ddl": "dtle_inventory_ddl",
    "dataworks_": "dataworks_inventory",
    "tencent_": "tencent_inventory",
}


def test_every_seed_example_and_conformance_file_as_feeds(dbt, spark, tmp_path, shared_dir):
    """Each seed example into its feed, each conformance file into the feed of its format."""
    from test_conformance import KEY_FILES, ROOT, envelope_format, messages

    landed: dict[str, list[tuple[str, list[str]]]] = {feed: [] for feed in FEED_FORMATS}
    offsets: dict[str, int] = {}

    def land(feed, name, records):
        lines = []
        for key, value, headers in records:
            offset = offsets.get(feed, 0)
            offsets[feed] = offset + 1
            lines.append(kcat_line(f"{feed}.topic", offset, value, key, headers))
        dbt.land(feed, write(tmp_path / feed / name, lines))
        landed[feed].append((name, lines))

    for name in SEEDS:
        feed = next(f for prefix, f in SEED_FEEDS.items() if name.startswith(prefix))
        land(feed, f"seed-{name}.jsonl", [seed(name)])
    for number, relative in enumerate(
        str(p.relative_to(ROOT)) for p in sorted(ROOT.rglob("*")) if p.is_file()
    ):
        if relative.endswith(".md") or relative in KEY_FILES:
            continue
        feed = CONFORMANCE_FEEDS[envelope_format(relative)]
        land(
            feed,
            f"conformance-{number:03d}.jsonl",
            [(None, m, None) for m in messages(ROOT / relative)],
        )
    built = dbt("build")
    logged = change_log(spark, dbt.schema)
    assert logged == reference_change_log(landed)
    assert len(logged) > 300
    # the conformance files land without Kafka keys: the tables whose envelopes carry no key
    # either are named by the build's warning (logged, no history; README: set up wrong)
    keyless = spark.sql(
        f"select count(*) from (select distinct feed, database_name, schema_name, table_name "
        f"from {dbt.schema}.cdc_change_log where kind = 'row' and key_json is null)"
    ).first()[0]
    (warning,) = [
        r for r in built.result.results if r.node.name == "assert_every_row_change_has_a_key"
    ]
    assert keyless > 0
    assert (str(warning.status), warning.failures) == ("warn", keyless)
    # every record that failed is in the quarantine, with its reason
    quarantined = spark.sql(f"select count(*) from {dbt.schema}.cdc_quarantine").first()[0]
    failed = sum(
        1
        for feed, files in landed.items()
        for _, lines in files
        for line in lines
        for r in decode(FEED_FORMATS[feed], json.loads(line)["key"], json.loads(line)["payload"])[
            :1
        ]
        if r["decode_error"]
    )
    assert quarantined == failed >= 20

    # awkward landed files, built incrementally: every line where it belongs, with its number,
    # Kafka coordinates and reason, and the build's accounting (which counts the landed lines
    # apart from the reader) balances
    values = _land_awkward_files(dbt, tmp_path / "awkward", landed)
    dbt("build")
    rows = spark.sql(
        f"select landed_file, landed_line, kafka_offset, error_reason "
        f"from {dbt.schema}.cdc_quarantine where landed_file like '%awkward%' "
        f"union all select landed_file, landed_line, kafka_offset, error_reason "
        f"from (select * from {dbt.schema}.decoded_canal_inventory union all "
        f"select * from {dbt.schema}.decoded_sqlserver_inventory) "
        f"where landed_file like '%awkward%' and error_reason is null"
    ).collect()
    read: dict[str, set] = {}
    for r in rows:
        name = r.landed_file.rsplit("/", 1)[-1]
        reason = r.error_reason and r.error_reason.split(" (")[0].split(",")[0]
        read.setdefault(name, set()).add((r.landed_line, r.kafka_offset, reason))
    malformed, unread = "malformed kcat JSON line", "landed file could not be read"
    good = {(0, None), (8, None), (10, None)}
    assert {(line, reason) for line, _, reason in read["awkward-canal.json"]} - {
        (None, None)
    } == good | {
        (2, malformed),
        (3, malformed),
        (4, "kcat record without topic or offset"),
        (5, malformed),
        (6, "line is not valid UTF-8"),
        (7, malformed),
    }
    for name, first in [
        ("t+0+100.json.gz", 100),
        ("t+0+200+204.json.gz", 200),
        ("t+3+500.json", 500),
    ]:
        expected = {(line, first + line, None) for line in range(values)}
        assert read[f"awkward.dbo.{name}"] - {(None, None, None)} == expected, name
    for cut in ("awkward.dbo.t+1+300.json.gz", "awkward.dbo.t+2+400.json.gz"):
        # its marker, and its quarantine row
        assert read[cut] == {(None, None, None), (None, None, unread)}, cut


def _land_awkward_files(dbt, folder: Path, landed: dict[str, list[tuple[str, list[str]]]]) -> int:
    """Files a reader can trip on: CRLF line ends, blank lines, a last line without its line
    end, invalid UTF-8, malformed kcat lines (not JSON, a field of the wrong type, no offset, an
    array), and Kafka Connect sink files (whole gzip, cut gzip, not gzip, plain); the number of
    values each whole sink file holds."""
    (_, canal_lines), *_ = landed["canal_inventory"]
    good = canal_lines[0].encode()
    awkward = folder / "awkward-canal.json"
    awkward.parent.mkdir(parents=True, exist_ok=True)
    awkward.write_bytes(
        b"\r\n".join(
            [
                good,
                b"",
                b"not json at all",
                b'{"topic": "t", "partition": "zero", "offset": 1, "payload": "{}"}',
                b'{"topic": "t", "partition": 0, "payload": "{}"}',
                b'[{"topic": "t", "partition": 0, "offset": 2}]',
                b'{"topic": "t", "partition": 0, "offset": 3, "payload": "\xff\xfe"}',
                b"   ",
                good,
            ]
        )
        + b"\n\n"
        + good
    )
    dbt.land("canal_inventory", awkward)
    values = [
        json.loads(line)["payload"] for _, lines in landed["sqlserver_inventory"] for line in lines
    ]
    values = [v for v in values if v][:5]
    whole = gzip.compress(("\n".join(values) + "\n").encode())
    sink = {
        "awkward.dbo.t+0+100.json.gz": whole,
        "awkward.dbo.t+0+200+204.json.gz": whole,
        "awkward.dbo.t+1+300.json.gz": whole[: len(whole) // 2],
        "awkward.dbo.t+2+400.json.gz": b"not gzip\n",
        "awkward.dbo.t+3+500.json": ("\n".join(values) + "\r\n\n").encode(),
    }
    for name, content in sink.items():
        (folder / name).write_bytes(content)
        dbt.land("sqlserver_inventory", folder / name)
    return len(values)


def _compiled_runs(name: str) -> list[Path]:
    """The SQL files called ``name`` that dbt ran, in this process's target folder (conftest)."""
    return list((Path(os.environ["DBT_TARGET_PATH"]) / "run").rglob(name))


@pytest.mark.long(2)
def test_accounting_catches_a_change_logged_twice(dbt, spark, tmp_path):
    from python_udfs.project import run_dbt

    path = write(
        tmp_path / "pg-0-0.jsonl",
        [
            kcat_line("t", 0, seed("pg_key_and_create")[1], seed("pg_key_and_create")[0]),
        ],
    )
    dbt.land("pg_inventory", path)
    dbt("build")
    s = dbt.schema
    # a duplicate row in a batch the ledger calls committed: the accounting must notice
    append_as_batch(spark, f"{s}.int_changes_unioned", "forged")
    spark.sql(
        f"insert into {s}.changelake_ledger__int_changes_unioned "
        f"partition (segment = 'tail') values ('batch', 'forged', current_timestamp(), 1)"
    )
    code, _ = run_dbt(["test", "--select", "assert_every_landed_record_is_accounted_for"])
    assert code == 1
    # a build that commits nothing tests nothing again (it changed nothing); `dbt test` and the
    # var changelake_test_scope=all test every row
    accounting = ["--select", "assert_every_landed_record_is_accounted_for"]
    assert run_dbt(["build", *accounting])[0] == 0
    assert run_dbt(["build", *accounting, "--vars", "{changelake_test_scope: all}"])[0] == 1
    # a generic test the same way: a build that did not change the log's store passes it
    # without a query of the log (its failures query is a constant); `dbt test` queries the
    # log and finds the duplicate
    unique = ["--select", "unique_cdc_change_log_change_id"]
    assert run_dbt(["build", *unique])[0] == 0
    (ran,) = _compiled_runs("unique_cdc_change_log_change_id.sql")
    constant = "select 0 as failures, false as should_warn, false as should_error"
    assert ran.read_text().split() == constant.split()
    assert run_dbt(["test", *unique])[0] == 1
    assert "cdc_change_log" in ran.read_text()
    # a build that commits a batch upstream accounts for that batch's records: here the same
    # change re-sent, which the change log holds (the forged copy is an older batch's: only
    # `dbt test` sees it)
    path = write(
        tmp_path / "pg-0-1.jsonl",
        [kcat_line("t", 1, seed("pg_key_and_create")[1], seed("pg_key_and_create")[0])],
    )
    dbt.land("pg_inventory", path)
    code, _ = run_dbt(["build", "--select", "+assert_every_landed_record_is_accounted_for"])
    assert code == 0
    # a change decoded by this build that the change log does not hold (it was not built)
    path = write(
        tmp_path / "pg-0-2.jsonl", [kcat_line("t", 2, seed("pg_update")[1], seed("pg_update")[0])]
    )
    dbt.land("pg_inventory", path)
    code, _ = run_dbt(["build", "--select", "decoded_pg_inventory", *accounting])
    assert code == 1
    # the next build logs it: its own batch (none here) balances
    assert run_dbt(["build", "--select", "+assert_every_landed_record_is_accounted_for"])[0] == 0


def test_a_build_checks_each_row_of_what_it_logged_by_partition(dbt, spark, tmp_path):
    """`not_null` and `accepted_values` on cdc_change_log, in a build that logged changes, read
    that build's partition of the log: a bad row there fails them, a bad row of an older batch
    is left to `dbt test`, and no change_id join reads the whole log."""
    from python_udfs.project import run_dbt

    create, update = seed("pg_key_and_create"), seed("pg_update")
    dbt.land(
        "pg_inventory", write(tmp_path / "pg-0-0.jsonl", [kcat_line("t", 0, create[1], create[0])])
    )
    dbt("build")
    dbt.land(
        "pg_inventory", write(tmp_path / "pg-0-1.jsonl", [kcat_line("t", 1, update[1], update[0])])
    )
    ops = "accepted_values_cdc_change_log_op__c__u__d__r"
    assert run_dbt(["build", "--select", f"+{ops}"])[0] == 0
    (ran,) = _compiled_runs(f"{ops}.sql")
    checked = ran.read_text()
    (build,) = set(re.findall(r"segment in \('([^']+)'\)", checked))
    assert "change_id in" not in checked
    assert "changelake_ledger" not in checked
    s = dbt.schema
    failures = f"select failures from ({checked})"
    assert spark.sql(failures).first()[0] == 0
    # an op outside the accepted values in an older committed batch: not this build's rows
    bad_op = "* except (batch_id, segment, op), 'x' as op"
    spark.sql(
        f"insert into {s}.int_changes_unioned by name select {bad_op}, 'older' as batch_id, "
        f"'older' as segment from {s}.int_changes_unioned limit 1"
    )
    spark.sql(
        f"insert into {s}.changelake_ledger__int_changes_unioned "
        f"partition (segment = 'tail') values ('batch', 'older', current_timestamp(), 1)"
    )
    assert spark.sql(failures).first()[0] == 0
    assert run_dbt(["test", "--select", ops])[0] == 1
    # the same in the build's own partition: the build's check finds it
    spark.sql(
        f"insert into {s}.int_changes_unioned by name select {bad_op}, '{build}' as batch_id, "
        f"'{build}' as segment from {s}.int_changes_unioned where segment = '{build}' limit 1"
    )
    assert spark.sql(failures).first()[0] == 1


def test_land_command_copies_atomically_and_rejects_unknown_feeds(tmp_path):
    from python_udfs import runtime
    from python_udfs.project import land_files

    source = write(tmp_path / "in" / "a.jsonl", ["x"])
    root = tmp_path / "root"
    (landed,) = land_files("pg_inventory", [source.parent], str(root), runtime.project_dir())
    assert landed == root / "pg_inventory" / "a.jsonl"
    assert landed.read_text() == "x\n"
    assert not list((root / "pg_inventory").glob(".*"))  # no hidden leftovers
    with pytest.raises(runtime.ChangeLakeError, match="no feed 'nope'"):
        land_files("nope", [source], str(root), runtime.project_dir())
    with pytest.raises(runtime.ChangeLakeError, match="copies to local folders"):
        land_files("pg_inventory", [source], "s3a://bucket/cdc", runtime.project_dir())
    shutil.rmtree(root)
