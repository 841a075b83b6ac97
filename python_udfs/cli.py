"""The ``changelake`` console script.

``changelake dbt <dbt arguments>``
    Start the SparkSession for the profile target dbt will use, register every ChangeLake UDF
    on it, then run dbt in-process (``dbtRunner``) with the arguments unchanged. The exit code
    is dbt's. ``--project-dir`` and ``--profiles-dir`` default to this project, so it works
    from any working directory.
``changelake demo``
    Land the bundled demo feeds and build every model on the embedded target, then print what
    was built.
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


def demo(argv: Sequence[str]) -> int:
    """Land the bundled demo feeds, build every model, print what was built."""
    parser = argparse.ArgumentParser(prog="changelake demo", description=demo.__doc__)
    parser.add_argument("--fresh", action="store_true", help="drop built tables first")
    opts = parser.parse_args(argv)
    home = runtime.project_dir()
    state = runtime.state_dir(home)
    landing = Path(os.environ.setdefault("CHANGELAKE_LANDING_ROOT", str(state / "landing")))
    bundled = Path(__file__).resolve().parent / "demo_data" / "landing"
    for feed_dir in sorted(p for p in bundled.iterdir() if p.is_dir()):
        dest = landing / feed_dir.name
        dest.mkdir(parents=True, exist_ok=True)
        for file in sorted(feed_dir.iterdir()):
            shutil.copy2(file, dest / file.name)
    print(f"landed demo feeds from {bundled} into {landing}")
    args = ["build"] + (["--full-refresh"] if opts.fresh else [])
    code, result = run_dbt(args)
    if result.result is not None:
        print("\nbuilt:")
        for resource_type, name, status in _summarise(result):
            print(f"  {resource_type:<10} {name:<40} {status}")
    if code == 0:
        print_counts()
    return code


def print_counts() -> None:
    """Print row counts of the public tables and of decoded records per feed and kind."""
    session = RUNTIME.session
    schema = os.environ.get("CHANGELAKE_SCHEMA", "changelake")
    print("\nrow counts:")
    for row in session.sql(f"show tables in {schema}").collect():
        if row.isTemporary:
            continue
        name = row.tableName
        count = session.sql(f"select count(*) as n from {schema}.{name}").collect()[0].n
        print(f"  {schema}.{name:<40} {count:>8}")


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
    except runtime.ChangeLakeError as exc:
        runtime.log(f"error: {exc}")
        return 2
    finally:
        RUNTIME.stop()
    print(f"changelake: unknown command {command!r}; see `changelake --help`", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
