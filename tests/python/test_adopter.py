"""The adopter's path, as the README walks it: in a copy of the project, the demo switched off
and one feed and one typed table added only through seeds/changelake.yml; data landed, built,
and the typed table found right, and described in the rendered docs site."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.dbt

PROJECT = Path(__file__).resolve().parents[2]
T0 = 1_767_600_000_000  # 2026-01-05 08:00 UTC, in ms


def canal(op: str, rows: list[dict], es: int, old: list[dict] | None = None) -> dict:
    return {
        "data": rows,
        "old": old,
        "database": "shop",
        "table": "items",
        "type": op,
        "isDdl": False,
        "pkNames": ["id"],
        "mysqlType": {"id": "int", "name": "varchar(64)", "price": "decimal(10,2)"},
        "es": es,
        "ts": es + 5,
    }


def test_a_feed_and_a_typed_table_by_configuration_alone(spark, tmp_path, monkeypatch):
    from test_docs_site import generate_site, rendered, serve

    from python_udfs.project import land_files, run_dbt

    home = tmp_path / "project"
    shutil.copytree(
        PROJECT,
        home,
        ignore=shutil.ignore_patterns(".*", "target", "logs", "*.egg-info", "python*", "__py*"),
    )
    (home / "seeds" / "changelake.yml").write_text(
        yaml.safe_dump(
            {
                "feeds": {
                    "shop_canal": {
                        "description": "The shop database's Canal topic, kcat lines.",
                        "envelope_format": "canal",
                        "shape": "kcat",
                        "path": "shop/canal",
                    }
                },
                "typed_tables": {
                    "shop_items": {
                        "feed": "shop_canal",
                        "source_table": "shop.items",
                        "key": ["id"],
                        "description": "Every version of the shop's items, typed.",
                        "columns": {
                            "id": {"type": "int", "description": "Item id (the key)."},
                            "name": {"type": "string", "description": "Item name."},
                            "price": {"type": "decimal(10,2)", "description": "Price in EUR."},
                        },
                    }
                },
            }
        )
    )
    schema = "t_adopter"
    spark.sql(f"drop schema if exists {schema} cascade")
    # run_dbt points CHANGELAKE_HOME at the project it runs: back to this one after the test
    monkeypatch.setenv("CHANGELAKE_HOME", str(PROJECT))
    monkeypatch.setenv("CHANGELAKE_SCHEMA", schema)
    monkeypatch.setenv("CHANGELAKE_LANDING_ROOT", str(tmp_path / "landing"))
    project = ["--project-dir", str(home), "--profiles-dir", str(home / "profiles")]
    no_demo = ["--vars", "{changelake_demo: false}"]

    messages = [
        canal("INSERT", [{"id": "1", "name": "lamp", "price": "19.90"}], T0),
        canal("INSERT", [{"id": "2", "name": "drill", "price": "59.00"}], T0 + 1000),
        canal(
            "UPDATE",
            [{"id": "1", "name": "lamp", "price": "17.50"}],
            T0 + 2000,
            old=[{"price": "19.90"}],
        ),
        canal("DELETE", [{"id": "2", "name": "drill", "price": "59.00"}], T0 + 3000),
    ]
    landed = tmp_path / "shop.items-0.jsonl"
    landed.write_text(
        "".join(
            json.dumps(
                {
                    "topic": "shop",
                    "partition": 0,
                    "offset": i,
                    "ts": T0,
                    "key": None,
                    "headers": [],
                    "payload": json.dumps(m),
                }
            )
            + "\n"
            for i, m in enumerate(messages)
        )
    )
    # the feed exists as soon as it is configured: `changelake land` writes its dbt files
    (path,) = land_files("shop_canal", [landed], str(tmp_path / "landing"), home)
    assert path.parent == tmp_path / "landing" / "shop" / "canal"

    code, result = run_dbt(["build", *project, *no_demo])
    assert code == 0, result.exception
    built = {r.node.name for r in result.result.results}
    assert {"decoded_shop_canal", "typed_shop_items_history", "typed_shop_items_current"} <= built
    assert "decoded_pg_inventory" not in built  # the demo is off

    current = spark.sql(f"select id, name, price from {schema}.typed_shop_items_current").collect()
    assert [tuple(r) for r in current] == [(1, "lamp", Decimal("17.50"))]
    history = spark.sql(
        f"select id, price, is_current, is_deleted from {schema}.typed_shop_items_history "
        f"order by id, version_number"
    ).collect()
    assert [(r.id, str(r.price), r.is_current, r.is_deleted) for r in history] == [
        (1, "19.90", False, False),
        (1, "17.50", True, False),
        (2, "59.00", False, True),
    ]

    target = tmp_path / "site"
    manifest = generate_site(target, *project, *no_demo)
    assert "model.changelake.typed_shop_items_current" in manifest["nodes"]
    with serve(target) as base:
        dom = rendered(
            f"{base}/index.html#!/model/model.changelake.typed_shop_items_history", tmp_path
        )
    assert "Every version of the shop's items, typed." in dom
    assert "Price in EUR." in dom
