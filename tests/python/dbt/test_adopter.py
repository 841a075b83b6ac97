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

PROJECT = Path(__file__).resolve().parents[3]
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


@pytest.mark.long(3)
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

    # the source adds a column by DDL: the build warns naming it; once the entry lists it, the
    # typed table has it, null in the versions before it
    added = {"id": "1", "name": "lamp", "price": "17.50", "stock": "4"}
    ddl = {
        **canal("ALTER", [], T0 + 4000),
        "data": None,
        "isDdl": True,
        "sql": "ALTER TABLE items ADD COLUMN stock int",
    }
    update = canal("UPDATE", [added], T0 + 5000, old=[{"stock": None}])
    second = tmp_path / "shop.items-1.jsonl"
    second.write_text(
        "".join(
            json.dumps(
                {
                    "topic": "shop",
                    "partition": 0,
                    "offset": 4 + i,
                    "ts": T0,
                    "key": None,
                    "headers": [],
                    "payload": json.dumps(m),
                }
            )
            + "\n"
            for i, m in enumerate([ddl, update])
        )
    )
    land_files("shop_canal", [second], str(tmp_path / "landing"), home)
    code, result = run_dbt(["build", *project, *no_demo])
    assert code == 0, result.exception
    (check,) = [r for r in result.result.results if "typed_columns_cover" in r.node.name]
    assert (check.status, check.failures) == ("warn", 1)
    assert "'stock' as column_name, 1 as changes" in check.node.compiled_code

    config = yaml.safe_load((home / "seeds" / "changelake.yml").read_text())
    config["typed_tables"]["shop_items"]["columns"]["stock"] = {"type": "int"}
    (home / "seeds" / "changelake.yml").write_text(yaml.safe_dump(config))
    code, result = run_dbt(
        ["build", *project, "--vars", "{changelake_demo: false, changelake_test_scope: all}"]
    )
    assert code == 0, result.exception
    (check,) = [r for r in result.result.results if "typed_columns_cover" in r.node.name]
    assert (check.status, check.failures) == ("pass", 0)
    stock = spark.sql(
        f"select price, stock, is_current from {schema}.typed_shop_items_history "
        f"where id = 1 order by version_number"
    ).collect()
    assert [(str(r.price), r.stock, r.is_current) for r in stock] == [
        ("19.90", None, False),
        ("17.50", None, False),
        ("17.50", 4, True),
    ]

    # the current model is read from the history store's frontier, which keeps each key's start
    # of its tracked version per typed model; `stock` joined the tracked columns (all, by
    # default) after the keys' last fold, so this build (nothing new to fold) reads the typed
    # history instead; the next build with a change to fold re-folds every key of the table
    # and brings the frontier read back, and so does a full refresh of the store
    def current_read(result):
        (node,) = [
            r.node for r in result.result.results if r.node.name == "typed_shop_items_current"
        ]
        return "islands" in node.compiled_code

    def current_rows():
        return [
            tuple(r)
            for r in spark.sql(
                f"select id, name, price, stock, opening_change_id, valid_from_position "
                f"from {schema}.typed_shop_items_current"
            ).collect()
        ]

    assert not current_read(result)
    from_history = current_rows()
    assert [r[:4] for r in from_history] == [(1, "lamp", Decimal("17.50"), 4)]

    # a new key, in a file of its own: key 1 is not touched, but its table is re-folded
    def land_insert(offset: int, row: dict) -> None:
        message = canal("INSERT", [row], T0 + 1000 * offset)
        line = {"topic": "shop", "partition": 0, "offset": offset, "ts": T0, "key": None}
        path = tmp_path / f"shop.items-{offset}.jsonl"
        path.write_text(json.dumps({**line, "headers": [], "payload": json.dumps(message)}) + "\n")
        land_files("shop_canal", [path], str(tmp_path / "landing"), home)

    land_insert(6, {"id": "3", "name": "saw", "price": "12.00", "stock": "2"})
    code, result = run_dbt(["build", *project, *no_demo])
    assert code == 0, result.exception
    assert current_read(result)
    refolded = {r[0]: r for r in current_rows()}
    assert refolded[1] == from_history[0]  # the same start as the typed history's
    assert refolded[3][:4] == (3, "saw", Decimal("12.00"), 2)
    assert len(refolded) == 2

    # that build's check found starts missing and removed the store's property; a full
    # refresh gives the same rows and, having folded every key with the typed models, sets
    # the property to them, after which builds query for missing starts no more
    store = f"{schema}.int_history_versions"

    def typed_specs() -> str:
        (row,) = spark.sql(f"show tblproperties {store} ('changelake.typed_specs')").collect()
        return row[-1]

    assert "typed_shop_items_history@" not in typed_specs()
    code, result = run_dbt(
        ["build", *project, *no_demo, "--full-refresh", "--select", "int_history_versions+"]
    )
    assert code == 0, result.exception
    assert current_read(result)
    assert {r[0]: r for r in current_rows()} == refolded
    (spec,) = json.loads(typed_specs())
    assert spec.startswith("typed_shop_items_history@")
    land_insert(7, {"id": "4", "name": "nail", "price": "0.10", "stock": "900"})
    code, result = run_dbt(["build", *project, *no_demo])
    assert code == 0, result.exception
    assert json.loads(typed_specs()) == [spec]
    assert current_read(result)
    assert len(current_rows()) == 3

    target = tmp_path / "site"
    manifest = generate_site(target, *project, *no_demo)
    assert "model.changelake.typed_shop_items_current" in manifest["nodes"]
    with serve(target) as base:
        dom = rendered(
            f"{base}/index.html#!/model/model.changelake.typed_shop_items_history", tmp_path
        )
    assert "Every version of the shop's items, typed." in dom
    assert "Price in EUR." in dom

    # a feed's format changed under files already decoded fails the run, naming the change and
    # the fix; the full refresh it names decodes them again, and later runs pass
    config = yaml.safe_load((home / "seeds" / "changelake.yml").read_text())
    config["feeds"]["shop_canal"]["envelope_format"] = "maxwell"
    (home / "seeds" / "changelake.yml").write_text(yaml.safe_dump(config))
    decoded = ["--select", "decoded_shop_canal", *project, *no_demo]
    code, result = run_dbt(["run", *decoded])
    assert code != 0
    assert (
        "feed 'shop_canal': envelope_format 'canal' became 'maxwell' since its landed files were "
        "decoded" in _messages(result)
    )
    assert "--full-refresh --select decoded_shop_canal+" in _messages(result)
    assert run_dbt(["run", "--full-refresh", *decoded])[0] == 0
    assert run_dbt(["run", *decoded])[0] == 0
    # (Canal messages read as Maxwell: each record is now quarantined as Maxwell rejects it:
    # the six of the first files and the two inserts landed since)
    errors = spark.sql(
        f"select count(*) from {schema}.decoded_shop_canal where error_reason is not null"
    ).first()[0]
    assert errors == 8


def _messages(result) -> str:
    """Everything a dbt invocation reported: its exception and every result's message."""
    parts = [str(result.exception or "")]
    for r in getattr(result.result, "results", None) or []:
        parts.append(str(r.message or ""))
    return "\n".join(parts)
