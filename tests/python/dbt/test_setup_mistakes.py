"""Operator mistakes in a feed's configuration stop the run with one line naming the problem
and the fix (README "When something is set up wrong"). Each case edits the demo's configuration
in a copy of the project and compiles one model on the shared session (`changelake dbt` writes
the dbt files from the configuration first)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

PROJECT = Path(__file__).resolve().parents[3]
CONFIG = Path("seeds") / "demo" / "changelake_demo.yml"


def feed(doc: dict, name: str) -> dict:
    return doc["feeds"][name]


def drop_tencent_keys(doc: dict) -> None:
    del feed(doc, "tencent_inventory")["key_columns"]


def connect_shape_without_keys(doc: dict) -> None:
    feed(doc, "canal_inventory")["shape"] = "connect"


def unknown_format(doc: dict) -> None:
    feed(doc, "canal_inventory")["envelope_format"] = "kanal"


def unknown_shape(doc: dict) -> None:
    feed(doc, "canal_inventory")["shape"] = "kafka"


def bad_key_entry(doc: dict) -> None:
    feed(doc, "tencent_inventory")["key_columns"]["customers"] = ["id"]


def no_feeds(doc: dict) -> None:
    doc["feeds"], doc["typed_tables"] = {}, {}


def unknown_setting(doc: dict) -> None:
    feed(doc, "canal_inventory")["folder"] = "canal"


def tracked_column_without_a_type(doc: dict) -> None:
    doc["typed_tables"]["pg_customers"]["tracked"].append("nickname")


def typed_table_of_no_feed(doc: dict) -> None:
    doc["typed_tables"]["pg_customers"]["feed"] = "pg_inventroy"


def copy_project(tmp_path: Path, edit) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(
        PROJECT,
        copy,
        ignore=shutil.ignore_patterns(".*", "target", "logs", "*.egg-info", "python*", "__py*"),
    )
    doc = yaml.safe_load((copy / CONFIG).read_text())
    edit(doc)
    (copy / CONFIG).write_text(yaml.safe_dump(doc, sort_keys=False))
    return copy


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
            tracked_column_without_a_type,
            "typed_pg_customers_history",
            "typed history of inventory.public.customers: column 'nickname' is a key or "
            "tracked column but has no type in `columns`",
        ),
        (
            no_feeds,
            "int_records_unioned",
            "no feed is configured: declare one under feeds: in seeds/changelake.yml",
        ),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_a_configuration_mistake_is_one_line_naming_it(
    spark, tmp_path, monkeypatch, edit, model, message
):
    from python_udfs.project import run_dbt

    # run_dbt points CHANGELAKE_HOME at the project it runs: back to this one after the test
    monkeypatch.setenv("CHANGELAKE_HOME", str(PROJECT))

    copy = copy_project(tmp_path, edit)
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


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            unknown_setting,
            "seeds/demo/changelake_demo.yml: feeds.canal_inventory: unknown setting 'folder'",
        ),
        (
            typed_table_of_no_feed,
            "typed_tables.pg_customers: feed 'pg_inventroy' is not configured",
        ),
    ],
    ids=lambda v: v.__name__ if callable(v) else "",
)
def test_a_configuration_file_mistake_is_one_line_naming_it(tmp_path, edit, message):
    from python_udfs import models, runtime

    copy = copy_project(tmp_path, edit)
    with pytest.raises(runtime.ChangeLakeError) as raised:
        models.sync(copy)
    assert message in str(raised.value)
