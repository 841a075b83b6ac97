"""The history store's version columns are declared twice, in the fold's Python
(``scd2.VERSION_FIELDS``, the UDF's return type) and in the store's macros
(macros/history/columns.sql, the table's columns): rendered here, the two must agree."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jinja2
import pytest

from python_udfs.scd2 import VERSION_FIELDS

COLUMNS_SQL = Path(__file__).resolve().parents[3] / "macros" / "history" / "columns.sql"


class _Returned(Exception):
    def __init__(self, value: Any) -> None:
        self.value = value


def _return(value: Any) -> None:
    raise _Returned(value)


@pytest.fixture(scope="module")
def macros():
    """The macros of columns.sql, callable: each gives what its dbt `return` gives.

    As in dbt, a macro's `return` ends that macro alone: each is defined under another name
    (`defined_<name>`) and its name is a global that calls it and catches its return."""
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    env.globals["return"] = _return
    source = COLUMNS_SQL.read_text()
    names = re.findall(r"{%-?\s*macro\s+(\w+)", source)
    source = re.sub(r"({%-?\s*macro\s+)(\w+)", r"\1defined_\2", source)
    loaded: dict[str, Any] = {}

    def wrapped(name: str) -> Any:
        def call(*args: Any) -> Any:
            try:
                getattr(loaded["module"], f"defined_{name}")(*args)
            except _Returned as returned:
                return returned.value
            raise AssertionError(f"{name} returned nothing")

        return call

    for name in names:
        env.globals[name] = wrapped(name)
    loaded["module"] = env.from_string(source).module
    return lambda name, *args: env.globals[name](*args)


def test_the_store_declares_the_folds_version_columns_in_order(macros):
    assert macros("changelake_version_columns") == [name for name, _ in VERSION_FIELDS]


def test_each_version_column_has_the_folds_type(macros):
    declared = {name: macros("changelake_version_type", name) for name, _ in VERSION_FIELDS}
    assert declared == dict(VERSION_FIELDS)


def test_the_frontier_state_type_is_the_folds_version_struct(macros):
    fields = ", ".join(f"{name}: {kind}" for name, kind in VERSION_FIELDS)
    assert macros("changelake_state_type") == f"struct<{fields}>"
