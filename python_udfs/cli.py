"""The ``changelake`` console script.

``changelake dbt <dbt arguments>``
    Start the SparkSession for the profile target dbt will use, register every ChangeLake UDF
    on it, then run dbt in-process (``dbtRunner``) with the arguments unchanged. The exit code
    is dbt's. ``--project-dir`` and ``--profiles-dir`` default to this project, so it works
    from any working directory.
``changelake server start [--port N] | stop | status``
    A local Spark Connect server on 127.0.0.1 over the embedded metastore and warehouse: while
    it runs, ``changelake dbt`` (without ``--target``) uses it and skips the JVM start (see
    :mod:`python_udfs.server`).
``changelake land FEED PATH... [--landing-root ROOT]``
    Copy landed files (or every file of a folder) into a feed's landing folder, atomically:
    each file is written under a hidden name and renamed, so a run never reads half a file.
``changelake bench [--events N | --large] [--rounds R] [--write-docs]``
    The benchmark: decode UDF vs native Spark, end to end, incremental, memory (see
    :mod:`python_udfs.bench`).
``changelake models [--vars '{changelake_demo: false}']``
    Write the dbt files of the feeds and typed tables configured in seeds/changelake.yml (and
    the demo's, while the dbt var changelake_demo is true); ``changelake dbt`` does it first.
``changelake layout-docs``
    Regenerate the docs of the common layout's columns (models/_layout__docs.md).
``changelake generate --out DIR [--events N --keys K --batches B --seed S]``
    Write the demo data generator's landing batches and expected state (see
    :mod:`python_udfs.generator`).
``changelake demo [--events N --keys K --batches B --seed S --fresh]``
    Generate the demo feeds, land them in batches, build every model on the embedded target
    after the first batch and after the rest, print what was built and whether the history
    matches the generator's expected state (exit 1 if not).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from python_udfs import runtime
from python_udfs.project import RUNTIME, land_files, landing_root, run_dbt


def _summarise(result: Any) -> str:
    """What dbt ran, in one line: nodes by type, then by status ("31 models, 24 tests: 55 ok")."""
    kinds: dict[str, int] = {}
    statuses: dict[str, int] = {}
    for node_result in getattr(result.result, "results", None) or []:
        kind = str(node_result.node.resource_type).split(".")[-1].lower()
        kinds[kind] = kinds.get(kind, 0) + 1
        status = str(node_result.status).split(".")[-1].lower()
        status = {"success": "ok", "pass": "ok"}.get(status, status)
        statuses[status] = statuses.get(status, 0) + 1
    nodes = ", ".join(f"{n} {k}{'s' if n != 1 else ''}" for k, n in sorted(kinds.items()))
    return f"{nodes}: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()))


def land(argv: Sequence[str]) -> int:
    """Copy files into a feed's landing folder (local landing roots)."""
    parser = argparse.ArgumentParser(prog="changelake land", description=land.__doc__)
    parser.add_argument("feed", help="feed name, as in the landing source")
    parser.add_argument("paths", nargs="+", type=Path, help="files or folders to land")
    parser.add_argument(
        "--landing-root", help="default: $CHANGELAKE_LANDING_ROOT or .changelake/landing"
    )
    opts = parser.parse_args(argv)
    home = runtime.project_dir()
    root = opts.landing_root or landing_root(home)
    landed = land_files(opts.feed, opts.paths, root, home)
    size = sum(path.stat().st_size for path in landed)
    folders = sorted({str(path.parent) for path in landed})
    print(f"landed {len(landed)} file(s), {size / 2**20:,.1f} MiB, into {', '.join(folders)}")
    return 0


def demo(argv: Sequence[str]) -> int:
    """Generate the inventory world's feeds, land them batch by batch, build every model after
    the first batch and again after the rest, print what was built and whether the history
    matches the generator's expected state."""
    from python_udfs import generator

    parser = argparse.ArgumentParser(prog="changelake demo", description=demo.__doc__)
    parser.add_argument("--events", type=int, default=20_000, help="row changes in all")
    parser.add_argument("--keys", type=int, default=200, help="snapshot rows per table")
    parser.add_argument("--batches", type=int, default=3, help="landing batches")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--fresh", action="store_true", help="rebuild every table from scratch")
    opts = parser.parse_args(argv)
    home = runtime.project_dir()
    root = landing_root(home)
    os.environ["CHANGELAKE_LANDING_ROOT"] = root
    out = (
        runtime.state_dir(home)
        / "generated"
        / (f"seed{opts.seed}-events{opts.events}-keys{opts.keys}-batches{opts.batches}")
    )
    summary = generator.generate(
        out, opts.events, opts.keys, opts.batches, opts.seed, progress=runtime.log
    )
    print(
        f"generated {opts.events} changes over {len(summary['feeds'])} feeds in "
        f"{opts.batches} batches (seed {opts.seed}) into {out}"
    )
    # the formats the generator does not speak land their bundled examples
    bundled = Path(__file__).resolve().parent / "demo_data" / "landing"
    for feed in EXAMPLE_ONLY_FEEDS:
        land_files(feed, [bundled / feed], root, home)
    folders = generator.batch_folders(out)
    code, result = 0, None
    for step, group in enumerate((folders[:1], folders[1:])):
        if not group:
            continue
        for batch in group:
            for feed_dir in sorted(p for p in batch.iterdir() if p.is_dir()):
                land_files(feed_dir.name, [feed_dir], root, home)
        fresh = opts.fresh and step == 0
        print(
            f"landed {', '.join(b.name for b in group)} into {root}; "
            f"building {'from scratch' if fresh else 'incrementally'} ...",
            flush=True,
        )
        # dbt's line per node goes to logs/dbt.log; errors still reach the terminal
        started = time.monotonic()
        code, result = run_dbt(["build", "--quiet"] + (["--full-refresh"] if fresh else []))
        if result is not None and result.result is not None:
            print(
                f"built in {time.monotonic() - started:.0f} s: {_summarise(result)} "
                f"(each node: logs/dbt.log)",
                flush=True,
            )
        if code != 0:
            break
    if code == 0:
        print_summary()
        code = print_expected(summary)
    return code


