"""The dbt files of feeds and typed tables are written from their one entry of configuration
(python_udfs.models); these tests need no Spark."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from python_udfs import models

PROJECT = Path(__file__).resolve().parents[3]


def copy_project(tmp_path: Path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(
        PROJECT,
        copy,
        ignore=shutil.ignore_patterns(".*", "target", "logs", "*.egg-info", "python*", "__py*"),
    )
    return copy


def test_the_committed_model_files_match_the_configuration(tmp_path):
    assert models.sync(copy_project(tmp_path)) == [], "run `changelake models`"


def test_one_entry_adds_a_feed_and_a_typed_table_and_removing_it_removes_them(tmp_path):
    home = copy_project(tmp_path)
    config = {
        "feeds": {"shop_pg": {"envelope_format": "debezium", "shape": "kcat", "path": "pg/shop"}},
        "typed_tables": {
            "shop_items": {
                "feed": "shop_pg",
                "source_table": "shop.public.items",
                "key": ["id"],
                "columns": {"id": {"type": "int"}, "price": {"type": "decimal(10,2)"}},
            }
        },
    }
    (home / models.CONFIG).write_text(yaml.safe_dump(config))
    written = models.sync(home)
    for path in (
        "models/decoded/decoded_shop_pg.sql",
        "models/staging/landing/stg_landing__shop_pg.sql",
        "models/typed/typed_shop_items_history.sql",
        "models/typed/typed_shop_items_current.sql",
    ):
        assert f"wrote {path}" in written
        assert models.MARK in (home / path).read_text()
    sources = yaml.safe_load((home / models.SOURCES_YML).read_text())
    (landing,) = sources["sources"]
    shop = [t for t in landing["tables"] if t["name"] == "shop_pg"]
    assert shop[0]["meta"] == {"envelope_format": "debezium", "shape": "kcat", "path": "pg/shop"}
    assert "'shop_pg'" in (home / models.UNION_SQL).read_text()
    history = (home / "models/typed/typed_shop_items_history.sql").read_text()
    assert "source_table='shop.public.items'" in history
    assert "'price': 'decimal(10,2)'" in history
    typed = yaml.safe_load((home / models.TYPED_YML).read_text())
    described = {m["name"]: [c["name"] for c in m["columns"]] for m in typed["models"]}
    assert described["typed_shop_items_history"][-2:] == ["id", "price"]

    # without the demo (the dbt var), only the user's feed is left; a file not written by the
    # command is never touched
    own = home / "models" / "decoded" / "my_model.sql"
    own.write_text("select 1 as one\n")
    removed = models.sync(home, dbt_args=["build", "--vars", "{changelake_demo: false}"])
    assert "removed models/decoded/decoded_pg_inventory.sql" in removed
    assert "removed models/typed/typed_pg_customers_history.sql" in removed
    assert own.exists()
    landing = yaml.safe_load((home / models.SOURCES_YML).read_text())["sources"][0]
    assert [t["name"] for t in landing["tables"]] == ["shop_pg"]

    (home / models.CONFIG).write_text("feeds: {}\ntyped_tables: {}\n")
    models.sync(home, demo=False)
    assert not (home / "models/decoded/decoded_shop_pg.sql").exists()
    assert yaml.safe_load((home / models.SOURCES_YML).read_text())["sources"][0]["tables"] == []
