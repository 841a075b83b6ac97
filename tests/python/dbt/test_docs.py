"""The docs site is a product: every source, model and column described, the layout's docs
generated from the layout itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from python_udfs.layout import docs_markdown

PROJECT = Path(__file__).resolve().parents[3]


def test_layout_docs_are_generated_from_the_layout():
    committed = (PROJECT / "models" / "_layout__docs.md").read_text()
    assert committed == docs_markdown(), "run `changelake layout-docs`"


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    from python_udfs.project import run_dbt

    target = tmp_path_factory.mktemp("parse")
    code, _ = run_dbt(["parse", "--target-path", str(target)])
    assert code == 0
    return json.loads((target / "manifest.json").read_text())


def test_every_model_source_and_column_is_described(manifest):
    undescribed = []
    for node in [*manifest["nodes"].values(), *manifest["sources"].values()]:
        if node["resource_type"] not in ("model", "source") or node["package_name"] != "changelake":
            continue
        if not node["description"].strip():
            undescribed.append(node["unique_id"])
        undescribed += [
            f"{node['unique_id']}.{name}"
            for name, column in node["columns"].items()
            if not column["description"].strip()
        ]
        if node["resource_type"] == "model":
            assert node["columns"], f"{node['unique_id']} lists no columns"
    assert undescribed == []


def test_public_models_have_key_tests(manifest):
    """The change log's keys are data tests; the views recomputed from every decoded record on
    each read have unit tests of what their SQL guarantees (off in scheduled builds, so dbt
    lists them as disabled until the var turns them on)."""
    data_tested = {
        node["attached_node"]
        for node in manifest["nodes"].values()
        if node["resource_type"] == "test" and node.get("attached_node")
    }
    assert "model.changelake.cdc_change_log" in data_tested
    unit_tested = {
        node["model"]
        for nodes in [[*manifest["unit_tests"].values()], *manifest["disabled"].values()]
        for node in nodes
        if node["resource_type"] == "unit_test"
    }
    for model in ("cdc_schema_changes", "cdc_feed_health", "cdc_quarantine"):
        assert model in unit_tested, model
