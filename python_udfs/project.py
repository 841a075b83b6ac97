"""The dbt project on a Spark session, shared by the ``changelake`` commands and the benchmark.

One process holds one Spark session (and, on the embedded target, the metastore lock) in
:data:`RUNTIME`; :func:`run_dbt` runs dbt in-process on it, so a second dbt call costs about a
second instead of a JVM start. :func:`land_files` copies files into a feed's landing folder.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from python_udfs import models, runtime
from python_udfs.server import running

# dbt commands that never touch the warehouse: no Spark session, no lock.
NO_SPARK_COMMANDS = {"parse", "ls", "list", "clean", "deps", "init", "--version", "--help", "-h"}
# dbt commands that may decode landed records: the Python UDF workers are started beside them
WARM_COMMANDS = {"build", "run"}
WARM_JOB_GROUP = "changelake-warm-udf-workers"

# One row per worker slot through the decode UDF; a null value is a tombstone (no change, no
# error).
_WARM_QUERY = """
select count(decoded)
from (
    select
        changelake_decode(
            'debezium', cast(null as string), cast(null as string), cast(null as array<string>)
        ) as decoded
    from range(0, {slots}, 1, {slots})
) as warm
"""


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
        self.remote: str | None = None

    def start(self, home: Path, profiles_dir: Path, target_name: str | None) -> Any:
        if self.session is not None:
            return self.session
        os.environ["CHANGELAKE_STATE_DIR"] = str(runtime.state_dir(home))
        target = runtime.load_target(profiles_dir, target_name)
        self.remote = target.remote
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

    def warm_python_workers(self) -> threading.Thread | None:
        """Start the Python UDF workers beside dbt's start (parsing, the run's start hook) in a
        background thread; the thread, or None where there is nothing to start.

        Spark keeps an idle Python worker for one minute (a constant of its worker factory), so
        a build run every few minutes finds none: the first decoded models' inserts each waited
        for new workers (a fork of the daemon, then pyarrow, pandas and the decoders imported
        and the UDF unpickled). Run here, on a session of this process (not Spark Connect,
        whose workers are the server's), that start overlaps dbt's own, and the inserts take
        the workers from Spark's idle pool. It reads and writes no table; a failure here is
        only reported, and left for the models to meet.
        """
        session = self.session
        if session is None or self.remote:
            return None

        def warm() -> None:
            try:
                context = session.sparkContext
                context.setJobGroup(WARM_JOB_GROUP, "changelake: Python UDF workers started")
                session.sql(_WARM_QUERY.format(slots=max(1, context.defaultParallelism))).collect()
            except Exception as exc:  # the models meet and report any real fault
                runtime.log(f"starting the Python UDF workers ahead of the decode failed: {exc}")

        thread = threading.Thread(target=warm, name="changelake-warm-udf-workers", daemon=True)
        thread.start()
        return thread

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
    if not sys.stdout.isatty():
        os.environ.setdefault("DBT_USE_COLORS", "false")  # no colour codes in redirected logs
    full = with_defaults(args, home)
    if _subcommand(full) not in (None, "--version", "--help", "-h", "init"):
        # the dbt files of the configured feeds and typed tables, before dbt reads the project
        for change in models.sync(home, dbt_args=full):
            runtime.log(change)
    if _subcommand(full) not in NO_SPARK_COMMANDS:
        profiles = _option(full, "--profiles-dir") or os.environ["DBT_PROFILES_DIR"]
        target = _option(full, "--target", "-t") or os.environ.get("DBT_TARGET")
        if target is None and RUNTIME.session is None and not os.environ.get("CHANGELAKE_TARGET"):
            target = _local_server_target(home)
        RUNTIME.start(home, Path(profiles), target)
    warming = RUNTIME.warm_python_workers() if _subcommand(full) in WARM_COMMANDS else None
    result = dbtRunner().invoke(full)
    if warming is not None:
        warming.join()
    if RUNTIME.session is not None:
        runtime.release_finished_query_jobs(RUNTIME.session)
    if result.exception is not None:
        # dbt's own CLI prints usage errors and crashes; in-process they come back as objects.
        runtime.log(f"dbt: {type(result.exception).__name__}: {result.exception}")
        return 2, result
    return (0 if result.success else 1), result


def _local_server_target(home: Path) -> str | None:
    """'connect' when `changelake server start` has a server running on this project's state
    (dbt and the session then use it), else None (the profile's default target)."""
    server = running(home)
    if server is None:
        return None
    os.environ["CHANGELAKE_TARGET"] = "connect"
    os.environ["CHANGELAKE_SPARK_REMOTE"] = server["remote"]
    runtime.log(f"using the local server on {server['remote']} (`changelake server stop` ends it)")
    return "connect"


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
    models.sync(home)
    paths = feed_paths(home)
    if feed not in paths:
        raise runtime.ChangeLakeError(
            f"no feed {feed!r} configured (seeds/changelake.yml, and the demo's while "
            f"changelake_demo is on); feeds: {', '.join(sorted(paths))}"
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
