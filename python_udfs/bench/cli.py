"""``changelake bench``: every section in order, then the page and its results file."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from python_udfs import runtime
from python_udfs.bench.age import age_bench
from python_udfs.bench.decode import (
    decode_bench,
    per_format_bench,
    python_breakdown,
    schemaless_lines,
)
from python_udfs.bench.large import LARGE_FILE_BYTES, large_file_bench
from python_udfs.bench.peer import peer_bench
from python_udfs.bench.pipeline import generate, pipeline_bench
from python_udfs.bench.report import machine, page


def run(
    spark: Any,
    work: Path,
    events: int,
    rounds: int,
    age_runs: int = 50,
    age_increment: int = 2_000,
    tenth: bool = True,
    large_file_sizes: tuple[int, ...] = LARGE_FILE_BYTES,
) -> dict[str, Any]:
    """Every measurement, in order; returns the results ``render`` formats. ``tenth=False``
    leaves out the pipeline at a tenth of the size (the smoke test's shortcut)."""
    work.mkdir(parents=True, exist_ok=True)
    pg = work / "decode-pg"
    generate(pg, events=events, keys=max(50, events // 20), batches=1, feeds=["pg_inventory"])
    pg_files = sorted(str(p) for p in pg.glob("batch-*/pg_inventory/pg_server.public.*"))
    record_bytes = sum(os.path.getsize(p) for p in pg_files) // max(1, events)
    from python_udfs.spark_udfs import decode_types

    runtime.log(f"bench: decoding {events} PostgreSQL records")
    decode = decode_bench(spark, pg_files, rounds)
    runtime.log(
        f"bench: decode floor {decode['floor']:.1f} s, native {decode['native']:.1f} s, "
        f"UDF {decode['udf']:.1f} s ({decode['udf'] / decode['native']:.2f}x native)"
    )
    arrow_type = decode_types(spark)[1]
    decode["python"] = python_breakdown(pg_files, arrow_type)
    runtime.log("bench: decoding the same records without schema blocks")
    schemaless_files = schemaless_lines(spark, pg_files, work / "decode-pg-schemaless")
    schemaless = decode_bench(spark, schemaless_files, rounds, False)
    schemaless["python"] = python_breakdown(schemaless_files, arrow_type)
    runtime.log(
        f"bench: schemaless: native {schemaless['native']:.1f} s, UDF {schemaless['udf']:.1f} s "
        f"({schemaless['udf'] / schemaless['native']:.2f}x native)"
    )
    shutil.rmtree(pg, ignore_errors=True)
    shutil.rmtree(work / "decode-pg-schemaless", ignore_errors=True)
    results: dict[str, Any] = {
        "machine": machine(spark),
        "date": time.strftime("%Y-%m-%d"),
        "events": events,
        "rounds": rounds,
        "record_bytes": record_bytes,
        "decode": decode,
        "decode_schemaless": schemaless,
        "pipeline": [],
    }
    sizes = ((max(1000, events // 10), "tenth"), (events, "full"))
    for size, label in sizes if tenth else sizes[1:]:
        runtime.log(f"bench: pipeline over {size} changes")
        p = pipeline_bench(spark, work, size, label)
        results["pipeline"].append(p)
        runtime.log(
            f"bench: {size} changes: first build {p['first_build']:.1f} s, +1% "
            f"{p['incremental']:.1f} s, full refresh {p['full_refresh']:.1f} s "
            f"({p['incremental'] / p['full_refresh']:.2f}), accounting {p['accounting_test']:.1f} s"
        )
    # the peer on one PostgreSQL feed: 5,000 changes (a small build's fixed cost), a tenth, all
    peer_sizes = sorted({5_000, max(1000, events // 10), events}) if tenth else [min(events, 5_000)]
    for size in peer_sizes:
        runtime.log(f"bench: against the Spark SQL a user would write, {size} changes")
        p = peer_bench(spark, work, size, rounds)
        results.setdefault("peer", []).append(p)
        runtime.log(
            f"bench: {size} changes: dbt run --full-refresh {p['run']:.1f} s, dbt build "
            f"--full-refresh {p['build']:.1f} s, the peer {p['peer']:.1f} s "
            f"({p['run'] / p['peer']:.1f}x, {p['build'] / p['peer']:.1f}x)"
        )
    runtime.log("bench: decode per feed")
    results["per_format"] = per_format_bench(spark, work / "data-full", rounds)
    rates = [f"{f['feed']} {f['records'] / f['seconds']:,.0f}" for f in results["per_format"]]
    runtime.log("bench: decode per feed, records/s: " + ", ".join(rates))
    runtime.log("bench: large landed files")
    results["large_files"] = large_file_bench(spark, work, large_file_sizes)
    for f in results["large_files"]:
        runtime.log(
            f"bench: a {f['bytes'] / 2**20:,.0f} MiB {f['shape']} file: {f['seconds']:.1f} s, "
            f"heap peak {f['heap_peak'] / 2**20:,.0f} MiB, lines and offsets exact: {f['exact']}"
        )
    if age_runs:
        runtime.log(f"bench: {age_runs} runs of {age_increment} changes each")
        results["age"] = age_bench(spark, work, age_runs, age_increment)
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="changelake bench", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="changes (default 1M)")
    parser.add_argument("--large", action="store_true", help="10M changes")
    parser.add_argument("--rounds", type=int, default=3, help="decode rounds (medians)")
    parser.add_argument("--age-runs", type=int, default=50, help="runs of the age section")
    parser.add_argument(
        "--age-increment", type=int, default=2_000, help="changes landed before each age run"
    )
    parser.add_argument(
        "--write-docs",
        action="store_true",
        help="write docs/benchmark.md and the run's results file under docs/benchmark/",
    )
    parser.add_argument(
        "--render",
        metavar="RESULTS",
        type=Path,
        help="measure nothing: render the page of a run's results file (docs/benchmark/*.json)",
    )
    opts = parser.parse_args(argv)
    events = 10_000_000 if opts.large else opts.events
    from python_udfs.project import RUNTIME

    home = runtime.project_dir()
    if opts.render:
        results = json.loads(opts.render.read_text())
        show_page(results, home / "docs", opts.write_docs, opts.render)
        return 0
    os.environ.setdefault("CHANGELAKE_HOME", str(home))
    RUNTIME.start(home, home / "profiles", os.environ.get("DBT_TARGET"))
    work = runtime.state_dir(home) / "bench"
    results = run(RUNTIME.session, work, events, opts.rounds, opts.age_runs, opts.age_increment)
    results["commit"] = _commit(home)
    # the measurements as they are, kept before rendering (a failed render loses none)
    saved = runtime.state_dir(home) / "bench-results.json"
    saved.write_text(json.dumps(results, indent=1, default=str))
    print(f"wrote the measurements to {saved}")
    kept = None
    if opts.write_docs:
        kept = write_results(home / "docs", results)
    show_page(results, home / "docs", opts.write_docs, kept or saved)
    shutil.rmtree(work, ignore_errors=True)
    return 0


def _commit(home: Path) -> str:
    """The checkout's short commit, with ``+`` when it has uncommitted changes; ``unknown``
    outside a git checkout."""

    def git(*args: str) -> str:
        command = ["git", "-C", str(home), *args]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()

    try:
        head = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+" if dirty else "")


def write_results(docs: Path, results: dict[str, Any]) -> Path:
    """Keep a run's measurements as ``docs/benchmark/<date>-<commit>.json``; return its path."""
    folder = docs / "benchmark"
    folder.mkdir(parents=True, exist_ok=True)
    name = f"{results['date']}-{results.get('commit', 'unknown').replace('+', '-dirty')}.json"
    path = folder / name
    path.write_text(json.dumps(results, indent=1, default=str) + "\n")
    return path


def show_page(results: dict[str, Any], docs: Path, write: bool, source: Path) -> None:
    """Print the page and, with ``write``, write it to ``docs/benchmark.md``."""
    text = page(results, source.name if write else str(source))
    print(text)
    if write:
        docs.mkdir(parents=True, exist_ok=True)
        (docs / "benchmark.md").write_text(text)
