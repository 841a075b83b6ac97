"""Sections 2-4: the pipeline end to end, the +1% increment, and memory."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from python_udfs import generator, runtime
from python_udfs.bench.measure import MemoryPeaks, current_against_parquet, timed


@contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def world(work: Path, landing: Path, schema: str) -> Any:
    """The environment of dbt builds of one world: its landing root, its schema, and a dbt
    target folder of its own, where dbt keeps the project it parsed for that schema (one folder
    for every world would be parsed again, whole, at each switch between worlds)."""
    return environment(
        CHANGELAKE_LANDING_ROOT=str(landing),
        CHANGELAKE_SCHEMA=schema,
        DBT_TARGET_PATH=str(work / "dbt-targets" / schema),
    )


def dbt_command(*args: str, quiet: tuple[str, ...] = ("--quiet",)) -> Any:
    """``dbt *args`` in this process; a failure raises, naming the nodes that failed. dbt's line
    per node goes to logs/dbt.log only (``quiet``); errors still reach the terminal."""
    from python_udfs.project import run_dbt

    code, result = run_dbt([*args, *quiet])
    if code != 0:
        nodes = getattr(getattr(result, "result", None), "results", None) or []
        failures = [
            f"{r.node.name}: {str(r.message or '').strip().splitlines()[0][:300]}"
            for r in nodes
            if str(r.status) in ("error", "fail") and r.message
        ]
        detail = "; ".join(failures) or str(getattr(result, "exception", "") or "")[:300]
        raise runtime.ChangeLakeError(
            f"dbt {' '.join(args)} failed ({code}) in the benchmark: {detail}"
        )
    return result


def compiled_sql(sql: str) -> str:
    """``sql`` (Jinja using the project's macros) as dbt compiles it in the current world (not
    printed: `dbt compile --quiet` still prints the SQL it compiled)."""
    result = dbt_command("compile", "--inline", sql, quiet=("--log-level", "none"))
    return str(result.result.results[0].node.compiled_code)


def layer_of(name: str) -> str:
    for prefix, layer in (
        ("decoded_", "decode (decoded_*)"),
        ("stg_", "staging views"),
        ("int_changes", "change log (int_changes_unioned)"),
        ("int_history", "history (int_history_versions)"),
    ):
        if name.startswith(prefix):
            return layer
    return "views and tests"


def node_seconds(result: Any) -> dict[str, float]:
    """Seconds of a run's dbt nodes by layer, its data tests as one layer."""
    layers: dict[str, float] = {}
    for r in result.result.results:
        layer = "data tests" if r.node.resource_type == "test" else layer_of(r.node.name)
        layers[layer] = layers.get(layer, 0.0) + r.execution_time
    return layers


def slowest_nodes(result: Any, count: int) -> list[tuple[str, float]]:
    """The ``count`` dbt nodes of a run that took longest: (name, seconds)."""
    nodes = [(r.node.name, r.execution_time) for r in result.result.results]
    return sorted(nodes, key=lambda node: -node[1])[:count]


def model_seconds(result: Any) -> float:
    """Seconds spent building models (tests excluded), summed over dbt's nodes."""
    return sum(r.execution_time for r in result.result.results if r.node.resource_type == "model")


def generate(out: Path, **options: Any) -> dict[str, Any]:
    """Run the generator in a child process (the driver's memory then measures the pipeline
    alone) and return its summary."""
    shutil.rmtree(out, ignore_errors=True)
    args = [sys.executable, "-m", "python_udfs.cli", "generate", "--out", str(out)]
    for name, value in options.items():
        flag = f"--{name.replace('_', '-')}"
        if isinstance(value, bool):  # a switch: given when true
            args += [flag] if value else []
            continue
        args += [flag, ",".join(value) if isinstance(value, list) else str(value)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    return json.loads((out / "expected.json").read_text())


def pipeline_bench(spark: Any, work: Path, events: int, label: str) -> dict[str, Any]:
    """Build everything over ``events`` changes (99% then 1%), then refresh fully; time it."""
    from python_udfs.project import land_files

    data = work / f"data-{label}"
    summary = generate(
        data, events=events, keys=max(50, events // 200), batches=2, seed=1, last_share=0.01
    )
    landing = work / f"landing-{label}"
    shutil.rmtree(landing, ignore_errors=True)
    schema = f"bench_{label}"
    spark.sql(f"drop schema if exists {schema} cascade")
    home = runtime.project_dir()
    first, last = generator.batch_folders(data)
    result: dict[str, Any] = {"events": events, "records": 0}
    with world(work, landing, schema):
        with MemoryPeaks() as memory:
            for feed_dir in sorted(first.iterdir()):
                land_files(feed_dir.name, [feed_dir], str(landing), home)
            result["first_build"] = timed(
                lambda: dbt_command("build", "--exclude", "tag:accounting")
            )
            for feed_dir in sorted(last.iterdir()):
                land_files(feed_dir.name, [feed_dir], str(landing), home)
            start = time.perf_counter()
            incremental = dbt_command("build", "--exclude", "tag:accounting")
            result["incremental"] = time.perf_counter() - start
            result["incremental_models"] = model_seconds(incremental)
            matched = generator.compare(spark, schema, summary)
            result["matched"] = all(r["matched"] for r in matched)
            # reading all of cdc_current at this size, its store holding the +1%'s layer
            result["current_rows"], result["current_read"], result["parquet_read"] = (
                current_against_parquet(spark, schema)
            )
            start = time.perf_counter()
            full = dbt_command("build", "--full-refresh", "--exclude", "tag:accounting")
            result["full_refresh"] = time.perf_counter() - start
            result["full_models"] = model_seconds(full)
            result["accounting_test"] = timed(
                lambda: dbt_command("test", "--select", "tag:accounting")
            )
        result["layers"] = node_seconds(full)
        result["incremental_layers"] = node_seconds(incremental)
        result["incremental_slowest"] = slowest_nodes(incremental, 8)
        result["full_slowest"] = slowest_nodes(full, 8)
        result["memory"] = dict(memory.peaks)
        result["records"] = sum(f["records"] for f in summary["feeds"].values())
    spark.sql(f"drop schema if exists {schema} cascade")
    return result