# feeds whose demo data are the bundled format examples (not generated)
EXAMPLE_ONLY_FEEDS = ("maxwell_inventory", "ogg_inventory")


def print_expected(summary: dict[str, Any]) -> int:
    """Print the generator's expected state against the built history; 0 when all match."""
    from python_udfs import generator

    schema = os.environ.get("CHANGELAKE_SCHEMA", "changelake")
    report = generator.compare(RUNTIME.session, schema, summary)
    print(
        "\n{:<22} {:<36} {:>14} {:>14}  {}".format(
            "feed", "table", "live rows", "versions", "expected state"
        )
    )
    for r in report:
        rows = f"{r['rows_built']}/{r['rows_expected']}"
        versions = f"{r['versions_built']}/{r['versions_expected']}"
        verdict = "matched" if r["matched"] else f"DIFFERS at {', '.join(r['differing_keys'])}"
        print(f"{r['feed']:<22} {r['table']:<36} {rows:>14} {versions:>14}  {verdict}")
    failed = [r for r in report if not r["matched"]]
    if failed:
        print(f"\nexpected state: {len(failed)} of {len(report)} tables differ (built/expected)")
        return 1
    print(f"\nexpected state: matched in all {len(report)} tables (built/expected)")
    return 0


def print_summary() -> None:
    """Print, per feed, what landed and where it went (from cdc_feed_health)."""
    session = RUNTIME.session
    schema = os.environ.get("CHANGELAKE_SCHEMA", "changelake")
    rows = session.sql(
        f"select feed, records_landed, changes_logged, schema_changes, records_quarantined, "
        f"heartbeats + tombstones + transaction_markers + messages as filtered "
        f"from {schema}.cdc_feed_health order by feed"
    ).collect()
    header = ("feed", "records", "changes", "ddl", "filtered", "quarantined")
    print("\n{:<24} {:>8} {:>8} {:>5} {:>9} {:>12}".format(*header))
    for r in rows:
        print(
            f"{r.feed:<24} {r.records_landed:>8} {r.changes_logged:>8} {r.schema_changes:>5} "
            f"{r.filtered:>9} {r.records_quarantined:>12}"
        )
    totals = session.sql(
        f"select (select count(*) from {schema}.cdc_change_log) as changes, "
        f"(select count(*) from {schema}.cdc_quarantine) as quarantined, "
        f"(select count(*) from {schema}.cdc_schema_changes) as ddl"
    ).first()
    print(
        f"\ncdc_change_log: {totals.changes} changes; cdc_schema_changes: {totals.ddl}; "
        f"cdc_quarantine: {totals.quarantined} records (see error_reason)"
    )
    tables = session.sql(
        f"select feed, concat_ws('.', database_name, schema_name, table_name) as source_table, "
        f"count(*) as versions, count_if(is_current) as current_rows "
        f"from {schema}.cdc_history group by 1, 2 order by 1, 2"
    ).collect()
    print("\n{:<24} {:<36} {:>9} {:>13}".format("feed", "table", "versions", "current rows"))
    for t in tables:
        print(f"{t.feed:<24} {t.source_table:<36} {t.versions:>9} {t.current_rows:>13}")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        # the module docstring as plain text: no reStructuredText marks
        print(re.sub(r":mod:`([^`]+)`", r"\1", __doc__).replace("``", "`").strip())
        return 0
    command, rest = argv[0], argv[1:]
    try:
        if command == "dbt":
            return run_dbt(rest)[0]
        if command == "demo":
            return demo(rest)
        if command == "land":
            return land(rest)
        if command == "server":
            from python_udfs import server

            return server.main(rest)
        if command == "bench":
            from python_udfs import bench

            return bench.main(rest)
        if command == "generate":
            from python_udfs import generator

            return generator.main(rest)
        if command == "models":
            from python_udfs import models

            home = runtime.project_dir()
            changes = models.sync(home, dbt_args=rest)
            print("\n".join(changes) or "the model files match the configuration")
            return 0
        if command == "layout-docs":
            from python_udfs.layout import docs_markdown

            target = runtime.project_dir() / "models" / "_layout__docs.md"
            target.write_text(docs_markdown())
            print(f"wrote {target}")
            return 0
    except runtime.ChangeLakeError as exc:
        runtime.log(f"error: {exc}")
        return 2
    finally:
        RUNTIME.stop()
    print(f"changelake: unknown command {command!r}; see `changelake --help`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
