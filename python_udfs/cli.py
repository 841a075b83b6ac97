"""The ``changelake`` console script.

``changelake dbt <dbt arguments>``
    Start the SparkSession for the profile target dbt will use, register every ChangeLake UDF
    on it, then run dbt in-process (``dbtRunner``) with the arguments unchanged. The exit code
    is dbt's. ``--project-dir`` and ``--profiles-dir`` default to this project, so it works
    from any working directory.
``changelake land FEED PATH... [--landing-root ROOT]``
    Copy landed files (or every file of a folder) into a feed's landing folder, atomically:
    each file is written under a hidden name and renamed, so a run never reads half a file.
``changelake bench [--events N | --large] [--rounds R] [--write-readme]``
    The benchmark: decode UDF vs native Spark, end to end, incremental, memory (see
    :mod:`python_udfs.bench`).
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
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from python_udfs import runtime

# dbt commands that never touch the warehouse: no Spark session, no lock.
NO_SPARK_COMMANDS = {"parse", "ls", "list", "clean", "deps", "init", "--version", "--help", "-h"}


def _option(args: Sequence[str], *names: str) -> str | None:
    """The value of a dbt option given as ``--name value`` or ``--name=value``; last one wins."""
    found = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                found = args[i + 1]
            elif arg.startswith(name + "="):
                found = arg.split("=", 1)[1]
    return found


def _subcommand(args: Sequence[str]) -> str | None:
    return next((a for a in args if not a.startswith("-") or a in NO_SPARK_COMMANDS), None)


class Runtime:
    """One process's Spark session, metastore lock and dbt runner, reused across dbt calls."""

    def __init__(self) -> None:
        self.session: Any = None
        self.lock: runtime.MetastoreLock | None = None

    def start(self, home: Path, profiles_dir: Path, target_name: str | None) -> Any:
        if self.session is not None:
            return self.session
        os.environ["CHANGELAKE_STATE_DIR"] = str(runtime.state_dir(home))
        target = runtime.load_target(profiles_dir, target_name)
        if target.uses_embedded_metastore:
            self.lock = runtime.MetastoreLock(runtime.state_dir(home))
            self.lock.acquire()
        self.session = runtime.spark_session(target, home)
        if self.lock is not None:
            for folder in runtime.remove_killed_write_folders(self.session, target.schema):
                runtime.log(f"removed the remains of a killed write: {folder}")
        from python_udfs import register_udfs

        names = register_udfs(self.session)
        facts = runtime.describe(self.session)
        runtime.log(
            f"Spark {facts['version']} target '{target.name}' master {facts['master']}; "
            f"registered UDFs: {', '.join(names)}"
        )
        return self.session

    def stop(self) -> None:
        if self.session is not None:
            self.session.stop()
            self.session = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None


RUNTIME = Runtime()


def with_defaults(args: Sequence[str], home: Path) -> list[str]:
    """Add ``--project-dir``/``--profiles-dir`` pointing at this project when not given."""
    out = list(args)
    sub = _subcommand(out)
    if sub in (None, "--version", "--help", "-h", "init"):
        return out
    if _option(out, "--project-dir") is None and not os.environ.get("DBT_PROJECT_DIR"):
        out += ["--project-dir", str(home)]
    if _option(out, "--profiles-dir") is None and not os.environ.get("DBT_PROFILES_DIR"):
        out += ["--profiles-dir", str(home / "profiles")]
    return out


def run_dbt(args: Sequence[str]) -> tuple[int, Any]:
    """Run one dbt command in-process on the shared session; return (exit code, dbt result)."""
    from dbt.cli.main import dbtRunner

    project = _option(args, "--project-dir") or os.environ.get("DBT_PROJECT_DIR")
    home = Path(project).resolve() if project else runtime.project_dir()
    os.environ["CHANGELAKE_HOME"] = str(home)
    full = with_defaults(args, home)
    if _subcommand(full) not in NO_SPARK_COMMANDS:
        profiles = _option(full, "--profiles-dir") or os.environ["DBT_PROFILES_DIR"]
        target = _option(full, "--target", "-t") or os.environ.get("DBT_TARGET")
        RUNTIME.start(home, Path(profiles), target)
    result = dbtRunner().invoke(full)
    if result.exception is not None:
        # dbt's own CLI prints usage errors and crashes; in-process they come back as objects.
        runtime.log(f"dbt: {type(result.exception).__name__}: {result.exception}")
        return 2, result
    return (0 if result.success else 1), result


def _summarise(result: Any) -> list[tuple[str, str, str]]:
    """(node, status, message) for each node dbt ran."""
    rows = []
    for node_result in getattr(result.result, "results", None) or []:
        node = node_result.node
        rows.append((node.resource_type, node.name, str(node_result.status)))
    return rows


SOURCES_YML = Path("models") / "staging" / "landing" / "_landing__sources.yml"


def feed_paths(home: Path) -> dict[str, str]:
    """Feed name -> folder under the landing root, from the `landing` source's configuration."""
    import yaml

    doc = yaml.safe_load((home / SOURCES_YML).read_text())
    source = next(s for s in doc["sources"] if s["name"] == "landing")
    return {t["name"]: (t.get("meta") or {}).get("path", t["name"]) for t in source["tables"]}


def landing_root(home: Path) -> str:
    return os.environ.get("CHANGELAKE_LANDING_ROOT") or str(runtime.state_dir(home) / "landing")


def land_files(feed: str, sources: Sequence[Path], root: str, home: Path) -> list[Path]:
    """Copy ``sources`` (files, or folders of files) into ``feed``'s folder under ``root``."""
    paths = feed_paths(home)
    if feed not in paths:
        raise runtime.ChangeLakeError(
            f"no feed {feed!r} in {SOURCES_YML}; feeds: {', '.join(sorted(paths))}"
        )
    if "://" in root and not root.startswith("file://"):
        raise runtime.ChangeLakeError(
            f"`changelake land` copies to local folders; {root} is landed by its producers"
        )
    dest = Path(root.removeprefix("file://")) / paths[feed]
    dest.mkdir(parents=True, exist_ok=True)
    files = []
    for source in sources:
        if source.is_dir():
            files += sorted(p for p in source.rglob("*") if p.is_file())
        elif source.is_file():
            files.append(source)
        else:
            raise runtime.ChangeLakeError(f"nothing to land at {source}")
    landed = []
    for file in files:
        target = dest / file.name
        # Spark ignores files whose names start with '.': the copy is invisible until renamed
        hidden = dest / f".{file.name}.landing"
        shutil.copy2(file, hidden)
        os.replace(hidden, target)
        landed.append(target)
    return landed


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
    for path in land_files(opts.feed, opts.paths, root, home):
        print(f"landed {path}")
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
    summary = generator.generate(out, opts.events, opts.keys, opts.batches, opts.seed)
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
        print(f"landed {', '.join(b.name for b in group)} into {root}; building")
        args = ["build"] + (["--full-refresh"] if opts.fresh and step == 0 else [])
        code, result = run_dbt(args)
        if code != 0:
            break
    if result is not None and result.result is not None:
        print("\nbuilt:")
        for resource_type, name, status in _summarise(result):
            print(f"  {resource_type:<10} {name:<40} {status}")
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
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    try:
        if command == "dbt":
            return run_dbt(rest)[0]
        if command == "demo":
            return demo(rest)
        if command == "land":
            return land(rest)
        if command == "bench":
            from python_udfs import bench

            return bench.main(rest)
        if command == "generate":
            from python_udfs import generator

            return generator.main(rest)
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
