"""Real CDC messages from other projects' test suites (``../shared/conformance``).

Every message decodes without ``decode_error`` except the ones that are not valid messages,
which fail with a reason naming what is wrong; and the decoded changes are the ones the
origin's own tests expect (Flink's JSON format tests for the shared product data, Paimon's and
Flink CDC's for the rest).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from python_udfs import decode

FIXTURES = Path(__file__).parents[1] / "fixtures" / "conformance"
PRODUCT = json.loads((FIXTURES / "product_changelog.json").read_text())["full"]
# The Debezium and GoldenGate data sets of Flink's tests end with the delete of 111.
PRODUCT_SHORT = PRODUCT[: PRODUCT.index("-D(111,scooter,Big 2-wheel scooter ,5.17)") + 1]
# The newest flink-json canal-data.txt inserts 106 with a null description.
PRODUCT_106_NULL = [
    line.replace("106,hammer,16oz carpenter's hammer,1.0", "106,hammer,null,1.0")
    if line.startswith(("+I(106", "-U(106"))
    else line
    for line in PRODUCT
]

# Files the corpus marks as Kafka keys, not values.
KEY_FILES = {
    "debezium-docs/postgresql/postgresql.adoc.L639-L658.key.json",
    "debezium-docs/sqlserver/sqlserver.adoc.L942-L958.key.json",
    "debezium-docs/mysql/shared-mariadb-mysql.adoc.L151-L168.schema-change-key-schema.json",
    "debezium-docs/sqlserver/sqlserver.adoc.L618-L635.schema-change-key-schema.json",
    "debezium-docs/mysql-tutorial/proc-deleting-record-database-viewing-delete-event.adoc"
    ".L139-L155.tombstone-key.json",
    "debezium-docs/mysql-tutorial/proc-deleting-record-database-viewing-delete-event.adoc"
    ".L49-L65.delete-key.json",
    "debezium-docs/mysql-tutorial/proc-updating-database-viewing-update-event.adoc"
    ".L58-L74.update-key.json",
    "debezium-docs/mysql-tutorial/proc-viewing-create-event.adoc.L98-L114.create-key.json",
}

# Valid JSON that is not a valid message: each must fail, with this in its reason.
MEANT_TO_FAIL = {
    # the documentation example puts a nanosecond count in payload.ts_ms
    "debezium-docs/sqlserver/sqlserver.adoc.L1047-L1233.create-with-schema.json": "out of range",
    # an unwrapped row (Debezium's SerdeTest uses it for the unwrapped serde), not an envelope
    "debezium-serde/serde-unwrapped.json": "has no 'op'",
}


def _origin_is_invalid_json(relative: str) -> bool:
    """SOURCES.md marks these documentation excerpts as not valid JSON (placeholders...)."""
    sources = (ROOT / "SOURCES.md").read_text()
    line = next((entry for entry in sources.splitlines() if f"| {relative} |" in entry), "")
    return "not valid JSON" in line


def envelope_format(relative: str) -> str:
    if "/aliyun/" in relative:
        return "dataworks"
    name = relative.rsplit("/", 1)[-1]
    for fmt in ("canal", "maxwell", "ogg"):
        if fmt in name or f"/{fmt}/" in relative:
            return fmt
    return "debezium"


def messages(path: Path) -> list[str]:
    """The messages of one corpus file, as each origin's test reads them.

    Line files: one message a line, after the license comment some origins put first.
    Single-document ``.json`` files: the document; documentation excerpts holding two
    documents separated by a blank line: each; Flink CDC's ``{expected_snapshot,
    expected_binlog}`` files: each of the two.
    """
    text = re.sub(r"^/\*.*?\*/\s*", "", path.read_text(), flags=re.S)
    if path.suffix != ".json":
        return [line for line in text.splitlines() if line.strip()]
    try:
        doc = json.loads(text)
    except ValueError:
        return [part for part in re.split(r"\n\s*\n", text) if part.strip()]
    if isinstance(doc, dict) and set(doc) == {"expected_snapshot", "expected_binlog"}:
        return [json.dumps(doc["expected_snapshot"]), json.dumps(doc["expected_binlog"])]
    return [text]


ROOT = Path(__file__).resolve().parents[4] / "shared" / "conformance"
FILES = (
    sorted(str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and p.suffix != ".md")
    if ROOT.is_dir()
    else []
)


@pytest.fixture(scope="module", autouse=True)
def _corpus(shared_dir):
    """Skip (with the reason) where ../shared/conformance is absent."""
    if not (shared_dir / "conformance").is_dir():
        pytest.skip("../shared/conformance not found")


def _decode_file(relative: str) -> list[dict]:
    fmt = envelope_format(relative)
    out = []
    for message in messages(ROOT / relative):
        out.extend(decode(fmt, None, message))
    return out


def test_the_corpus_is_all_covered():
    assert len(FILES) >= 90
    formats = Counter(envelope_format(f) for f in FILES)
    assert set(formats) == {"debezium", "canal", "maxwell", "ogg", "dataworks"}


@pytest.mark.parametrize("relative", FILES)
def test_every_message_decodes_or_fails_with_its_reason(relative):
    path = ROOT / relative
    if relative in KEY_FILES:
        if _origin_is_invalid_json(relative):
            (got,) = decode("debezium", path.read_text(), None)
            assert "malformed JSON in key" in got["decode_error"]
            return
        (got,) = decode("debezium", path.read_text(), None)
        assert got["decode_error"] is None
        assert got["kind"] == "tombstone"
        assert json.loads(got["key_json"])
        return
    records = _decode_file(relative)
    errors = [r["decode_error"] for r in records if r["decode_error"]]
    if _origin_is_invalid_json(relative):
        assert errors
        assert all("malformed JSON in value" in e for e in errors)
    elif relative in MEANT_TO_FAIL:
        assert errors
        assert all(MEANT_TO_FAIL[relative] in e for e in errors)
    elif relative == "flink-cdc/debezium-data-schema-include.json":
        # Flink CDC's hand-built expectation sends base64 text in a field its own schema
        # declares int32 (the binlog half declares no field types and decodes).
        assert errors == [
            "after.id: cannot convert 'AQ==': invalid literal for int() with base 10: 'AQ=='"
        ]
    elif relative == "flink-json/debezium-postgres-data-replica-identity.txt":
        # Without REPLICA IDENTITY FULL (and no key), a delete cannot say what it deleted:
        # Flink's test expects this file to fail on it too.
        assert errors == ["op 'd' with neither a 'before' image nor a key"]
    else:
        assert errors == []
        assert records


def _flink_row(image: dict) -> str:
    def text(value, column):
        if value is None:
            return "null"
        if column == "weight":  # FLOAT in Flink's test schema
            return str(np.float32(float(value)))
        return str(value)

    return (
        "(" + ",".join(text(image.get(c), c) for c in ("id", "name", "description", "weight")) + ")"
    )


def flink_changelog(records: list[dict]) -> list[str]:
    """Render decoded row changes the way Flink's tests print RowData."""
    out = []
    for r in records:
        if r["kind"] != "row":
            continue
        before = json.loads(r["before_json"]) if r["before_json"] else None
        after = json.loads(r["after_json"]) if r["after_json"] else None
        if r["op"] in ("c", "r"):
            out.append("+I" + _flink_row(after))
        elif r["op"] == "u":
            out += ["-U" + _flink_row(before), "+U" + _flink_row(after)]
        else:
            out.append("-D" + _flink_row(before))
    return out


