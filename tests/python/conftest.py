"""Shared fixtures: one embedded Spark session and one Derby metastore for the whole run.

A Spark JVM takes 5-15 s to start and a cold dbt run 15-25 s; on the warm session a dbt
invocation takes about a second. So the suite starts one session (through the same
``changelake`` runtime users run) on a temporary state folder, and every dbt test reuses it.
Run in parallel (``pytest -n 2``, as ``make test`` does), each worker process has a session,
a state folder and a dbt target folder of its own.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = PROJECT.parent / "shared"


def pytest_configure(config: pytest.Config) -> None:
    """The run's random seed for the generated-world test, drawn once (its id shows it)."""
    seed = os.environ.get("CHANGELAKE_TEST_SEED") or random.SystemRandom().randrange(10**6)
    os.environ["CHANGELAKE_TEST_SEED"] = str(seed)


# what the tests of each folder may use: unit/ runs without Spark, spark/ starts a session,
# dbt/ runs dbt (most of them on that session); a test's folder gives its marker
FOLDER_MARKERS = {"unit": None, "spark": "spark", "dbt": "dbt"}
NEEDS_SPARK = {"spark", "dbt", "dbt_targets"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test marked by its folder (``-m "not spark and not dbt"`` is the unit tests), and a
    unit test asking for a Spark session refused at collection.

    Then tests marked ``long(minutes)`` first, longest first (``minutes``: about what the test
    takes alone): parallel workers take them in turn and end on short tests together, rather
    than one worker ending on a long test alone. (`make test` hands tests out one at a time,
    `--maxschedchunk 1`: in larger chunks, the first worker would get every long test.)"""
    for item in items:
        path = Path(str(item.path)).resolve()
        if PROJECT / "python_udfs" in path.parents:
            continue  # the package's doctests: pure, like unit/
        folder = path.relative_to(Path(__file__).resolve().parent).parts[0]
        if folder not in FOLDER_MARKERS:
            raise pytest.UsageError(f"{path}: a test belongs in unit/, spark/ or dbt/")
        if FOLDER_MARKERS[folder]:
            item.add_marker(FOLDER_MARKERS[folder])
        elif NEEDS_SPARK & set(getattr(item, "fixturenames", ())):
            raise pytest.UsageError(f"{item.nodeid}: a unit test cannot use a Spark session")

    def minutes(item: pytest.Item) -> int:
        mark = item.get_closest_marker("long")
        return mark.args[0] if mark else 0

    items.sort(key=minutes, reverse=True)


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A private metastore/warehouse/landing folder for this test run."""
    return tmp_path_factory.mktemp("changelake-state")


@pytest.fixture(scope="session")
def spark(state_dir: Path) -> Iterator[Any]:
    """The embedded SparkSession, started once by the changelake runtime, UDFs registered."""
    from python_udfs.project import RUNTIME

    os.environ["CHANGELAKE_HOME"] = str(PROJECT)
    os.environ["CHANGELAKE_STATE_DIR"] = str(state_dir)
    os.environ["CHANGELAKE_SHUFFLE_PARTITIONS"] = "2"
    # dbt's target folder for calls that name none: this process's, not the project's `target/`
    # (which parallel workers would share)
    os.environ.setdefault("DBT_TARGET_PATH", str(state_dir / "dbt-target"))
    session = RUNTIME.start(PROJECT, PROJECT / "profiles", "local")
    yield session
    RUNTIME.stop()


def dbt_target_path(root: Path, schema: str, args: Sequence[str]) -> Path:
    """A dbt target folder under ``root`` for builds of ``schema`` with the command-line vars
    in ``args``. dbt keeps its parsed project there and parses the whole project again (~4 s)
    when the profile's schema or the vars differ from what it kept: one folder per pair keeps
    partial parsing when a test switches between worlds or vars and back."""
    parts = [schema] + [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--vars"]
    return root / hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


class Dbt:
    """Runs dbt in-process on the shared session against a landing root of the test's own."""

    def __init__(self, landing_root: Path, schema: str, targets: Path) -> None:
        self.landing_root = landing_root
        self.schema = schema
        self.targets = targets
        self.target_path = PROJECT / "target"  # of the last call

    def __call__(self, *args: str) -> Any:
        code, result = self.attempt(*args)
        assert code == 0, f"dbt {' '.join(args)} exited {code}: {result.exception or ''}"
        return result

    def attempt(self, *args: str) -> tuple[int, Any]:
        """Run dbt as ``__call__`` does; return its exit code and result, whatever they are."""
        from python_udfs.project import run_dbt

        os.environ["CHANGELAKE_LANDING_ROOT"] = str(self.landing_root)
        os.environ["CHANGELAKE_SCHEMA"] = self.schema
        self.target_path = dbt_target_path(self.targets, self.schema, args)
        # this call's alone: other projects (copies of this one) and subprocesses keep theirs
        saved = os.environ.get("DBT_TARGET_PATH")
        os.environ["DBT_TARGET_PATH"] = str(self.target_path)
        try:
            return run_dbt(list(args))
        finally:
            if saved is None:
                del os.environ["DBT_TARGET_PATH"]
            else:
                os.environ["DBT_TARGET_PATH"] = saved

    def land(self, feed: str, source: Path) -> Path:
        """Copy a landing file into ``<landing_root>/<feed>/`` as a connector would."""
        dest = self.landing_root / feed
        dest.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(source, dest / source.name))


@pytest.fixture(scope="session")
def dbt_targets(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dbt target folders of the suite's in-process builds (see ``dbt_target_path``)."""
    return tmp_path_factory.mktemp("dbt-targets")


@pytest.fixture
def dbt(spark: Any, tmp_path: Path, dbt_targets: Path) -> Dbt:
    """A dbt runner with a fresh landing root and a fresh target schema. Every test's world
    has the same schema name, dropped first: dbt's parsed project (in the target folder of that
    schema) then serves the next test's builds too, without parsing it again."""
    schema = "t_world"
    spark.sql(f"drop schema if exists {schema} cascade")
    return Dbt(tmp_path / "landing", schema, dbt_targets)


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared`` beside the project; tests that read it skip with a reason if absent."""
    if not SHARED.is_dir():
        pytest.skip(f"shared/ not found at {SHARED}: conformance inputs unavailable")
    return SHARED


def tables_scanned(spark: Any, compiled: Path) -> Counter[str]:
    """How often the query dbt compiled into ``compiled`` scans each table, run again: counted
    in the physical plan as it ran (adaptive query stages entered, reused exchanges not: they
    read nothing again; a branch Spark dropped at run time, unread, not at all)."""
    query = spark.sql(compiled.read_text())
    query.collect()
    tables: list[str] = []

    def walk(node: Any) -> None:
        kind = node.getClass().getSimpleName()
        if kind == "AdaptiveSparkPlanExec":
            return walk(node.executedPlan())
        if kind.endswith("QueryStageExec"):
            return walk(node.plan())
        if kind == "ReusedExchangeExec":
            return None
        if kind == "FileSourceScanExec":
            tables.append(node.tableIdentifier().get().table())
        children = node.children()
        for index in range(children.size()):
            walk(children.apply(index))
        return None

    walk(query._jdf.queryExecution().executedPlan())
    return Counter(tables)
