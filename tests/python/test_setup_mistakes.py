"""Operator mistakes in a feed's configuration stop the run with one line naming the problem
and the fix (README "When something is set up wrong"). Each case edits the landing source of a
copy of the project and compiles one model on the shared session."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.dbt

PROJECT = Path(__file__).resolve().parents[2]
SOURCES = Path("models") / "staging" / "landing" / "_landing__sources.yml"


def feed(doc: dict, name: str) -> dict:
    (landing,) = [s for s in doc["sources"] if s["name"] == "landing"]
    (table,) = [t for t in landing["tables"] if t["name"] == name]
    return table


def drop_tencent_keys(doc: dict) -> None:
    del feed(doc, "tencent_inventory")["meta"]["key_columns"]


def connect_shape_without_keys(doc: dict) -> None:
    feed(doc, "canal_inventory")["meta"]["shape"] = "connect"


def unknown_format(doc: dict) -> None:
    feed(doc, "canal_inventory")["meta"]["envelope_format"] = "kanal"


def unknown_shape(doc: dict) -> None:
    feed(doc, "canal_inventory")["meta"]["shape"] = "kafka"


def bad_key_entry(doc: dict) -> None:
    feed(doc, "tencent_inventory")["meta"]["key_columns"]["customers"] = ["id"]


def unlisted_feed(doc: dict) -> None:
    (landing,) = [s for s in doc["sources"] if s["name"] == "landing"]
    extra = dict(feed(doc, "canal_inventory"), name="canal_more", identifier="raw_canal_more")
    landing["tables"].append(extra)


@pytest.mark.parametrize(
    ("edit", "model", "message"),
    [
        (
            drop_tencent_keys,
            "decoded_tencent_inventory",
            "landing feed 'tencent_inventory': meta.key_columns is required "
            "(Tencent messages carry no key)",
        ),
        (
            connect_shape_without_keys,
            "decoded_canal_inventory",
            "landing feed 'canal_inventory': meta.key_columns is required "
            "(Kafka Connect sink files keep no Kafka key)",
        ),
        (
            unknown_format,
            "decoded_canal_inventory",
            "landing feed 'canal_inventory': meta.envelope_format must be one of debezium,",
        ),
        (
            unknown_shape,
            "decoded_canal_inventory",
            "landing feed 'canal_inventory': meta.shape must be kcat, connect or auto "
            "(got 'kafka')",
        ),
        (
            bad_key_entry,
            "stg_landing__tencent_inventory",
            "key_columns: 'customers' is not database.table or database.schema.table",
        ),
        (
            unlisted_feed,
            "int_records_unioned",
            "the feeds listed in int_records_unioned and the landing source differ: "
            "not listed: canal_more",
        ),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_a_configuration_mistake_is_one_line_naming_it(spark, tmp_path, edit, model, message):
    from python_udfs.project import run_dbt

    copy = tmp_path / "project"
    shutil.copytree(
        PROJECT,
        copy,
        ignore=shutil.ignore_patterns(".*", "target", "logs", "*.egg-info", "python*", "__py*"),
    )
    doc = yaml.safe_load((copy / SOURCES).read_text())
    edit(doc)
    (copy / SOURCES).write_text(yaml.safe_dump(doc, sort_keys=False))
    code, result = run_dbt(
        [
            "compile",
            "--select",
            model,
            "--project-dir",
            str(copy),
            "--profiles-dir",
            str(copy / "profiles"),
        ]
    )
    assert code != 0
    errors = [str(result.exception or "")] + [
        str(r.message) for r in getattr(result.result, "results", None) or []
    ]
    assert any(message in error for error in errors), errors