@pytest.mark.parametrize(
    ("relative", "expected"),
    [
        ("flink-json/canal-data.txt", PRODUCT_106_NULL),
        ("flink-connector-kafka/canal-data.txt", PRODUCT),
        ("flink-json/canal-data-with-init.txt", PRODUCT_106_NULL),
        ("flink-json/maxwell-data.txt", PRODUCT),
        ("flink-connector-kafka/maxwell-data.txt", PRODUCT),
        ("flink-json/debezium-data-schema-include.txt", PRODUCT_SHORT),
        ("flink-connector-kafka/debezium-data-schema-exclude.txt", PRODUCT_SHORT),
        ("flink-json/debezium-postgres-data-schema-include.txt", PRODUCT_SHORT),
        ("flink-json/debezium-postgres-data-schema-exclude.txt", PRODUCT_SHORT),
        ("flink-json/ogg-data.txt", PRODUCT_SHORT),
    ],
)
def test_product_changelog_matches_flink(relative, expected):
    assert flink_changelog(_decode_file(relative)) == expected


def test_canal_multi_row_messages_keep_row_order_and_index():
    records = [r for r in _decode_file("flink-json/canal-data.txt") if r["kind"] == "row"]
    first = [r for r in records if r["committed_at"] == records[0]["committed_at"]]
    assert [r["row_index"] for r in first] == list(range(9))
    assert {r["position"] for r in first} == {"001589373515000"}
    assert first[0]["column_types"]["weight"] == "float"


def test_canal_partial_old_rebuilds_the_full_before_image():
    update_106 = next(r for r in _decode_file("flink-json/canal-data.txt") if r["op"] == "u")
    assert json.loads(update_106["before_json"]) == {
        "id": "106",
        "name": "hammer",
        "description": None,
        "weight": "1.0",
    }


def test_canal_init_rows_are_snapshot_reads():
    records = _decode_file("flink-json/canal-data-with-init.txt")
    reads = [r for r in records if r["op"] == "r"]
    assert len(reads) == 9
    assert all(r["is_snapshot"] and r["op_raw"] == "INIT" for r in reads)


def test_canal_filter_table_file_carries_several_tables():
    records = _decode_file("flink-json/canal-data-filter-table.txt")
    tables = Counter((r["database_name"], r["table_name"]) for r in records if r["kind"] == "row")
    assert len(tables) >= 2
    assert any(r["kind"] == "ddl" and r["ddl"] for r in records)


def test_the_three_flink_cdc_encodings_of_one_stream_agree():
    """Flink CDC's canal-json, debezium-json and debezium-json-with-schema e2e outputs."""

    def per_key(relative):
        """Each key's ops and after images in order (the files interleave keys differently:
        they come from parallel readers, and Flink CDC's test compares them unordered)."""
        out: dict = {}
        for r in _decode_file(relative):
            image = json.loads(r["after_json"] or r["before_json"])
            after = json.loads(r["after_json"]) if r["after_json"] else None
            after = {k: str(v) for k, v in after.items()} if after else None
            out.setdefault((r["table_name"], str(image["id"])), []).append((r["op"], after))
        return out

    canal = per_key("flink-cdc/canal-json.txt")
    assert Counter(op for ops in canal.values() for op, _ in ops) == {"c": 15, "u": 4, "d": 1}
    for other in ("flink-cdc/debezium-json.txt", "flink-cdc/debezium-json-with-schema.txt"):
        theirs = per_key(other)
        assert set(theirs) == set(canal)
        for key, changes in canal.items():
            assert [op for op, _ in theirs[key]] == [op for op, _ in changes], key


def test_debezium_docs_examples_decode_to_what_the_docs_describe():
    pg = _decode_file("debezium-docs/postgresql/postgresql.adoc.L765-L952.create-with-schema.json")
    assert pg[0]["source_engine"] == "postgresql"
    assert pg[0]["op"] == "c"
    assert json.loads(pg[0]["after_json"])["email"] == "annek@noanswer.org"
    assert pg[0]["position"] == f"{24023128:020d}"

    begin, end = _decode_file(
        "debezium-docs/postgresql/postgresql.adoc.L459-L482.transaction-boundary.json"
    )
    assert (begin["kind"], begin["op_raw"], end["op_raw"]) == ("transaction", "BEGIN", "END")
    # the documentation's own example gives the two events different ids
    assert (begin["transaction_id"], end["transaction_id"]) == ("571:53195829", "571:53195832")

    (ddl,) = _decode_file(
        "debezium-docs/mysql/shared-mariadb-mysql.adoc.L210-L326.schema-change.json"
    )
    assert ddl["kind"] == "ddl"
    assert ddl["ddl"] == "ALTER TABLE customers ADD middle_name varchar(255) AFTER first_name"
    assert ddl["source_engine"] == "mysql"

    (tombstone,) = _decode_file(
        "debezium-docs/mysql-tutorial/proc-deleting-record-database-viewing-delete-event.adoc"
        ".L164-L167.tombstone-value.json"
    )
    assert tombstone["kind"] == "tombstone"


def test_dataworks_events_as_paimon_expects():
    (insert,) = _decode_file("paimon/kafka/aliyun/table/event/event-insert.txt")
    # full-sync row: sequenceId -1, eventTime -1
    assert (insert["op"], insert["is_snapshot"], insert["committed_at"]) == ("r", True, None)
    assert insert["position"] == "0" * 20
    assert json.loads(insert["after_json"]) == {
        "create_time": "2024-11-15T08:58:34Z",
        "id": 2,
        "name": "a",
        "val": "1.100000",
    }
    (update,) = _decode_file("paimon/kafka/aliyun/table/event/event-update-in-one.txt")
    assert update["op"] == "u"
    assert json.loads(update["before_json"])["val"] == "1.100000"
    assert json.loads(update["after_json"])["val"] == "2.200000"
    assert update["key_json"] == '{"id":2}'
    (delete,) = _decode_file("paimon/kafka/aliyun/table/event/event-delete.txt")
    assert delete["op"] == "d"
    assert delete["key_json"] == '{"id":1}'


@pytest.mark.parametrize(
    "folder",
    [
        "paimon/kafka/debezium/table/schemaevolution",
        "paimon/kafka/maxwell/table/schemaevolution",
        "paimon/kafka/ogg/table/schemaevolution",
    ],
)
def test_schema_evolution_shows_new_columns_in_later_files(folder):
    columns = []
    for path in sorted((ROOT / folder).glob("*-data-*.txt")):
        seen = set()
        for r in _decode_file(str(path.relative_to(ROOT))):
            seen |= set(json.loads(r["after_json"] or r["before_json"]))
        columns.append(seen)
    assert len(columns) >= 3
    assert columns[0] < columns[1] or columns[1] < columns[2]


def test_canal_schema_evolution_carries_its_ddl():
    records = []
    for n in range(1, 6):
        records += _decode_file(f"paimon/kafka/canal/table/schemaevolution/canal-data-{n}.txt")
    ddl = [r["ddl"] for r in records if r["kind"] == "ddl"]
    assert len(ddl) == 16
    assert any("ADD COLUMN" in d.upper() or "ADD " in d.upper() for d in ddl)
